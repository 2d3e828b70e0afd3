/**
 * Replaces the user-info part of a URL (`redis://user:password@host` →
 * `redis://[credentials]@host`) so the URL can be printed or logged. Strings without user info
 * come back unchanged.
 *
 * @example
 * maskUrlCredentials('rediss://:s3cret@redis:6380/0') // 'rediss://[credentials]@redis:6380/0'
 */
export function maskUrlCredentials(url: string): string {
  return url.replace(/\/\/([^@/]*)@/, '//[credentials]@');
}
