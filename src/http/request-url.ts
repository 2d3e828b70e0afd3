/**
 * The path part of a request target: everything before the first `?`. Never decodes and never
 * throws (it runs before authentication, on untrusted input).
 *
 * @example
 * pathOf('/notify/v1/otps?x=1') // '/notify/v1/otps'
 */
export function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
