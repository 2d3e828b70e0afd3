import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { methodRuleOf } from '../../proxy/routes.js';
import { deny } from '../deny.js';
import { assertFunction } from '../option-checks.js';
import { pathOf } from '../request-url.js';

export interface RouteMatchOptions {
  /** The route matcher (`createRouteMatcher(routes)`): the matched route, or null. */
  matchRoute: (path: string) => { prefix: string; methods?: readonly string[] | undefined } | null;
  /** Flags a key in an unrouted URL (see `createKeyInUrlNotes`). */
  checkAndNoteKeyInUrl: (req: IncomingMessage) => boolean;
}

/**
 * Step 6, route match: sets `req.gw.route` to the matched prefix; no route → 404 `NOT_FOUND`; a
 * method the route does not forward (its `methods`, or the default list; `GET` implies `HEAD`) →
 * 405 `METHOD_NOT_ALLOWED` with `Allow` — before any key lookup or quota. Needs `req.gw`.
 *
 * @example
 * const routeMatch = createRouteMatch({ matchRoute: createRouteMatcher(config.routes), checkAndNoteKeyInUrl });
 */
export function createRouteMatch(opts: RouteMatchOptions): RequestHandler {
  assertFunction(opts.matchRoute, 'matchRoute');
  assertFunction(opts.checkAndNoteKeyInUrl, 'checkAndNoteKeyInUrl');
  const { matchRoute, checkAndNoteKeyInUrl } = opts;
  return function routeMatch(req, res, next) {
    const route = matchRoute(pathOf(req.url));
    if (!route) {
      checkAndNoteKeyInUrl(req);
      return deny(req, res, 'NOT_FOUND');
    }
    req.gw.route = route.prefix;
    const rule = methodRuleOf(route);
    if (!rule.allows(req.method)) {
      checkAndNoteKeyInUrl(req);
      res.setHeader('Allow', rule.allow);
      return deny(req, res, 'METHOD_NOT_ALLOWED');
    }
    next();
  };
}
