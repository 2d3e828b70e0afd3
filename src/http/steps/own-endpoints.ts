import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { assertFunction } from '../option-checks.js';
import { pathOf } from '../request-url.js';

export interface OwnEndpointsOptions {
  /** Readiness of the instance (answered by `/readyz`, status only: the checks are the admin port's). */
  ready: () => Promise<{ ok: boolean; status?: string }>;
  /** Flags a key sent in a probe's query (see `createKeyInUrlNotes`). */
  checkAndNoteKeyInUrl: (req: IncomingMessage) => boolean;
}

/**
 * Step 4, the gateway's own endpoints, no key needed: `GET|HEAD /healthz` answers 200
 * `{status: 'ok'}`; `GET|HEAD /readyz` answers 200 (`ready`, `degraded`) or 503 (`starting`,
 * `draining`, `not ready`) with `{status}` only: which internal checks failed is no business of
 * a public client (the admin port's `/readyz` lists them). Any other request goes on. A rejected
 * `ready()` goes to the error handler.
 *
 * @example
 * const ownEndpoints = createOwnEndpoints({ ready: async () => ({ ok: true, checks: {} }), checkAndNoteKeyInUrl });
 */
export function createOwnEndpoints(opts: OwnEndpointsOptions): RequestHandler {
  assertFunction(opts.ready, 'ready');
  assertFunction(opts.checkAndNoteKeyInUrl, 'checkAndNoteKeyInUrl');
  const { ready, checkAndNoteKeyInUrl } = opts;
  return async function ownEndpoints(req, res, next) {
    const url = req.url;
    if (url.charCodeAt(1) !== 104 && url.charCodeAt(1) !== 114) return next(); // fast path: not /h… or /r…
    const path = pathOf(url);
    if (path !== '/healthz' && path !== '/readyz') return next();
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    if (path.length !== url.length) checkAndNoteKeyInUrl(req); // probes need no query; flag a key if one came
    if (path === '/healthz') return void res.json({ status: 'ok' });
    const r = await ready();
    res.status(r.ok ? 200 : 503).json({ status: r.status ?? (r.ok ? 'ready' : 'not ready') });
  };
}
