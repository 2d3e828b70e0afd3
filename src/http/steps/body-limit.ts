import type { RequestHandler } from 'express';
import { deny } from '../deny.js';
import { assertNonNegativeInteger } from '../option-checks.js';

export interface BodyLimitOptions {
  /** Largest request body in bytes; 0 = no limit. */
  bodyLimitBytes: number;
}

/**
 * Step 12, declared body size: a `Content-Length` over the limit → 413 `PAYLOAD_TOO_LARGE` before
 * anything is read (connection closed). Streamed (chunked) bodies are counted by the route proxy.
 * Needs `req.gw`.
 *
 * @example
 * const bodyLimit = createBodyLimit({ bodyLimitBytes: 26_214_400 });
 */
export function createBodyLimit(opts: BodyLimitOptions): RequestHandler {
  assertNonNegativeInteger(opts.bodyLimitBytes, 'bodyLimitBytes');
  const limit = opts.bodyLimitBytes;
  return function bodyLimit(req, res, next) {
    const cl = req.headers['content-length'];
    if (limit > 0 && cl !== undefined && Number(cl) > limit) return deny(req, res, 'PAYLOAD_TOO_LARGE');
    next();
  };
}
