import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { GatewayConfig } from '../config/schema.js';
import { rawErrorResponse, type ErrorCode } from '../errors.js';
import { methodRuleOf } from '../proxy/routes.js';
import { securityHeaderSet } from './steps/security-headers.js';

/** A listener's certificate and key, already read and checked (`readTlsFiles` in `tls.ts`). */
export interface ListenerCertificate {
  cert: Buffer;
  key: Buffer;
}

type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * The public port's HTTP(S) server around `app`: the slow-client guards of `server.*`, Node's
 * strict parser, `Expect: 100-continue` left to the app, and parser errors answered in the
 * spec's shape. HTTPS when `tls` is given. Never listens (`listen` does).
 *
 * @example
 * const server = createGatewayServer(config.server, createApp(deps));
 * await listen(server, config.server.port, config.server.host);
 */
export function createGatewayServer(
  s: Readonly<GatewayConfig['server']>,
  app: RequestHandler,
  tls?: ListenerCertificate,
): Server {
  const options = {
    maxHeaderSize: s.maxHeaderSize,
    headersTimeout: s.headersTimeoutMs,
    requestTimeout: s.requestTimeoutMs,
    keepAliveTimeout: s.keepAliveTimeoutMs,
    // Node checks header/request timeouts on this interval (default 30 s): without it a slowloris
    // client could hold a socket for up to 30 s past headersTimeoutMs.
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(s.headersTimeoutMs / 4))),
    // Never the lenient parser: smuggling shapes (CL+TE, bare LF...) must be refused by Node.
    insecureHTTPParser: false,
    requireHostHeader: true,
  };
  const drain = newDrainState();
  const drainable = closingWhileDraining(app, drain);
  const server = tls
    ? createHttpsServer({ ...options, cert: tls.cert, key: tls.key }, drainable)
    : createHttpServer(options, drainable);
  // Without this listener Node answers `100 Continue` by itself before we know who is calling.
  // The pipeline sends it after authentication and the rate limit (app.ts, forward).
  server.on('checkContinue', drainable);
  trackConnections(server, drain, Boolean(tls));
  answerParserErrors(server, Boolean(tls));
  return server;
}

/**
 * The admin port's HTTP(S) server around its app: fixed header and request timeouts (the admin API
 * takes small JSON bodies), parser errors answered like the public port's. Never listens.
 */
export function createAdminServer(app: RequestHandler, tls?: ListenerCertificate): Server {
  const options = { headersTimeout: 10_000, requestTimeout: 30_000 };
  const drain = newDrainState();
  const drainable = closingWhileDraining(app, drain);
  const server: Server = tls
    ? createHttpsServer({ ...options, cert: tls.cert, key: tls.key }, drainable)
    : createHttpServer(options, drainable);
  trackConnections(server, drain, Boolean(tls));
  answerParserErrors(server, Boolean(tls));
  return server;
}

// ---- drain: every answer written once a drain has begun says `Connection: close`
//
// Node keeps serving requests on open keep-alive connections after `server.close()`, and its
// answers say `Connection: keep-alive`: a busy client never lets go, and is cut (ECONNRESET) when
// `shutdownTimeoutMs` runs out. So, once `drain` has begun, every answer not yet started closes
// its connection after it is sent: requests that arrive during the drain (`closingWhileDraining`)
// and those in flight (`drain` walks the open connections; a pipelined request queued behind one
// is dropped with its connection, as clients that pipeline expect). The proxy writes its own
// `Connection` header from `res.shouldKeepAlive` (proxy/route-proxy.ts). Connections idle when the
// drain begins are left to their keep-alive timeout (see `drain`). Tested in
// test/integration/drain.test.ts with keep-alive clients that never stop sending.

const DRAIN = Symbol('notify-gateway.drain');

/** Whether the server drains, and its open connections (the sockets its requests arrive on). */
interface DrainState {
  draining: boolean;
  open: Set<Socket>;
}

type DrainableServer = Server & { [DRAIN]?: DrainState };

function newDrainState(): DrainState {
  return { draining: false, open: new Set() };
}

/** The app, but an answer to a request that arrives while the server drains closes its connection. */
function closingWhileDraining(app: RequestHandler, state: DrainState): RequestHandler {
  return function closeWhileDraining(req, res) {
    if (state.draining) res.shouldKeepAlive = false;
    app(req, res);
  };
}

/** Keeps `state.open` (one set entry per connection, not per request) and hands `state` to `drain`. */
function trackConnections(server: DrainableServer, state: DrainState, tls: boolean): void {
  server[DRAIN] = state;
  server.on(tls ? 'secureConnection' : 'connection', (socket: Socket) => {
    state.open.add(socket);
    socket.once('close', () => state.open.delete(socket));
  });
}

/**
 * Requests Node's parser refuses (smuggling shapes, bad bytes), oversized headers, slow clients and
 * CONNECT get the spec's `{error, details}` body too, and the connection is closed. Answers written
 * to the socket are gateway-made too: the full set of security headers (HSTS when `tls`: the
 * server terminates TLS itself; a trusted X-Forwarded-Proto cannot be read here).
 */
function answerParserErrors(server: Server, tls: boolean): void {
  const security = securityHeaderSet();
  const rawHeaders = tls && security.hsts ? [...security.common, security.hsts] : security.common;
  const rawWithAllow = [...rawHeaders, ['Allow', RAW_ALLOW] as const];
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket) => {
    if (err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    const code = clientErrorCode(err);
    const headers = code === 'METHOD_NOT_ALLOWED' ? rawWithAllow : rawHeaders;
    // Write, then destroy: a half-closed socket could stay open while a slow client keeps sending.
    socket.end(rawErrorResponse(code, headers), () => socket.destroy());
  });
  // CONNECT never reaches the app: Node hands it to this event (without a listener it closes the
  // socket without a word). The gateway opens no tunnels: 405 in the spec's shape, then close.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    if (!socket.writable) return void socket.destroy();
    socket.end(rawErrorResponse('METHOD_NOT_ALLOWED', rawWithAllow), () => socket.destroy());
  });
}

/** `Allow` of the 405s written to the socket: no route is known there, so the default list. */
const RAW_ALLOW = methodRuleOf({}).allow;

/** A method token followed by a space: a request line whose method Node's parser does not know. */
const UNKNOWN_METHOD_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32} /;

/** The registry code of a request Node's parser refused. */
function clientErrorCode(err: NodeJS.ErrnoException & { rawPacket?: Buffer }): ErrorCode {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return 'HEADERS_TOO_LARGE';
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'HPE_HEADERS_TIMEOUT':
      return 'REQUEST_TIMEOUT';
    case 'HPE_INVALID_METHOD': {
      // A well-formed method Node does not know (`TRACK`, a lowercase `trace`): 405, like `TRACE`.
      // Anything else on the request line stays a malformed request.
      const line = err.rawPacket?.subarray(0, 34).toString('latin1') ?? '';
      return UNKNOWN_METHOD_LINE.test(line) ? 'METHOD_NOT_ALLOWED' : 'BAD_REQUEST';
    }
    default:
      return 'BAD_REQUEST';
  }
}

/** Listens on `port` and `host`; rejects with the listen error (`EADDRINUSE`, `EACCES`). */
export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * Stops accepting, lets in-flight requests finish up to `ms`, then cuts what remains. From the
 * call on, every answer whose head is not yet written says `Connection: close` (for a server made
 * by `createGatewayServer` or `createAdminServer`), so keep-alive clients leave instead of being
 * cut when `ms` runs out. Connections idle when the drain begins stay open until the keep-alive
 * timeout their last answer announced (`Keep-Alive: timeout=N`, which clients honour), at most
 * `ms`: closing them at once would reset a request already on its way on one of them.
 */
export function drain(server: Server, ms: number): Promise<void> {
  const state = (server as DrainableServer)[DRAIN];
  if (state) state.draining = true;
  for (const socket of state?.open ?? []) {
    // The answer being written on this connection (Node's own field, which closeIdleConnections
    // reads too): one whose head is not out yet closes the connection when it ends.
    const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (res && !res.headersSent) res.shouldKeepAlive = false;
  }
  return new Promise((resolve) => {
    const cut = setTimeout(() => server.closeAllConnections(), ms);
    // Those still idle then (never used, or kept by a client that ignores the announced timeout).
    const idle = setTimeout(() => server.closeIdleConnections(), Math.min(server.keepAliveTimeout || ms, ms));
    // http.Server#close also closes idle connections at once (Node >= 19): not now, see above. It
    // is shadowed on the instance for this call only; the prototype's is used again after it.
    const own = server as { closeIdleConnections?: () => void };
    own.closeIdleConnections = () => undefined;
    try {
      server.close(() => {
        clearTimeout(cut);
        clearTimeout(idle);
        resolve();
      });
    } finally {
      delete own.closeIdleConnections;
    }
  });
}
