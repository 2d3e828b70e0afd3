import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { UrlKeyCheck } from '../../guards/url-key-guard.js';
import { deny } from '../deny.js';
import { assertFunction } from '../option-checks.js';

export interface UrlKeyGuardOptions {
  /** The URL key guard (`createUrlKeyGuard(paramNames)`). */
  checkUrlForKey: (url: string) => UrlKeyCheck;
  /**
   * Records the key in the URL and counts the failure (see `createKeyInUrlNotes`): 0, or the
   * seconds the address must wait when its failed-authentication budget is used.
   */
  noteKeyInUrl: (req: IncomingMessage, candidates: string[]) => number;
}

/**
 * Step 7 (threat model: T1, T2), a key in the URL is refused, never forwarded: 401 `KEY_IN_URL`
 * (one failed authentication of the address's budget, counted before answering), or 429
 * `AUTH_RATE_LIMITED` with `Retry-After` when the address has used its budget. Either way the key is
 * noted. A URL parameter that overrides the method (`_method=DELETE`) is refused 400
 * `METHOD_OVERRIDE_IN_URL`. Needs `req.gw`. (Named `…Step` apart from `createUrlKeyGuard` in
 * src/guards, the pure check it runs.)
 *
 * @example
 * const urlKeyGuard = createUrlKeyGuardStep({ checkUrlForKey, noteKeyInUrl });
 */
export function createUrlKeyGuardStep(opts: UrlKeyGuardOptions): RequestHandler {
  assertFunction(opts.checkUrlForKey, 'checkUrlForKey');
  assertFunction(opts.noteKeyInUrl, 'noteKeyInUrl');
  const { checkUrlForKey, noteKeyInUrl } = opts;
  return function urlKeyGuard(req, res, next) {
    const found = checkUrlForKey(req.url);
    // Past the guard's caps the URL was not read to the end: refused, and its path never logged.
    if (!found.found && found.overLimit) req.gw.keyInUrl = true;
    if (!found.found) {
      if (found.overLimit) return deny(req, res, 'BAD_REQUEST');
      req.gw.urlGuardPassed = true;
      // `_method=DELETE` would make the upstream run another method than the one the key's scope allowed.
      return found.methodOverride ? deny(req, res, 'METHOD_OVERRIDE_IN_URL') : next();
    }
    // Keys in URLs count against the same per-address budget as bad header keys.
    const wait = noteKeyInUrl(req, found.candidates);
    if (wait > 0) {
      req.gw.denyReason = 'auth_failures';
      res.setHeader('Retry-After', String(wait));
      return deny(req, res, 'AUTH_RATE_LIMITED');
    }
    deny(req, res, 'KEY_IN_URL');
  };
}
