import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendError, type ErrorCode } from '../errors.js';
import '../request-state.js';

/**
 * Answers a request with a registry error and records the code in `req.gw.error` for the access log.
 * Needs `req.gw` (set by the request-context step). A refused request's body is never read, so the
 * connection is closed when a body may still be on its way, and after every malformed request.
 *
 * @example
 * if (!route) return deny(req, res, 'NOT_FOUND');
 */
export function deny(req: IncomingMessage, res: ServerResponse, code: ErrorCode): void {
  req.gw.error = code;
  // A refused request's body is never read: close the connection instead of draining it. A
  // malformed request closes it too (the client is confused about something).
  if (
    code === 'BAD_REQUEST' ||
    (!req.complete &&
      (req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined))
  ) {
    res.setHeader('Connection', 'close');
  }
  sendError(res, code);
}
