import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { isSafeRequestPath } from '../../proxy/routes.js';
import { deny } from '../deny.js';
import { isHttps } from '../forwarded.js';
import { assertBoolean, assertFunction } from '../option-checks.js';

export interface TransportGuardOptions {
  /** Refuse plain HTTP (own socket not TLS and no trusted `X-Forwarded-Proto: https`). */
  requireHttps: boolean;
  /** Refuse requests with browser markers (`Origin`, `Sec-Fetch-Mode: cors`). */
  refuseBrowserRequests: boolean;
  /** Flags a key in a refused URL (see `createKeyInUrlNotes`). */
  checkAndNoteKeyInUrl: (req: IncomingMessage) => boolean;
}

/**
 * Step 5, transport rules: an unsafe path (dot segments, `//`, backslash, NUL, absolute-form) →
 * 400 `BAD_REQUEST` (connection closed); plain HTTP when HTTPS is required → 403 `HTTPS_REQUIRED`;
 * a browser caller when refused → 403 `BROWSER_REQUEST` (threat model: T2, T6, and T1: a key in a
 * browser page is exposed to whoever views it). Needs `req.gw`.
 *
 * @example
 * const transportGuard = createTransportGuard({ requireHttps: false, refuseBrowserRequests: true, checkAndNoteKeyInUrl });
 */
export function createTransportGuard(opts: TransportGuardOptions): RequestHandler {
  assertBoolean(opts.requireHttps, 'requireHttps');
  assertBoolean(opts.refuseBrowserRequests, 'refuseBrowserRequests');
  assertFunction(opts.checkAndNoteKeyInUrl, 'checkAndNoteKeyInUrl');
  const { requireHttps, refuseBrowserRequests, checkAndNoteKeyInUrl } = opts;
  return function transportGuard(req, res, next) {
    const url = req.url;
    const q = url.indexOf('?');
    if (!isSafeRequestPath(q === -1 ? url : url.slice(0, q))) {
      // A refused path must not hide that a key was exposed.
      checkAndNoteKeyInUrl(req);
      return deny(req, res, 'BAD_REQUEST');
    }
    if (requireHttps && !isHttps(req)) return deny(req, res, 'HTTPS_REQUIRED');
    if (refuseBrowserRequests && isBrowserRequest(req)) return deny(req, res, 'BROWSER_REQUEST');
    next();
  };
}

function isBrowserRequest(req: IncomingMessage): boolean {
  const mode = req.headers['sec-fetch-mode'];
  return req.headers.origin !== undefined || (typeof mode === 'string' && mode.toLowerCase() === 'cors');
}
