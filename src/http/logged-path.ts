import type { IncomingMessage } from 'node:http';
import { parseApiKey } from '../auth/api-key.js';
import type { UrlKeyCheck } from '../auth/url-key-guard.js';
import { createKeyMaterialMatcher, holdsSplitCopy } from '../proxy/key-material.js';
import type { RequestState } from '../request-state.js';
import { pathOf } from './request-url.js';

/** What the access line shows instead of a path that carried key material. */
export const REDACTED_PATH = '[redacted: key in URL]';

export interface LoggedPathOptions {
  /** The URL key guard (`createUrlKeyGuard`): key-named matrix parameters, key shapes, bare bodies, base64/hex keys. */
  checkUrlForKey?: (url: string) => UrlKeyCheck;
  /** `keys.maxLength`: a longer `X-API-Key` is no key (never read here). */
  keyMaxLength: number;
  /** `keys.acceptLegacyFormat`: a legacy-format `X-API-Key` counts as a key whose copies are redacted. */
  acceptLegacyKeys: boolean;
}

/**
 * The one rule for a URL the gateway logs (the access line's `path`; the query is never logged),
 * whatever the request's outcome and wherever it stopped: the path, or REDACTED_PATH when
 * - a step saw a key in the URL, or a URL past the guard's caps (`req.gw.keyInUrl`);
 * - the URL key guard finds anything in the path (a key-named matrix parameter, a key shape, a
 *   bare key body, a checksum-valid key or body in base64 or hex), whatever the key header, when no step ran it to the end already (`urlGuardPassed`): answers such as
 *   403 `HTTPS_REQUIRED` come before the guard;
 * - the path holds material of the key presented in `X-API-Key` (the forward step's matcher: the
 *   secret body alone, any case, separators, base64, hex...), when the presented-key step did not
 *   read it already (`urlHoldsNoPresentedKey`): a missing, unknown or refused key (401, 403, 429
 *   before or after the lookup), also split into pieces over segments and parameters; and of a key
 *   inside a malformed key header (`presentedKeyCandidates`: sent twice, `Bearer K`, K followed by
 *   junk or too long, only in `Authorization: Bearer` or `X_API_KEY`). A checksum typo counts; a
 *   value without a key shape or 38-character base62 run has no material.
 * Cost, only for requests that stopped before those steps: one guard pass over the path (linear,
 * see docs/security.md) and one matcher pass per candidate (linear, at most 4 candidates of at most
 * 256 characters each read). Never throws.
 *
 * @example
 * const loggedPath = createLoggedPath({ checkUrlForKey, keyMaxLength: 256, acceptLegacyKeys: false });
 * loggedPath(req, req.gw) // '/notify/v1/otps' or '[redacted: key in URL]'
 */
export function createLoggedPath(
  opts: LoggedPathOptions,
): (req: IncomingMessage, st: RequestState) => string {
  const { checkUrlForKey, keyMaxLength, acceptLegacyKeys } = opts;
  const keyFormat = { maxLength: keyMaxLength, acceptLegacy: acceptLegacyKeys };
  return function loggedPath(req, st) {
    if (st.keyInUrl) return REDACTED_PATH;
    const path = pathOf(req.url ?? '');
    if (checkUrlForKey && !st.urlGuardPassed) {
      const found = checkUrlForKey(path);
      if (found.found || found.overLimit) return REDACTED_PATH;
    }
    if (!st.urlHoldsNoPresentedKey) {
      for (const key of presentedKeyCandidates(req, keyFormat)) {
        const m = createKeyMaterialMatcher(key);
        if (m.holds(path) || holdsSplitCopy(m, path)) return REDACTED_PATH;
      }
    }
    return path;
  };
}

/** Key headers read for candidates: `X-API-Key` (also sent twice), the underscore spelling, Bearer credentials. */
const KEY_HEADERS = ['x-api-key', 'x_api_key', 'authorization'];
/** Characters of a header value read for candidates: a key followed by junk is still found. */
const CANDIDATE_READ = 256;
/** Candidates per request: each costs one matcher pass over the path. */
const MAX_CANDIDATES = 4;
/** A key shape (the secret is its body: the checksum is not required) or a bare 38-character base62 run. */
const KEY_SHAPE_IN_VALUE = /nk_[a-z][a-z0-9]{1,15}_[0-9A-Za-z]{38}|(?<![0-9A-Za-z])[0-9A-Za-z]{38}/g;

/**
 * The keys whose material the logged path must not hold: the `X-API-Key` value when it is shaped
 * like a key (a checksum typo included; a legacy key when accepted), and, from a malformed key
 * header, the key shapes (`nk_<env>_` + 38 base62, checksum not checked) and bare 38-character
 * base62 runs (read as a body) in the first 256 characters of `X-API-Key` (sent twice: `K, K`;
 * `Bearer K`; K followed by junk or over `keys.maxLength`), `X_API_KEY` and `Authorization`.
 * At most 4, deduplicated: the work is capped whatever the headers hold.
 */
function presentedKeyCandidates(
  req: IncomingMessage,
  keyFormat: { maxLength: number; acceptLegacy: boolean },
): string[] {
  const out = new Set<string>();
  for (const name of KEY_HEADERS) {
    const header = req.headers[name];
    if (header === undefined) continue;
    for (const v of Array.isArray(header) ? header : [header]) {
      if (v === '') continue;
      if (name === 'x-api-key' && v.length <= keyFormat.maxLength) {
        const parsed = parseApiKey(v, keyFormat);
        if (parsed.ok || parsed.reason === 'checksum') {
          out.add(v);
          continue;
        }
      }
      const read = v.slice(0, CANDIDATE_READ);
      KEY_SHAPE_IN_VALUE.lastIndex = 0;
      for (let m = KEY_SHAPE_IN_VALUE.exec(read); m !== null; m = KEY_SHAPE_IN_VALUE.exec(read)) {
        out.add(m[0].startsWith('nk_') ? m[0] : `nk_live_${m[0]}`);
        if (out.size >= MAX_CANDIDATES) return [...out];
      }
    }
  }
  return [...out];
}
