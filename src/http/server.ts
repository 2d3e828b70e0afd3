import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
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
  const server = tls
    ? createHttpsServer({ ...options, cert: tls.cert, key: tls.key }, app)
    : createHttpServer(options, app);
  // Without this listener Node answers `100 Continue` by itself before we know who is calling.
  // The pipeline sends it after authentication and the rate limit (app.ts, forward).
  server.on('checkContinue', app);
  answerParserErrors(server, Boolean(tls));
  return server;
}

/**
 * The admin port's HTTP(S) server around its app: fixed header and request timeouts (the admin API
 * takes small JSON bodies), parser errors answered like the public port's. Never listens.
 */
export function createAdminServer(app: RequestHandler, tls?: ListenerCertificate): Server {
  const options = { headersTimeout: 10_000, requestTimeout: 30_000 };
  const server: Server = tls
    ? createHttpsServer({ ...options, cert: tls.cert, key: tls.key }, app)
    : createHttpServer(options, app);
  answerParserErrors(server, Boolean(tls));
  return server;
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

/** Stops accepting, lets in-flight requests finish up to `ms`, then cuts what remains. */
export function drain(server: Server, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => server.closeAllConnections(), ms);
    server.close(() => {
      clearTimeout(timer);
      resolve();
    });
    server.closeIdleConnections();
  });
}
