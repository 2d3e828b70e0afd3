import { KEY_LIKE_PATTERN } from './api-key.js';

const KEY_LIKE_GLOBAL = new RegExp(KEY_LIKE_PATTERN.source, 'g');
/** Double and triple %-encoding are undone too: `%2561pi_key` still names `api_key`. */
const MAX_DECODE_ROUNDS = 4;

export type UrlKeyCheck = { found: false } | { found: true; candidates: string[] };

/** Lowercases and drops everything but letters and digits: `X-API_Key`, `x.api.key` → `xapikey`. */
export function normaliseParamName(name: string): string {
  return decodeRepeatedly(name)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');
}

/**
 * Builds the URL guard: a request URL carries a key when a query parameter has a key-like name (any
 * case, separators or %-encoding) or any part of the URL holds a value shaped like one of our keys.
 * Returns the candidate key values so a caller can check whether a real key was exposed.
 *
 * @example
 * const check = createUrlKeyGuard(['api_key', 'token']);
 * check('/notify/v1/otps?API%5FKEY=abc') // { found: true, candidates: ['abc'] }
 */
export function createUrlKeyGuard(paramNames: readonly string[]): (url: string) => UrlKeyCheck {
  const names = new Set(paramNames.map(normaliseParamName));
  return function checkUrlForKey(url: string): UrlKeyCheck {
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const candidates: string[] = [];
    // Fast path: a plain path with no '%' and no 'nk_' cannot hide a key.
    if (path.includes('nk_') || path.includes('%')) collectKeyShaped(decodeRepeatedly(path), candidates);
    // Matrix parameters (`/x;api_key=...`, also %-encoded) are parameters too.
    if (path.includes(';') || path.includes('%')) {
      const decoded = decodeRepeatedly(path);
      const semi = decoded.indexOf(';');
      if (semi !== -1) checkPairs(decoded.slice(semi + 1).replace(/\//g, ';'), names, candidates);
    }
    if (q !== -1) checkPairs(url.slice(q + 1), names, candidates);
    return candidates.length ? { found: true, candidates } : { found: false };
  };
}

/** Checks `name=value` pairs separated by `&` or `;` (query strings and matrix parameters). */
function checkPairs(params: string, names: Set<string>, candidates: string[]): void {
  for (const pair of params.split(/[&;]/)) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawName = eq === -1 ? pair : pair.slice(0, eq);
    const value = eq === -1 ? '' : decodeRepeatedly(pair.slice(eq + 1));
    if (names.has(normaliseParamName(rawName))) candidates.push(value);
    else collectKeyShaped(value, candidates);
    // A key-shaped parameter *name* (`?nk_live_…`) is a key in the URL too.
    collectKeyShaped(decodeRepeatedly(rawName), candidates);
  }
}

function collectKeyShaped(text: string, out: string[]): void {
  if (!text.includes('nk_')) return;
  for (const m of text.matchAll(KEY_LIKE_GLOBAL)) out.push(m[0]);
}

/** %-decodes (and '+' → space) until stable; malformed escapes are left as they are. */
function decodeRepeatedly(s: string): string {
  let cur = s.includes('+') ? s.replace(/\+/g, ' ') : s;
  for (let i = 0; i < MAX_DECODE_ROUNDS && cur.includes('%'); i++) {
    let next: string;
    try {
      next = decodeURIComponent(cur);
    } catch {
      next = cur.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)));
    }
    if (next === cur) break;
    cur = next;
  }
  return cur;
}
