import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { UrlKeyCheck } from '../../auth/url-key-guard.js';
import type { AuthFailureLimiter } from '../../ratelimit/tier-limiter.js';
import { deny } from '../deny.js';
import { assertFunction } from '../option-checks.js';

export interface UrlKeyGuardOptions {
  /** The URL key guard (`createUrlKeyGuard(paramNames)`). */
  checkUrlForKey: (url: string) => UrlKeyCheck;
  /** Records the key in the URL (see `createKeyInUrlNotes`). */
  noteKeyInUrl: (req: IncomingMessage, candidates: string[]) => void;
  /** Per-address failed-authentication budget; `null` when disabled. */
  authFailures: Pick<AuthFailureLimiter, 'blockedFor'> | null;
}

/**
 * Step 6, a key in the URL is refused, never forwarded: 401 `KEY_IN_URL`, or 429
 * `AUTH_RATE_LIMITED` with `Retry-After` when the address has used its failed-authentication
 * budget. Either way the key is noted. Needs `req.gw`. (Named `…Step` apart from
 * `createUrlKeyGuard` in src/auth, the pure check it runs.)
 *
 * @example
 * const urlKeyGuard = createUrlKeyGuardStep({ checkUrlForKey, noteKeyInUrl, authFailures });
 */
export function createUrlKeyGuardStep(opts: UrlKeyGuardOptions): RequestHandler {
  assertFunction(opts.checkUrlForKey, 'checkUrlForKey');
  assertFunction(opts.noteKeyInUrl, 'noteKeyInUrl');
  if (opts.authFailures !== null) assertFunction(opts.authFailures?.blockedFor, 'authFailures.blockedFor');
  const { checkUrlForKey, noteKeyInUrl, authFailures } = opts;
  return async function urlKeyGuard(req, res, next) {
    const found = checkUrlForKey(req.url);
    // Past the guard's caps the URL was not read to the end: refused, and its path never logged.
    if (!found.found && found.overLimit) req.gw.keyInUrl = true;
    if (!found.found) return found.overLimit ? deny(req, res, 'BAD_REQUEST') : next();
    // Keys in URLs count against the same per-address budget as bad header keys.
    const wait = (await authFailures?.blockedFor(req.gw.clientIp)) ?? 0;
    noteKeyInUrl(req, found.candidates);
    if (wait > 0) {
      req.gw.denyReason = 'auth_failures';
      res.setHeader('Retry-After', String(wait));
      return deny(req, res, 'AUTH_RATE_LIMITED');
    }
    deny(req, res, 'KEY_IN_URL');
  };
}
