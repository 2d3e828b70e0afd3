import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import { createLogger, type Logger } from '../../src/observability/logger.js';
import type { RequestState } from '../../src/request-state.js';
import type { Company, KeyRecord } from '../../src/store/types.js';

/** What the handler after the step received. */
export interface Reached {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  gw: RequestState | undefined;
}

export interface StepServer {
  port: number;
  /** One entry per request that got past the step. */
  reached: Reached[];
  /** `req.gw` of every request once its response closed (what the access log would read). */
  finished: (RequestState | undefined)[];
  /** Errors the step passed on with `next(err)` or a rejection. */
  errors: unknown[];
  close(): Promise<void>;
}

export interface StepServerOptions {
  /**
   * The request state the request-context step would have set, as a plain object (defaults: id
   * `test-req`, client address = peer, untrusted peer, route `-`), extended by these fields.
   * `false`: set none (for testing the request-context step itself).
   */
  state?: Partial<RequestState> | false;
  /** Replaces the recording 200 answer after the step. */
  final?: RequestHandler;
  /** Replaces the recording error handler (e.g. with the gateway's own, to test it). */
  errorHandler?: ErrorRequestHandler;
}

/**
 * Runs one pipeline step alone in a real Express app on 127.0.0.1:0: a plain request state before
 * it, and after it a handler that records what it received and answers 200 `{"reached":true}`.
 * Errors the step passes on are recorded and answered 500 `{"error":"passed on"}`. Like server.ts,
 * leaves `Expect: 100-continue` to the app.
 */
export async function serveStep(step: RequestHandler, opts: StepServerOptions = {}): Promise<StepServer> {
  const reached: Reached[] = [];
  const finished: (RequestState | undefined)[] = [];
  const errors: unknown[] = [];
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  const seed: RequestHandler = (req, res, next) => {
    if (opts.state !== false) req.gw = { ...plainState(req), ...opts.state };
    res.once('close', () => finished.push(req.gw ? { ...req.gw } : undefined));
    next();
  };
  const record: RequestHandler = (req, res) => {
    reached.push({
      method: req.method,
      url: req.url,
      headers: { ...req.headers },
      gw: req.gw && { ...req.gw },
    });
    res.json({ reached: true });
  };
  const onError: ErrorRequestHandler = (err, _req, res, _next) => {
    errors.push(err);
    if (res.headersSent) return void res.destroy();
    res.status(500).json({ error: 'passed on' });
  };
  app.use(seed, step, opts.final ?? record);
  app.use(opts.errorHandler ?? onError);
  const server = createServer(app);
  // As server.ts does: without this listener Node would answer `100 Continue` by itself.
  server.on('checkContinue', app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    reached,
    finished,
    errors,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function plainState(req: IncomingMessage): RequestState {
  return {
    id: 'test-req',
    start: process.hrtime.bigint(),
    clientIp: req.socket.remoteAddress ?? '',
    peerTrusted: false,
    route: '-',
  };
}

/** A logger whose lines tests read back as parsed objects. */
export function captureLogger(level = 'debug'): { logger: Logger; lines(): Record<string, unknown>[] } {
  const text: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      text.push(chunk.toString('utf8'));
      cb();
    },
  });
  const logger = createLogger({ level, destination: sink });
  return {
    logger,
    lines: () =>
      text
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** The value of the counter or gauge series with exactly these labels (0 when it does not exist). */
export async function seriesValue(
  metric: {
    get(): Promise<{ values: { value: number; labels: Partial<Record<string, string | number>> }[] }>;
  },
  labels: Record<string, string> = {},
): Promise<number> {
  const want = Object.entries(labels);
  const { values } = await metric.get();
  const hit = values.find(
    (v) => Object.keys(v.labels).length === want.length && want.every(([k, x]) => String(v.labels[k]) === x),
  );
  return hit?.value ?? 0;
}

/** A company record for state seeding. */
export function testCompany(over: Partial<Company> = {}): Company {
  return {
    id: 'acme',
    name: 'Acme',
    tier: 'free',
    status: 'active',
    apiAccess: true,
    createdAt: '2025-01-01T00:00:00Z',
    updatedAt: '2025-01-01T00:00:00Z',
    scopes: null,
    limits: null,
    ...over,
  };
}

/** A key record for state seeding (never a real key: only an id and a made-up hash). */
export function testKey(over: Partial<KeyRecord> = {}): KeyRecord {
  return {
    id: 'key_test1',
    companyId: 'acme',
    hash: '0'.repeat(64),
    prefix: 'nk_live_abcd',
    label: null,
    environment: 'live',
    createdAt: '2025-01-01T00:00:00Z',
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    exposedAt: null,
    rotatedTo: null,
    scopes: null,
    limits: null,
    ...over,
  };
}
