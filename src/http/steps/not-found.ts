import type { RequestHandler } from 'express';
import { deny } from '../deny.js';

/**
 * Anything no step answered: 404 `NOT_FOUND`. Needs `req.gw`.
 *
 * @example
 * app.use(createNotFound());
 */
export function createNotFound(): RequestHandler {
  return function notFound(req, res) {
    deny(req, res, 'NOT_FOUND');
  };
}
