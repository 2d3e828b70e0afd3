import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import type { KeyFinding, KeyMatcher } from '../../guards/key-material.js';
import { holdsSplitCopy } from '../../guards/strict-material.js';
import { deny } from '../deny.js';
import { assertFunction } from '../option-checks.js';

export interface PresentedKeyInUrlOptions {
  /** The presented key's matcher, kept on `req.gw` (`createKeyMatcherOf`). */
  keyMatcherOf: (req: IncomingMessage) => KeyMatcher;
  /**
   * Records the key in the URL and counts the failure (see `createKeyInUrlNotes`): 0, or the
   * seconds the address must wait when its failed-authentication budget is used.
   */
  noteKeyInUrl: (req: IncomingMessage, candidates: string[]) => number;
}

/**
 * Step 9, the presented key in the URL (threat model: T1), right after authentication and before
 * scopes, limits and forwarding: the key is known now, so the URL is read with its matcher (at the
 * default level: the key as sent, %-decoded or in base64; at the strict level also every deeper
 * form and the secret split over URL parts, `holdsSplitCopy`). A find is 401 `KEY_IN_URL` (429
 * `AUTH_RATE_LIMITED` with `Retry-After` when the address has just used its budget), noted (counted,
 * the key flagged exposed) and its path never logged, whatever a later step would have answered; 400
 * when the URL's escapes go deeper than the strict matcher reads. A clean URL is marked so the
 * access line need not read it again. Needs `req.gw` with the key.
 *
 * @example
 * const presentedKeyInUrl = createPresentedKeyInUrl({ keyMatcherOf, noteKeyInUrl });
 */
export function createPresentedKeyInUrl(opts: PresentedKeyInUrlOptions): RequestHandler {
  assertFunction(opts.keyMatcherOf, 'keyMatcherOf');
  assertFunction(opts.noteKeyInUrl, 'noteKeyInUrl');
  const { keyMatcherOf, noteKeyInUrl } = opts;
  return function presentedKeyInUrl(req, res, next) {
    const st = req.gw;
    const m = keyMatcherOf(req);
    let inUrl: KeyFinding | null = m.find(req.url);
    if (inUrl === null && holdsSplitCopy(m, req.url)) inUrl = { keys: [m.key], undecided: false };
    if (inUrl === null) {
      st.urlHoldsNoPresentedKey = true;
      return next();
    }
    st.keyInUrl = true; // never logged
    if (inUrl.undecided) return deny(req, res, 'BAD_REQUEST');
    const wait = noteKeyInUrl(req, inUrl.keys);
    if (wait > 0) {
      st.denyReason = 'auth_failures';
      res.setHeader('Retry-After', String(wait));
      return deny(req, res, 'AUTH_RATE_LIMITED');
    }
    deny(req, res, 'KEY_IN_URL');
  };
}
