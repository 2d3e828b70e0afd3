import {
  request as httpRequest,
  type Agent as HttpAgent,
  type ClientRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import { request as httpsRequest, type Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import type { PoolTarget } from '../upstream/pool.js';
import '../request-state.js';

/** One attempt's bounds, in ms (`total`, over every attempt, is the route proxy's: 0 = none). */
export interface Timeouts {
  connect: number;
  headers: number;
  idle: number;
  total: number;
}

/**
 * Why an attempt ended without a response: `connect` (refused, DNS, unreachable, reset before a
 * connection), `connect-timeout`, `reset` (the connection broke after it was up), `headers-timeout`,
 * `closed` (closed with no answer, such as a 101 Node drops), `body-error` (the stream of a step
 * failed), `too-large` (a streamed body over the limit), `total-timeout`.
 */
export type AttemptFailure =
  | 'connect'
  | 'connect-timeout'
  | 'reset'
  | 'headers-timeout'
  | 'idle-timeout'
  | 'closed'
  | 'body-error'
  | 'too-large'
  | 'total-timeout';

export interface AttemptContext {
  req: IncomingMessage;
  res: ServerResponse;
  target: PoolTarget;
  agent: HttpAgent | HttpsAgent;
  timeouts: Timeouts;
  bodyLimitBytes: number;
  onProxyReq?: (proxyReq: ClientRequest, req: IncomingMessage) => void;
  /** The body is about to be written: from now on the request must never be sent again. */
  onBodyStart(): void;
  /** The response headers came, after `seconds`. No `onFailure` follows. */
  onResponse(proxyRes: IncomingMessage, seconds: number): void;
  /** The attempt ended with no response; `reached`: a connection to the target was up. */
  onFailure(failure: AttemptFailure, reached: boolean): void;
}

/**
 * Sends the request to one target: the client's (already scrubbed) headers with the target's
 * `Host`, the path exactly as sent joined to the target's base path. The body (the request stream,
 * or `req.gw.body` a step read first) is written only once the connection is up, so a refused or
 * timed-out connection leaves it unread and the request can go elsewhere. Returns the upstream
 * request; destroying it ends the attempt.
 */
export function sendAttempt(c: AttemptContext): ClientRequest {
  const { req, target } = c;
  const proxyReq = (target.url.protocol === 'https:' ? httpsRequest : httpRequest)({
    hostname: target.url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: target.url.port || (target.url.protocol === 'https:' ? 443 : 80),
    method: req.method,
    // Exactly as sent and matched (no URL parsing, no slash merging): `/x/http:/evil` stays.
    path: target.basePath + (req.url ?? '/'),
    headers: outgoingHeaders(req, target),
    agent: c.agent,
  });
  c.onProxyReq?.(proxyReq, req);
  const hasBody =
    req.gw.body !== undefined ||
    req.headers['transfer-encoding'] !== undefined ||
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
  const started = process.hrtime.bigint();
  let reached = false;
  let failure: AttemptFailure | null = null;
  let answered = false;
  const fail = (f: AttemptFailure, err?: Error) => {
    failure ??= f;
    proxyReq.destroy(err ?? (f.endsWith('timeout') ? new Error('upstream timeout') : undefined));
  };
  const headersTimer = setTimeout(() => fail('headers-timeout'), c.timeouts.headers);
  watchStepBody(req, fail);
  proxyReq.once('socket', (socket: Socket) => {
    const up = () => {
      reached = true;
      if (hasBody) streamBody(c, proxyReq, fail);
    };
    if (!socket.connecting) return up();
    const connectTimer = setTimeout(() => fail('connect-timeout'), c.timeouts.connect);
    socket.once('connect', () => {
      clearTimeout(connectTimer);
      up();
    });
    proxyReq.once('close', () => clearTimeout(connectTimer));
  });
  if (!hasBody) proxyReq.end();
  let lastError: NodeJS.ErrnoException | undefined;
  proxyReq.on('error', (err: NodeJS.ErrnoException) => {
    lastError ??= err;
    req.gw.upstreamError = err; // the access line's `upstreamError`: why the last attempt failed
  });
  proxyReq.once('response', (proxyRes: IncomingMessage) => {
    answered = true;
    clearTimeout(headersTimer);
    watchIdle(proxyReq, proxyRes, c.timeouts.idle);
    c.onResponse(proxyRes, Number(process.hrtime.bigint() - started) / 1e9);
  });
  proxyReq.once('close', () => {
    clearTimeout(headersTimer);
    if (answered) return;
    c.onFailure(failure ?? (reached ? (lastError ? 'reset' : 'closed') : 'connect'), reached);
  });
  return proxyReq;
}

/**
 * The headers the target receives: the scrubbed client headers (forward step) with the target's
 * host. A DELETE or OPTIONS without any body framing gets `Content-Length: 0` (some servers wait
 * for a body otherwise); one with `Transfer-Encoding` keeps it, so no body byte can pass unframed.
 */
function outgoingHeaders(req: IncomingMessage, target: PoolTarget): OutgoingHttpHeaders {
  const headers: OutgoingHttpHeaders = { ...req.headers, host: target.hostHeader };
  if (
    (req.method === 'DELETE' || req.method === 'OPTIONS') &&
    headers['content-length'] === undefined &&
    headers['transfer-encoding'] === undefined
  )
    headers['content-length'] = '0';
  return headers;
}

/**
 * Writes the body: the request stream, or `req.gw.body` when a step read part of it (its failure
 * cuts the upstream request; the step set `req.gw.error`). A chunked body is counted as it streams.
 */
function streamBody(
  c: AttemptContext,
  proxyReq: ClientRequest,
  fail: (f: AttemptFailure, err?: Error) => void,
): void {
  const { req } = c;
  c.onBodyStart();
  if (c.bodyLimitBytes > 0 && req.headers['content-length'] === undefined) {
    limitStreamedBody(req, proxyReq, c.bodyLimitBytes, fail);
  }
  (req.gw.body ?? req).pipe(proxyReq);
}

/** A failure of the stream of a step that read the body first (`req.gw.body`) cuts the attempt. */
function watchStepBody(req: IncomingMessage, fail: (f: AttemptFailure, err?: Error) => void): void {
  const body = req.gw.body;
  if (body === undefined) return;
  const cut = (err: Error) => fail('body-error', err);
  if (body.errored) queueMicrotask(() => cut(body.errored!));
  else body.once('error', cut);
}

/** Counts a chunked body as it streams; past the limit, the upstream request is cut (413). */
function limitStreamedBody(
  req: IncomingMessage,
  proxyReq: ClientRequest,
  limit: number,
  fail: (f: AttemptFailure, err?: Error) => void,
): void {
  let seen = 0;
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen <= limit) return;
    req.off('data', onData);
    req.gw.bodyTooLarge = true;
    req.unpipe(proxyReq);
    fail('too-large', new Error('request body over limit'));
  };
  req.on('data', onData);
}

/**
 * The idle bound after the response headers: a stalled body aborts the response. The socket is
 * pooled and reused, so the timeout and its listener come off again when the response ends.
 */
function watchIdle(proxyReq: ClientRequest, proxyRes: IncomingMessage, idleMs: number): void {
  const socket = proxyRes.socket;
  const onIdle = () => {
    proxyRes.emit('idle-timeout');
    proxyReq.destroy(new Error('upstream idle timeout'));
  };
  socket.setTimeout(idleMs);
  socket.on('timeout', onIdle);
  proxyRes.once('close', () => {
    socket.setTimeout(0);
    socket.off('timeout', onIdle);
  });
}
