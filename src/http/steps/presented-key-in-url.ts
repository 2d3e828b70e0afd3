import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import {
  holdsSplitCopy,
  type KeyMaterialFinding,
  type KeyMaterialMatcher,
} from '../../proxy/key-material.js';
import { matcherFor } from '../../proxy/trusted-headers.js';
import { deny } from '../deny.js';
import { assertFunction } from '../option-checks.js';

export interface PresentedKeyInUrlOptions {
  /**
   * Records the key in the URL and counts the failure (see `createKeyInUrlNotes`): 0, or the
   * seconds the address must wait when its failed-authentication budget is used.
   */
  noteKeyInUrl: (req: IncomingMessage, candidates: string[]) => number;
}

/** Each request's matcher, built once here and read again by the forward step. */
const matchers = new WeakMap<IncomingMessage, KeyMaterialMatcher>();

/** The presented key's matcher built by the presented-key step, if it ran for `req`. */
export function presentedKeyMatcher(req: IncomingMessage): KeyMaterialMatcher | undefined {
  return matchers.get(req);
}

/**
 * Step 9, the presented key in the URL, right after authentication and before scopes, limits and
 * forwarding: the key is known now, so the URL is read with the key-material matcher (its secret
 * body alone, any case, separators, base64, hex, deep %-encoding; any other valid key), and for
 * the secret split into pieces over segments, matrix parameters and query names and values
 * (`holdsSplitCopy`: pieces of ≥ 8 characters covering 24, any order, after decoding). A find is
 * 401 `KEY_IN_URL` (429 `AUTH_RATE_LIMITED` with `Retry-After` when the address has just used its
 * failed-authentication budget), noted — counted, and the key flagged exposed — and its path never
 * logged, whatever a later step would have answered (403 scope, 429 limit); 400 when the URL's
 * escapes go deeper than the matcher reads. A clean URL is marked so the access line need not read
 * it again. Needs `req.gw` with the key.
 *
 * @example
 * const presentedKeyInUrl = createPresentedKeyInUrl({ noteKeyInUrl });
 */
export function createPresentedKeyInUrl(opts: PresentedKeyInUrlOptions): RequestHandler {
  assertFunction(opts.noteKeyInUrl, 'noteKeyInUrl');
  const { noteKeyInUrl } = opts;
  return function presentedKeyInUrl(req, res, next) {
    const st = req.gw;
    const m = matcherFor(req.headers);
    matchers.set(req, m); // the forward step scrubs headers with the same matcher
    let inUrl: KeyMaterialFinding | null = m.find(req.url);
    // The secret split over segments, matrix parameters, query names and values (any order).
    if (inUrl === null && holdsSplitCopy(m, req.url))
      inUrl = { keys: [String(req.headers['x-api-key'])], undecided: false };
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
