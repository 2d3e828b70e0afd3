/**
 * Masking of secrets in everything the gateway prints: URLs with user info, config values that
 * are secrets, and key material in free text. Pure functions, no dependencies.
 */

const MASK = '[credentials]';

/**
 * Replaces the user-info part of a URL (`redis://user:password@host` →
 * `redis://[credentials]@host`) so the URL can be printed or logged; scheme, host, port, path and
 * query are kept as written. Strings without `@` come back unchanged.
 *
 * Everything from the authority's start (after `scheme:` and its slashes) to the LAST `@` of the
 * string is masked. For a well-formed URL that is exactly the user info the WHATWG parser finds
 * (it also splits at the authority's last `@`, so `p@ss`, `pa:ss` and `p%40ss` are masked whole).
 * An `@` further right is masked up to as well, on purpose: `redis://u:1234/cd@h` parses as host
 * `u`, port `1234` and path `/cd@h`, so a parser-based mask would print the password `1234/cd`,
 * and `redis://:ab/cd@h` does not parse at all. The price is that a URL with `@` in its path or
 * query (`http://b/users/a@x`) is over-masked: better than printing a password.
 *
 * @example
 * maskUrlCredentials('rediss://:s3cret@redis:6380/0') // 'rediss://[credentials]@redis:6380/0'
 * maskUrlCredentials('redis://:ab/cd@h:6379')         // 'redis://[credentials]@h:6379'
 */
export function maskUrlCredentials(url: string): string {
  const at = url.lastIndexOf('@');
  if (at < 0) return url;
  // The authority starts after `scheme:` and its slashes (`\` counts as `/` for http(s), as in WHATWG).
  const scheme = /^[\0-\x20]*[A-Za-z][A-Za-z0-9+.-]*:/.exec(url);
  let start = scheme ? scheme[0].length : 0;
  while (start < at && (url[start] === '/' || url[start] === '\\')) start++;
  return url.slice(0, start) + MASK + url.slice(at);
}

/**
 * Masks the user info of every URL-like token (`scheme://…` up to the next whitespace) in free
 * text: error messages from below (Redis, Node, zod) may quote the URL they failed on.
 *
 * @example
 * maskUrlsInText('connect to redis://:pw@h:1 failed') // 'connect to redis://[credentials]@h:1 failed'
 */
export function maskUrlsInText(text: string): string {
  if (!text.includes('@')) return text;
  return text.replace(/[A-Za-z][A-Za-z0-9+.-]*:\/\/\S*/g, (token) => maskUrlCredentials(token));
}

/**
 * Masks anything in free text that could be an API key or a key hash, so a message quoting what
 * failed can be logged.
 *
 * @example
 * maskKeyMaterial(`bad entry ${'a'.repeat(64)}`) // 'bad entry [hash]'
 */
export function maskKeyMaterial(text: string): string {
  return text.replace(/[0-9a-fA-F]{64}/g, '[hash]').replace(/nk_[a-z0-9]+_[0-9A-Za-z]+/g, '[key]');
}

const URL_START = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
/** Config keys whose values are secrets, whatever their section: shown as `[set]`. */
const SECRET_KEY = /token|secret|password|passphrase|credential/i;

/**
 * A copy of a config (or any JSON-like value) safe to print: values of secret-named keys
 * (`admin.token`, `signing.secret`, any `password`/`passphrase`) become `[set]`, and every string
 * holding `://` has its URL credentials masked, wherever it sits (`store.redis.url`,
 * `rateLimit.redisUrl`, `routes[].target`, settings added later).
 *
 * @example
 * redactConfig({ admin: { token: 'x'.repeat(20) } }) // { admin: { token: '[set]' } }
 */
export function redactConfig<T>(value: T): T {
  return redactValue(value, false) as T;
}

function redactValue(value: unknown, secret: boolean): unknown {
  if (typeof value === 'string') {
    if (secret) return value === '' ? value : '[set]';
    if (!value.includes('://')) return value;
    // A whole value that is a URL is masked as one (its password may hold spaces).
    return URL_START.test(value) ? maskUrlCredentials(value) : maskUrlsInText(value);
  }
  if (Array.isArray(value)) return value.map((v) => redactValue(v, secret));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, redactValue(v, secret || SECRET_KEY.test(k))]),
    );
  }
  return value;
}
