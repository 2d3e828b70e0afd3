import type { ErrorRequestHandler } from 'express';
import { ERRORS, GatewayError, safeMessage, sendError, type ErrorCode } from '../../errors.js';
import type { Logger } from '../../observability/logger.js';
import { deny } from '../deny.js';
import { assertFunction } from '../option-checks.js';

export interface ErrorHandlerOptions {
  logger: Logger;
}

/**
 * The last stop for errors: a `GatewayError` answers its own code (logged at warn when 5xx); a
 * body-parser style 4xx answers 400 `BAD_REQUEST`; anything else answers 500 `INTERNAL` and is
 * logged with a masked message — never a stack or a message from below in the body. After headers
 * were sent, the response is destroyed instead. Works without `req.gw` too.
 *
 * @example
 * app.use(createErrorHandler({ logger }));
 */
export function createErrorHandler(opts: ErrorHandlerOptions): ErrorRequestHandler {
  assertFunction(opts.logger?.error, 'logger.error');
  const { logger } = opts;
  return function errorHandler(err, req, res, _next) {
    const known = err instanceof GatewayError;
    const parserStatus = !known && typeof err?.status === 'number' && err.status >= 400 && err.status < 500;
    const code: ErrorCode = known ? err.code : parserStatus ? 'BAD_REQUEST' : 'INTERNAL';
    if (!known)
      logger.error(
        { err: { message: safeMessage(err), type: err?.name }, requestId: req.gw?.id },
        'unhandled error',
      );
    else if (ERRORS[code].status >= 500)
      logger.warn(
        { code, cause: err.cause === undefined ? undefined : safeMessage(err.cause), requestId: req.gw?.id },
        err.message,
      );
    if (res.headersSent) return void res.destroy();
    if (req.gw) deny(req, res, code);
    else sendError(res, code);
  };
}
