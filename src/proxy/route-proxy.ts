import type { Agent as HttpAgent, ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import type { Socket } from 'node:net';
import { createProxyMiddleware, proxyEventsPlugin, type RequestHandler } from 'http-proxy-middleware';
import { sendError } from '../errors.js';
import { scrubResponseHeaders } from '../guards/header-scrub.js';
import '../request-state.js';

export interface RouteProxyOptions {
  target: string;
  timeoutMs: number;
  /** 0 = no limit. */
  bodyLimitBytes: number;
  agent: HttpAgent | HttpsAgent;
  /** Called before the request leaves, to add signed headers etc. */
  onProxyReq?: (proxyReq: ClientRequest, req: IncomingMessage) => void;
  /** Called once the upstream answered with headers, with the seconds it took. */
  onUpstreamResponse?: (req: IncomingMessage, seconds: number) => void;
  /**
   * The gateway's security headers (already set on the response, lowercase `names`) on the
   * upstream's answer: `fill` keeps the upstream's own values and adds the others, `override`
   * keeps the gateway's, `off` drops the gateway's. Default: `fill`.
   */
  securityHeaders?: { mode: SecurityHeadersMode; names: readonly string[] };
}

/** What happens to the gateway's security headers on a proxied answer (`securityHeaders.proxied`). */
export type SecurityHeadersMode = 'fill' | 'override' | 'off';

/**
 * http-proxy-middleware for one route, wired so that every failure is answered in the spec's shape:
 * refused/reset → 502, no answer within `timeoutMs` → 504, a streamed body over the limit → 413.
 * Bodies stream both ways, nothing is buffered: the request stream, or `req.gw.body` when a step
 * read part of it (a failure of that stream cuts the upstream request and answers `req.gw.error`).
 * An upstream that dies mid-response makes the client connection abort, so a cut-off response
 * never looks complete.
 */
export function createRouteProxy(
  opts: RouteProxyOptions,
): (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => Promise<void> {
  const basePath = targetBasePath(opts.target);
  const proxy = createRouteProxyMiddleware(opts);
  return function proxyRoute(req, res, next) {
    // http-proxy emits 'proxyReq' only once a socket is assigned. When the agent's sockets are all
    // busy, the body (or the end of a bodyless request) is piped in first, the request line and
    // headers are fixed then, and a later setHeader() throws out of an event handler (a crash).
    // So the request is finished when http-proxy starts piping into it, before any byte is written.
    onFirstPipe(req, (proxyReq) => {
      // http-proxy builds the path with url.parse and a slash-merging join (`/x/http:/evil` left
      // as `/x/http://evil`): the upstream gets the path exactly as sent and matched instead.
      // (The request line is not yet written: no `Expect` header, which the scrubber drops.)
      proxyReq.path = basePath + (req.url ?? '/');
      // Signing sees the path the upstream receives.
      opts.onProxyReq?.(proxyReq, req);
    });
    return proxy(req, res, next);
  };
}

/**
 * Runs `fn` with the upstream request when http-proxy pipes `req` into it: synchronously after the
 * request is created and before any body byte or header is written. With `req.gw.body`, that stream
 * is piped instead of the request, and its failure cuts the upstream request.
 */
function onFirstPipe(req: IncomingMessage, fn: (proxyReq: ClientRequest) => void): void {
  const original = req.pipe;
  req.pipe = function pipeOnce<T extends NodeJS.WritableStream>(dest: T, options?: { end?: boolean }): T {
    req.pipe = original;
    fn(dest as unknown as ClientRequest);
    const body = req.gw.body;
    if (body === undefined) return original.call(req, dest, options) as T;
    const cut = (err: Error) => (dest as unknown as ClientRequest).destroy(err);
    if (body.errored) cut(body.errored);
    else body.once('error', cut);
    return body.pipe(dest, options);
  };
}

function createRouteProxyMiddleware(
  opts: RouteProxyOptions,
): RequestHandler<IncomingMessage, ServerResponse> {
  const securityMode = opts.securityHeaders?.mode ?? 'fill';
  const securityNames = opts.securityHeaders?.names ?? [];
  return createProxyMiddleware<IncomingMessage, ServerResponse>({
    target: opts.target,
    changeOrigin: true,
    xfwd: false, // X-Forwarded-* are set by the gateway from trusted sources only.
    agent: opts.agent,
    // Only the event wiring: the default plugins would log to the console and answer errors in plain text.
    ejectPlugins: true,
    plugins: [proxyEventsPlugin],
    on: {
      proxyReq(proxyReq, req, res) {
        watchUpstream(proxyReq, req, res, opts);
      },
      // Runs before http-proxy copies the upstream's headers to the client response.
      proxyRes(proxyRes, req, res) {
        // Connection handling is between the client and the gateway: the upstream's hop-by-hop
        // headers stay here (RFC 9110 §7.6.1; http-proxy copies proxyRes.headers after this
        // event), and a client that asked to close gets its connection closed.
        scrubResponseHeaders(proxyRes.headers);
        // `!res.shouldKeepAlive`: the server drains (http/server.ts), or the request did not ask to keep it.
        proxyRes.headers.connection = req.gw.clientClose || !res.shouldKeepAlive ? 'close' : 'keep-alive';
        applySecurityHeaders(securityMode, securityNames, proxyRes.headers, res);
      },
      error(err, req, res) {
        req.gw.upstreamError = err;
        answerProxyError(req, res);
      },
    },
  });
}

/**
 * The gateway's security headers on an upstream answer, before http-proxy copies the upstream's
 * headers onto `res` (where the security-headers step set the gateway's). That copy overwrites, so
 * `fill` needs no work: a header the upstream set replaces the gateway's, the others stay.
 * `override` takes the upstream's copies out first; `off` removes the gateway's that the upstream
 * did not replace. A loop over a fixed list, no allocation.
 */
function applySecurityHeaders(
  mode: SecurityHeadersMode,
  names: readonly string[],
  upstream: IncomingMessage['headers'],
  res: ServerResponse,
): void {
  if (mode === 'override') for (const name of names) delete upstream[name];
  else if (mode === 'off') for (const name of names) if (upstream[name] === undefined) res.removeHeader(name);
}

/**
 * Bounds and follows one upstream request: a timeout until the response headers, the same bound on
 * socket idle time after them, a client answer when the upstream closes without one, the upstream
 * request cut when the client goes away, and the streamed-body limit.
 */
function watchUpstream(
  proxyReq: ClientRequest,
  req: IncomingMessage,
  res: ServerResponse,
  opts: RouteProxyOptions,
): void {
  const started = process.hrtime.bigint();
  // Headers timeout: from forwarding to the upstream's response headers. Socket idle time
  // after that is bounded by the same value (a stalled body aborts the response).
  const timer = setTimeout(() => {
    req.gw.upstreamTimedOut = true;
    proxyReq.destroy(new Error('upstream timeout'));
  }, opts.timeoutMs);
  let answered = false;
  proxyReq.once('response', (proxyRes: IncomingMessage) => {
    answered = true;
    clearTimeout(timer);
    opts.onUpstreamResponse?.(req, Number(process.hrtime.bigint() - started) / 1e9);
    // The socket is pooled and reused: the idle listener must come off again, or every
    // request would leave one behind on it.
    const socket = proxyRes.socket;
    const onIdle = () => proxyReq.destroy(new Error('upstream idle timeout'));
    socket.setTimeout(opts.timeoutMs);
    socket.on('timeout', onIdle);
    proxyRes.once('close', () => {
      socket.setTimeout(0);
      socket.off('timeout', onIdle);
      // A body cut short by the upstream must not look complete to the client.
      if (!proxyRes.complete) res.destroy();
    });
  });
  proxyReq.once('close', () => {
    clearTimeout(timer);
    if (answered) return;
    // Closed with no response and no error (e.g. the upstream answered 101 Switching
    // Protocols, which Node drops without an 'upgrade' listener): the client must not wait
    // forever. Errors are answered by answerProxyError, whose event runs before this.
    setImmediate(() => {
      if (res.headersSent || res.writableEnded || res.destroyed) return;
      req.gw.error = 'UPSTREAM_UNREACHABLE';
      sendError(res, 'UPSTREAM_UNREACHABLE');
    });
  });
  // The client went away before the answer was complete: stop the upstream request too
  // (http-proxy only reacts to 'aborted', which Node no longer emits once a request body is read).
  res.once('close', () => {
    if (!res.writableFinished) proxyReq.destroy();
  });
  if (opts.bodyLimitBytes > 0 && req.headers['content-length'] === undefined) {
    limitStreamedBody(req, res, proxyReq, opts.bodyLimitBytes);
  }
}

/** Answers a proxy failure in the spec's shape (413, 504 or 502), or cuts a response already begun. */
function answerProxyError(req: IncomingMessage, r: ServerResponse | Socket): void {
  if (!('writeHead' in r)) {
    r.destroy();
    return;
  }
  if (r.headersSent || r.writableEnded) {
    r.destroy();
    return;
  }
  // A body step that failed (`req.gw.body`) set its own answer.
  const code =
    req.gw.error ??
    (req.gw.bodyTooLarge
      ? 'PAYLOAD_TOO_LARGE'
      : req.gw.upstreamTimedOut
        ? 'UPSTREAM_TIMEOUT'
        : 'UPSTREAM_UNREACHABLE');
  req.gw.error = code;
  if (!req.complete) r.setHeader('Connection', 'close');
  sendError(r, code);
}

/**
 * The target's own path, without trailing slashes, to prefix to the request's path:
 * `http://b:9090` → `''`, `http://b:9090/base/` → `/base`. The target's query string is not used.
 */
function targetBasePath(target: string): string {
  return new URL(target).pathname.replace(/\/+$/, '');
}

/** Counts a chunked body as it streams; past the limit, the upstream request is cut and 413 answered. */
function limitStreamedBody(
  req: IncomingMessage,
  res: ServerResponse,
  proxyReq: ClientRequest,
  limit: number,
): void {
  let seen = 0;
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen <= limit) return;
    req.off('data', onData);
    req.gw.bodyTooLarge = true;
    req.unpipe(proxyReq);
    // destroy() with an error goes through the proxy's error handler, which answers 413.
    proxyReq.destroy(new Error('request body over limit'));
  };
  req.on('data', onData);
}
