import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import { TRACING_OFF, type Tracing } from '../../observability/tracing.js';
import { createHeaderScrubber, type TrustedHeaderNames } from '../../guards/header-scrub.js';
import type { KeyMatcher } from '../../guards/key-material.js';
import { isHttps, lastValue } from '../forwarded.js';
import { assertHeaderName } from '../option-checks.js';

/** A route's proxy (`createRouteProxy`): streams the request to the upstream and answers. */
export type RouteProxyHandler = (
  req: IncomingMessage,
  res: ServerResponse,
  next: (err?: unknown) => void,
  onAdmitted?: () => void,
) => unknown;

export interface ForwardOptions {
  /** Lowercase names of the trusted headers the gateway sets for the upstream. */
  headers: TrustedHeaderNames;
  /** More client headers to drop as untrusted (e.g. the signature header). */
  untrustedHeaders: readonly string[];
  /** Allow-list mode (`headers.allowFromClients`): only these client headers may pass; unset, all may. */
  allowedHeaders?: readonly string[];
  /** The presented key's matcher, kept on `req.gw` (`createKeyMatcherOf`). */
  keyMatcherOf: (req: IncomingMessage) => KeyMatcher;
  /** Each route's proxy by route prefix (the prefix routeMatch stored in `req.gw.route`). */
  proxies: ReadonlyMap<string, RouteProxyHandler>;
  /** The upstream call's span and its `traceparent` (OpenTelemetry); off by default. */
  tracing?: Tracing;
}

/**
 * Step 14, forward: replaces the client's headers by the scrubbed set (no key material, no
 * client-asserted or hop-by-hop header; `createHeaderScrubber`), sets the trusted company headers,
 * the request id and `X-Forwarded-For/-Proto/-Host` (threat model: T3: a client's values are
 * believed only from a trusted proxy, and then only the entry the nearest trusted hop appended, the
 * rightmost, as for the client address), sends `100 Continue` if the client still waits for it, and
 * hands the request to the route's proxy. Needs `req.gw` with route, key and company.
 *
 * @example
 * const forward = createForward({ headers: config.headers, untrustedHeaders: [], proxies, keyMatcherOf });
 */
export function createForward(opts: ForwardOptions): RequestHandler {
  const h = opts.headers;
  for (const name of ['companyId', 'keyId', 'companyTier', 'requestId'] as const)
    assertHeaderName(h?.[name], `headers.${name}`);
  if (!(opts.proxies instanceof Map)) throw new TypeError('proxies must be a Map');
  const { proxies, keyMatcherOf } = opts;
  const scrubHeaders = createHeaderScrubber(h, opts.untrustedHeaders, opts.allowedHeaders);
  const tracing = opts.tracing ?? TRACING_OFF;
  return function forward(req, res, next) {
    const st = req.gw;
    const proxy = proxies.get(st.route)!;
    const peer = req.socket.remoteAddress ?? '';
    const expectContinue = /100-continue/i.test(req.headers.expect ?? '');
    const connection = req.headers.connection;
    if (typeof connection === 'string' && /(^|,)\s*close\s*(,|$)/i.test(connection)) st.clientClose = true;
    // Read X-Forwarded-* and Host after scrubbing: nothing holding the key is echoed into them.
    const headers = scrubHeaders(req.headers, st.peerTrusted, keyMatcherOf(req));
    const xff = headers['x-forwarded-for'];
    // Client-sent X-Forwarded-* are believed only from a trusted proxy; otherwise they are replaced.
    const forwardedFor = st.peerTrusted && typeof xff === 'string' && xff !== '' ? `${xff}, ${peer}` : peer;
    const proto = isHttps(req) ? 'https' : 'http';
    const host = (st.peerTrusted && lastValue(headers['x-forwarded-host'])) || headers.host || '';
    req.headers = headers; // http-proxy builds the upstream request from req.headers
    headers[h.companyId] = st.company!.id;
    headers[h.keyId] = st.key!.id;
    headers[h.companyTier] = st.company!.tier;
    headers[h.requestId] = st.id;
    headers['x-forwarded-for'] = forwardedFor;
    headers['x-forwarded-proto'] = proto;
    if (host) headers['x-forwarded-host'] = host;
    else delete headers['x-forwarded-host'];
    if (tracing.on) tracing.startUpstream(st, headers);
    // The client waited for our go: only now, authenticated, within limits and admitted by the
    // route's bulkhead, may it send the body.
    void proxy(req, res, next, expectContinue ? () => res.writeContinue() : undefined);
  };
}
