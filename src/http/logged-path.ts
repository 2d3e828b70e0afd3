import type { IncomingMessage } from 'node:http';
import type { KeyMatcher } from '../guards/key-material.js';
import { holdsSplitCopy } from '../guards/strict-material.js';
import type { UrlKeyCheck } from '../guards/url-key-guard.js';
import type { RequestState } from '../request-state.js';
import { pathOf } from './request-url.js';

/** What the access line shows instead of a path that carried key material. */
export const REDACTED_PATH = '[redacted: key in URL]';

export interface LoggedPathOptions {
  /** The URL key guard: key-named matrix parameters, key shapes (strict: every form it reads). */
  checkUrlForKey: (url: string) => UrlKeyCheck;
  /** The presented key's matcher, kept on `req.gw` (`createKeyMatcherOf`). */
  keyMatcherOf: (req: IncomingMessage) => KeyMatcher;
}

/**
 * The one rule for a URL the gateway logs (the access line's `path`; the query is never logged),
 * whatever the request's outcome (threat model: T1, T5): the path, or REDACTED_PATH when a
 * step saw a key in the URL or a URL past the guard's caps (`req.gw.keyInUrl`); when the URL key
 * guard finds anything in the path and no step ran it to the end (`urlGuardPassed`: answers such as
 * 403 `HTTPS_REQUIRED` come before the guard); when the path holds material of the key the request
 * presents (its matcher; at the strict level also split over segments) and the presented-key step
 * did not read it (`urlHoldsNoPresentedKey`: a missing, unknown or refused key). Cost, only for
 * requests that stopped before those steps: one guard pass and one matcher pass over the path.
 *
 * @example
 * const loggedPath = createLoggedPath({ checkUrlForKey, keyMatcherOf });
 * loggedPath(req, req.gw) // '/notify/v1/otps' or '[redacted: key in URL]'
 */
export function createLoggedPath(
  opts: LoggedPathOptions,
): (req: IncomingMessage, st: RequestState) => string {
  const { checkUrlForKey, keyMatcherOf } = opts;
  return function loggedPath(req, st) {
    if (st.keyInUrl) return REDACTED_PATH;
    const path = pathOf(req.url ?? '');
    if (!st.urlGuardPassed) {
      const found = checkUrlForKey(path);
      if (found.found || found.overLimit) return REDACTED_PATH;
    }
    if (!st.urlHoldsNoPresentedKey) {
      const m = keyMatcherOf(req);
      // With no presented key the matcher finds key shapes only, which the URL key guard has read.
      if (m.key !== '' && (m.holds(path) || holdsSplitCopy(m, path))) return REDACTED_PATH;
    }
    return path;
  };
}
