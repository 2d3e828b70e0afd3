import type { IncomingMessage } from 'node:http';
import { parseApiKey } from '../auth/api-key.js';
import type { UrlKeyCheck } from '../auth/url-key-guard.js';
import { createKeyMaterialMatcher } from '../proxy/key-material.js';
import type { RequestState } from '../request-state.js';
import { pathOf } from './request-url.js';

/** What the access line shows instead of a path that carried key material. */
export const REDACTED_PATH = '[redacted: key in URL]';

export interface LoggedPathOptions {
  /** The URL key guard (`createUrlKeyGuard`): key-named matrix parameters, key shapes, bare bodies. */
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
 *   bare key body), when no step ran it to the end already (`urlGuardPassed`): answers such as
 *   403 `HTTPS_REQUIRED` come before the guard;
 * - the path holds material of the key presented in `X-API-Key` (the forward step's matcher: the
 *   secret body alone, any case, separators, base64, hex...), when the presented-key step did not
 *   read it already (`urlHoldsNoPresentedKey`): a missing, unknown or refused key (401, 403, 429
 *   before or after the lookup). A value that is not shaped like a key (`parseApiKey` says
 *   malformed or too long) has no material; a checksum typo still counts.
 * Cost, only for requests that stopped before those steps: one guard pass over the path (linear,
 * see docs/security.md) and one matcher pass (linear, ≤ keys.maxLength for the key). Never throws.
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
      const raw = req.headers['x-api-key'];
      if (typeof raw === 'string' && raw !== '' && raw.length <= keyMaxLength) {
        const parsed = parseApiKey(raw, keyFormat);
        if ((parsed.ok || parsed.reason === 'checksum') && createKeyMaterialMatcher(raw).holds(path))
          return REDACTED_PATH;
      }
    }
    return path;
  };
}
