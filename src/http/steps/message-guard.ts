import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { methodRuleOf, REFUSED_METHODS, type MethodRule } from '../../proxy/routes.js';
import { deny } from '../deny.js';
import { assertFunction } from '../option-checks.js';
import { pathOf } from '../request-url.js';

export interface MessageGuardOptions {
  /** The route matcher: a refused method's `Allow` lists the matched route's methods. */
  matchRoute: (path: string) => { methods?: readonly string[] | undefined } | null;
  /** Flags a key in a refused URL (see `createKeyInUrlNotes`). */
  checkAndNoteKeyInUrl: (req: IncomingMessage) => boolean;
}

/**
 * `uri-host [":" port]` (RFC 9110 §7.2, RFC 3986 §3.2.2), stricter than the RFC: an IP literal or a
 * name of letters, digits, `.`, `-`, `_` and `~`; no userinfo (`@`), no spaces, commas or
 * %-escapes, a port of 1–5 digits. Linear (no nested quantifiers).
 */
const HOST_PATTERN = /^(?:\[[0-9A-Fa-f:.]{2,45}\]|[A-Za-z0-9._~-]{1,253})(?::[0-9]{1,5})?$/;

/**
 * Step 3, the HTTP message itself, before anything looks at the path or the key (INVARIANTS #11):
 * - `TRACE`, `TRACK`, `CONNECT` → 405 `METHOD_NOT_ALLOWED` with `Allow` (the matched route's
 *   methods, or the default list). Node answers `CONNECT` itself before the app (server.ts), and
 *   refuses `TRACK` in its parser (server.ts maps that to 405 as well): both are checked here too,
 *   for apps served by another server.
 * - more than one `Host` line, or a `Host` value that is not `uri-host [":" port]` → 400
 *   `BAD_REQUEST` (RFC 9112 §3.2), connection closed. (Node keeps the first of repeated `Host`
 *   lines in `req.headers`, so the raw list is counted.)
 * Cost: one pass over the raw header names (length check first), one linear regex. Needs `req.gw`.
 *
 * @example
 * const messageGuard = createMessageGuard({ matchRoute: createRouteMatcher(config.routes), checkAndNoteKeyInUrl });
 */
export function createMessageGuard(opts: MessageGuardOptions): RequestHandler {
  assertFunction(opts.matchRoute, 'matchRoute');
  assertFunction(opts.checkAndNoteKeyInUrl, 'checkAndNoteKeyInUrl');
  const { matchRoute, checkAndNoteKeyInUrl } = opts;
  const defaultRule: MethodRule = methodRuleOf({});
  return function messageGuard(req, res, next) {
    if (REFUSED_METHODS.has(req.method)) {
      checkAndNoteKeyInUrl(req);
      const route = matchRoute(pathOf(req.url));
      res.setHeader('Allow', (route ? methodRuleOf(route) : defaultRule).allow);
      return deny(req, res, 'METHOD_NOT_ALLOWED');
    }
    if (!hasOneValidHost(req)) {
      checkAndNoteKeyInUrl(req);
      return deny(req, res, 'BAD_REQUEST');
    }
    next();
  };
}

/**
 * Exactly one `Host` line with a valid value; none at all only for HTTP/1.0 (Node refuses an
 * HTTP/1.1 request without `Host` itself: `requireHostHeader`).
 */
function hasOneValidHost(req: IncomingMessage): boolean {
  const raw = req.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  if (count === 0) return req.httpVersionMajor === 1 && req.httpVersionMinor === 0;
  return count === 1 && HOST_PATTERN.test(req.headers.host ?? '');
}
