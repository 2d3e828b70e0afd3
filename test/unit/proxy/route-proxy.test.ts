import assert from 'node:assert/strict';
import {
  Agent,
  createServer,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { after, afterEach, describe, test } from 'node:test';
import { Transform } from 'node:stream';
import { createRouteProxy, type RouteProxyOptions } from '../../../src/proxy/route-proxy.js';
import type { RequestState } from '../../../src/request-state.js';
import { Bulkhead } from '../../../src/upstream/bulkhead.js';
import { UpstreamPool } from '../../../src/upstream/pool.js';
import { freePort } from '../../helpers/redis.js';
import { send } from '../../helpers/http.js';
import { startUpstream, type RecordingUpstream } from '../../helpers/upstream.js';

// The route proxy on real sockets: a small front server hands each request (with the request state
// the pipeline would have set) to createRouteProxy, and a real upstream answers it. Asserts on what
// the upstream received and what the client got, for every failure the proxy must answer.

interface Front {
  port: number;
  /** `req.gw` of every request, as the proxy left it. */
  states: RequestState[];
  /** Errors the proxy passed to `next`. */
  passed: unknown[];
  close(): Promise<void>;
}

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!();
});
const agents: Agent[] = [];
after(() => agents.forEach((a) => a.destroy()));

function newAgent(): Agent {
  const a = new Agent({ keepAlive: true, maxSockets: 4 });
  agents.push(a);
  return a;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return (server.address() as AddressInfo).port;
}

async function upstream(): Promise<RecordingUpstream> {
  const u = await startUpstream();
  closers.push(() => u.close());
  return u;
}

/**
 * A front server: seeds `req.gw` (plus `state`), runs `prep` (the security-headers step's part),
 * then the route proxy built from `opts`.
 */
async function front(
  opts: Partial<RouteProxyOptions> & ({ target: string } | { pool: UpstreamPool }),
  state: Partial<RequestState> = {},
  prep?: (res: ServerResponse, req: IncomingMessage) => void,
): Promise<Front> {
  const states: RequestState[] = [];
  const passed: unknown[] = [];
  const proxy = createRouteProxy({ timeoutMs: 2000, bodyLimitBytes: 0, agent: newAgent(), ...opts });
  const server = createServer((req, res) => {
    req.gw = {
      id: 'rp-test',
      start: process.hrtime.bigint(),
      clientIp: '127.0.0.1',
      peerTrusted: false,
      route: '/notify/v1',
      ...state,
    };
    states.push(req.gw);
    prep?.(res, req);
    void proxy(req, res, (err) => {
      passed.push(err);
      if (!res.headersSent) res.writeHead(599).end();
    });
  });
  const port = await listen(server);
  return { port, states, passed, close: async () => undefined };
}

/** A raw TCP upstream: `onData` gets each connection's socket once the request arrives. */
async function rawUpstream(onData: (socket: Socket) => void): Promise<string> {
  const sockets = new Set<Socket>();
  const server = createTcpServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    s.once('data', () => onData(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(
    () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A GET whose response is read as far as it goes: status, headers, body, and whether it ended. */
function fetchRaw(
  port: number,
  path: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string[] } = {},
): Promise<{ status: number; headers: IncomingMessage['headers']; body: string; complete: boolean }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers: opts.headers, agent: false },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        const done = () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, complete: res.complete });
        res.on('end', done);
        res.on('aborted', done);
        res.on('error', done);
      },
    );
    req.on('error', reject);
    for (const chunk of opts.body ?? []) req.write(chunk);
    req.end();
  });
}

const json = (text: string) => JSON.parse(text) as Record<string, unknown>;

describe('createRouteProxy: what the upstream receives', () => {
  test('the path exactly as sent, joined to the target base path; the target host; no X-Forwarded-*', async () => {
    const u = await upstream();
    const f = await front({ target: `${u.url}/base/` });
    const r = await send(f.port, '/notify/v1/http:/evil//x?a=1&b=%2F', { headers: { 'X-Custom': 'kept' } });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { ok: true });
    assert.equal(u.received.length, 1);
    const got = u.received[0]!;
    assert.equal(got.url, '/base/notify/v1/http:/evil//x?a=1&b=%2F');
    assert.equal(got.method, 'GET');
    assert.equal(got.headers.host, `127.0.0.1:${u.port}`, 'changeOrigin: the target host');
    assert.equal(got.headers['x-custom'], 'kept');
    assert.equal(got.headers['x-forwarded-for'], undefined, 'xfwd is off');
    assert.equal(got.headers['x-forwarded-host'], undefined);
  });

  test('a target without a path adds nothing; trailing slashes of the target base are dropped', async () => {
    const u = await upstream();
    const f1 = await front({ target: u.url });
    await send(f1.port, '/notify/v1/a');
    const f2 = await front({ target: `${u.url}/b///` });
    await send(f2.port, '/notify/v1/a');
    assert.deepEqual(
      u.received.map((x) => x.url),
      ['/notify/v1/a', '/b/notify/v1/a'],
    );
  });

  test('onProxyReq sees the final path and can add headers before the request leaves', async () => {
    const u = await upstream();
    const seen: string[] = [];
    const f = await front({
      target: `${u.url}/base`,
      onProxyReq(proxyReq: ClientRequest, req: IncomingMessage) {
        seen.push(`${proxyReq.path} ${req.url}`);
        proxyReq.setHeader('X-Signed', 'yes');
      },
    });
    const r = await send(f.port, '/notify/v1/p?q=1', { method: 'POST', body: 'hello' });
    assert.equal(r.status, 200);
    assert.deepEqual(seen, ['/base/notify/v1/p?q=1 /notify/v1/p?q=1']);
    assert.equal(u.received[0]!.headers['x-signed'], 'yes');
    assert.equal(u.received[0]!.body.toString(), 'hello');
  });

  test('a streamed (chunked) body over bodyLimitBytes: 413, Connection: close, the upstream request cut', async () => {
    const u = await upstream();
    const f = await front({ target: u.url, bodyLimitBytes: 10 });
    const r = await fetchRaw(f.port, '/notify/v1/up', {
      method: 'POST',
      headers: { 'Transfer-Encoding': 'chunked' },
      body: ['0123456789', 'abc'],
    });
    assert.equal(r.status, 413);
    assert.equal(json(r.body).error, 'Payload Too Large');
    assert.equal(r.headers.connection, 'close');
    assert.equal(f.states[0]!.bodyTooLarge, true);
    assert.equal(f.states[0]!.error, 'PAYLOAD_TOO_LARGE');
    assert.equal(u.received.length, 0, 'the upstream never got a complete request');
  });

  test('a chunked body at the limit passes; a declared length is not counted here; 0 = no limit', async () => {
    const u = await upstream();
    const f = await front({ target: u.url, bodyLimitBytes: 10 });
    const atLimit = await fetchRaw(f.port, '/notify/v1/up', {
      method: 'POST',
      headers: { 'Transfer-Encoding': 'chunked' },
      body: ['01234', '56789'],
    });
    assert.equal(atLimit.status, 200);
    // Declared sizes are the body-limit step's job: the proxy only counts what it cannot know.
    const declared = await send(f.port, '/notify/v1/up', {
      method: 'POST',
      headers: { 'Content-Length': '20' },
      body: 'x'.repeat(20),
    });
    assert.equal(declared.status, 200);
    const open = await front({ target: u.url, bodyLimitBytes: 0 });
    const big = await fetchRaw(open.port, '/notify/v1/up', {
      method: 'POST',
      headers: { 'Transfer-Encoding': 'chunked' },
      body: ['x'.repeat(5000), 'y'.repeat(5000)],
    });
    assert.equal(big.status, 200);
    assert.deepEqual(
      u.received.map((x) => x.body.length),
      [10, 20, 10_000],
    );
  });
});

describe('createRouteProxy: a body a step read first (req.gw.body)', () => {
  /** A step's stream over the request body: upper-cases it, and fails at a `!` (an override found). */
  const stepBody = (req: IncomingMessage) => {
    const t = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        const text = chunk.toString('latin1');
        if (text.includes('!')) return cb(new Error('found'));
        cb(null, Buffer.from(text.toUpperCase(), 'latin1'));
      },
    });
    req.pipe(t);
    req.gw.body = t;
  };

  test('the upstream gets the stream instead of the request, byte for byte', async () => {
    const u = await upstream();
    const f = await front({ target: u.url }, {}, (_res, req) => stepBody(req));
    const r = await fetchRaw(f.port, '/notify/v1/x', {
      method: 'POST',
      headers: { 'Content-Length': '11' },
      body: ['hello', ' world'],
    });
    assert.equal(r.status, 200);
    assert.equal(u.received[0]!.body.toString(), 'HELLO WORLD');
  });

  test("a stream that fails cuts the upstream request and answers the step's error", async () => {
    const u = await upstream();
    const f = await front({ target: u.url }, {}, (_res, req) => {
      stepBody(req);
      req.gw.error = 'METHOD_OVERRIDE_IN_BODY';
    });
    const r = await fetchRaw(f.port, '/notify/v1/x', {
      method: 'POST',
      headers: { 'Transfer-Encoding': 'chunked' },
      body: ['a'.repeat(1000), 'b!'],
    });
    assert.equal(r.status, 400);
    assert.deepEqual(json(r.body), {
      error: 'Bad Request',
      details: 'Method overrides in a request body are not accepted',
    });
    assert.equal(u.received.length, 0, 'the upstream never saw a complete request');
  });
});

describe('createRouteProxy: what the client receives', () => {
  test("the upstream's hop-by-hop headers and the headers it names in Connection are dropped", async () => {
    const u = await upstream();
    u.handle((_req, res) => {
      res.setHeader('Connection', 'close, X-Internal-Debug');
      res.setHeader('X-Internal-Debug', 'secret');
      res.setHeader('Proxy-Authenticate', 'Basic');
      res.setHeader('Keep-Alive', 'timeout=5');
      res.setHeader('X-Public', 'yes');
      res.end('body');
    });
    const f = await front({ target: u.url });
    // A client that keeps its connection (without an agent Node's client asks to close it).
    const r = await fetchRaw(f.port, '/notify/v1/h', { headers: { Connection: 'keep-alive' } });
    assert.equal(r.status, 200);
    assert.equal(r.body, 'body');
    assert.equal(r.headers['x-internal-debug'], undefined);
    assert.equal(r.headers['proxy-authenticate'], undefined);
    assert.equal(r.headers['keep-alive'], undefined);
    assert.equal(r.headers['x-public'], 'yes');
    assert.equal(r.headers.connection, 'keep-alive', "the upstream's close is not the client's");
  });

  test('a client that asked to close gets Connection: close', async () => {
    const u = await upstream();
    const f = await front({ target: u.url }, { clientClose: true });
    const r = await fetchRaw(f.port, '/notify/v1/h');
    assert.equal(r.status, 200);
    assert.equal(r.headers.connection, 'close');
  });

  const gatewaySet = (res: ServerResponse) => {
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('X-Content-Type-Options', 'nosniff');
  };
  const names = ['x-frame-options', 'x-content-type-options'];
  async function securityRun(mode?: 'fill' | 'override' | 'off') {
    const u = await upstream();
    u.handle((_req, res) => {
      res.setHeader('X-Frame-Options', 'SAMEORIGIN');
      res.end('ok');
    });
    const f = await front(
      { target: u.url, ...(mode ? { securityHeaders: { mode, names } } : {}) },
      {},
      gatewaySet,
    );
    return (await fetchRaw(f.port, '/notify/v1/s')).headers;
  }

  test("security headers, fill (the default): the upstream's own value stays, the others are added", async () => {
    for (const h of [await securityRun('fill'), await securityRun()]) {
      assert.equal(h['x-frame-options'], 'SAMEORIGIN');
      assert.equal(h['x-content-type-options'], 'nosniff');
    }
  });

  test("security headers, override: the gateway's values replace the upstream's", async () => {
    const h = await securityRun('override');
    assert.equal(h['x-frame-options'], 'DENY');
    assert.equal(h['x-content-type-options'], 'nosniff');
  });

  test("security headers, off: only the upstream's", async () => {
    const h = await securityRun('off');
    assert.equal(h['x-frame-options'], 'SAMEORIGIN');
    assert.equal(h['x-content-type-options'], undefined);
  });

  test('onUpstreamResponse gets the seconds to the response headers, once per request', async () => {
    const u = await upstream();
    u.handle((_req, res) => setTimeout(() => res.end('late'), 120));
    const calls: [string, number][] = [];
    const f = await front({ target: u.url, onUpstreamResponse: (req, s) => calls.push([req.url ?? '', s]) });
    const r = await fetchRaw(f.port, '/notify/v1/t');
    assert.equal(r.body, 'late');
    assert.equal(calls.length, 1);
    assert.equal(calls[0]![0], '/notify/v1/t');
    assert.ok(calls[0]![1] >= 0.1 && calls[0]![1] < 2, `seconds ${calls[0]![1]}`);
  });
});

describe('createRouteProxy: failures', () => {
  test('no response headers within timeoutMs: 504, the state says why, the upstream request cut', async () => {
    const u = await upstream();
    let upstreamClosed = false;
    u.handle((req) => req.socket.once('close', () => (upstreamClosed = true)));
    const f = await front({ target: u.url, timeoutMs: 150 });
    const t0 = Date.now();
    const r = await fetchRaw(f.port, '/notify/v1/slow', { headers: { Connection: 'keep-alive' } });
    const took = Date.now() - t0;
    assert.equal(r.status, 504);
    assert.deepEqual(json(r.body), {
      error: 'Gateway Timeout',
      details: 'Upstream service did not answer in time',
    });
    assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(r.headers['cache-control'], 'no-store');
    assert.notEqual(r.headers.connection, 'close', 'a complete bodyless request keeps its connection');
    assert.ok(took >= 140 && took < 1500, `answered after ${took} ms`);
    assert.equal(f.states[0]!.upstreamTimedOut, true);
    assert.equal(f.states[0]!.error, 'UPSTREAM_TIMEOUT');
    await waitFor(() => upstreamClosed);
    assert.deepEqual(f.passed, []);
  });

  test('an answer just inside timeoutMs is forwarded, and the timer does not fire later', async () => {
    const u = await upstream();
    u.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('a');
      // The body continues past the headers timeout, but within the idle bound of each chunk.
      setTimeout(() => res.write('b'), 150);
      setTimeout(() => res.end('c'), 300);
    });
    const f = await front({ target: u.url, timeoutMs: 250 });
    const r = await fetchRaw(f.port, '/notify/v1/ok');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'abc');
    assert.equal(r.complete, true);
    assert.equal(f.states[0]!.upstreamTimedOut, undefined);
  });

  test('a body that stalls after the headers for timeoutMs: the client connection is aborted', async () => {
    const u = await upstream();
    u.handle((_req, res) => {
      res.writeHead(200, { 'Content-Length': '10' });
      res.write('12345');
    });
    const f = await front({ target: u.url, timeoutMs: 150 });
    const t0 = Date.now();
    const r = await fetchRaw(f.port, '/notify/v1/stall');
    assert.equal(r.status, 200);
    assert.equal(r.body, '12345');
    assert.equal(r.complete, false, 'a cut-off response must not look complete');
    assert.ok(Date.now() - t0 < 1500);
  });

  test('an upstream reset mid-response: the client connection is aborted, never a complete response', async () => {
    const target = await rawUpstream((s) => {
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial');
      setTimeout(() => s.destroy(), 30);
    });
    const f = await front({ target });
    const r = await fetchRaw(f.port, '/notify/v1/reset');
    assert.equal(r.status, 200);
    assert.equal(r.body, 'partial');
    assert.equal(r.complete, false);
  });

  test('a refused connection: 502 in the spec shape', async () => {
    const port = await freePort();
    const f = await front({ target: `http://127.0.0.1:${port}` });
    const r = await fetchRaw(f.port, '/notify/v1/x');
    assert.equal(r.status, 502);
    assert.deepEqual(json(r.body), { error: 'Bad Gateway', details: 'Upstream service is unreachable' });
    assert.equal(f.states[0]!.error, 'UPSTREAM_UNREACHABLE');
    assert.equal(f.states[0]!.upstreamTimedOut, undefined);
  });

  test('an upstream that closes before answering: 502, and Connection: close while the body is unread', async () => {
    const target = await rawUpstream((s) => s.destroy());
    const f = await front({ target });
    const r = await fetchRaw(f.port, '/notify/v1/x');
    assert.equal(r.status, 502);
    assert.equal(json(r.body).error, 'Bad Gateway');
    // A POST whose body the client is still sending: the connection cannot be reused.
    const f2 = await front({ target });
    const slow = await new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: f2.port,
          path: '/notify/v1/x',
          method: 'POST',
          headers: { 'Transfer-Encoding': 'chunked' },
          agent: false,
        },
        (res) => {
          res.resume();
          resolve({ status: res.statusCode ?? 0, connection: res.headers.connection });
          req.destroy();
        },
      );
      req.on('error', reject);
      req.write('first chunk');
    });
    assert.equal(slow.status, 502);
    assert.equal(slow.connection, 'close');
  });

  test('an upstream answering 101 (dropped by Node, no error event): 502, the client does not hang', async () => {
    const target = await rawUpstream((s) => {
      s.write('HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: Upgrade\r\n\r\n');
    });
    const f = await front({ target, timeoutMs: 5000 });
    const t0 = Date.now();
    const r = await fetchRaw(f.port, '/notify/v1/up');
    assert.equal(r.status, 502);
    assert.deepEqual(json(r.body), { error: 'Bad Gateway', details: 'Upstream service is unreachable' });
    assert.equal(f.states[0]!.error, 'UPSTREAM_UNREACHABLE');
    assert.ok(Date.now() - t0 < 2000);
  });

  test('a client that goes away: the upstream request is cut too', async () => {
    const u = await upstream();
    let upstreamGone = false;
    u.handle((req, res) => {
      res.writeHead(200);
      res.write('start');
      req.socket.once('close', () => (upstreamGone = true));
    });
    const f = await front({ target: u.url, timeoutMs: 5000 });
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port: f.port, path: '/notify/v1/long', agent: false },
        (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on('error', () => undefined);
      req.once('error', reject);
      req.end();
    });
    await waitFor(() => upstreamGone);
  });
});

describe('createRouteProxy: pooled sockets', () => {
  test("a complete response leaves the client's keep-alive connection open for the next request", async () => {
    const u = await upstream();
    const f = await front({ target: u.url });
    const client = newAgent();
    const reused: boolean[] = [];
    for (let i = 0; i < 3; i++) {
      await new Promise<void>((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port: f.port, path: `/notify/v1/${i}`, agent: client },
          (res) => {
            res.resume();
            res.on('end', () => {
              reused.push(req.reusedSocket);
              // Let the agent put the socket back before the next request.
              setImmediate(resolve);
            });
          },
        );
        req.on('error', reject);
        req.end();
      });
    }
    assert.deepEqual(reused, [false, true, true]);
  });

  test('the idle bound comes off a reused socket: no timeout left set, no listener left behind', async () => {
    const u = await upstream();
    const agent = newAgent();
    const f = await front({ target: u.url, agent, timeoutMs: 1000 });
    const headers = { Connection: 'keep-alive' };
    for (let i = 0; i < 5; i++)
      assert.equal((await fetchRaw(f.port, `/notify/v1/${i}`, { headers })).status, 200);
    await waitFor(() => Object.values(agent.freeSockets).flat().length > 0);
    const free = Object.values(agent.freeSockets).flat() as Socket[];
    assert.equal(free.length, 1, 'sequential requests reuse one socket');
    const socket = free[0]!;
    // The agent's own keep-alive handling may add one 'timeout' listener; ours must not pile up.
    assert.ok(socket.listenerCount('timeout') <= 1, `${socket.listenerCount('timeout')} listeners`);
    assert.notEqual(socket.timeout, 1000, 'the idle bound of the last response was cleared');
  });
});

async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('createRouteProxy: a pool of targets, retries that never replay a write', () => {
  const outlier = {
    consecutiveFailures: 100,
    baseEjectionMs: 1000,
    maxEjectionMs: 1000,
    maxEjectedPercent: 50,
  };
  const poolOf = (...urls: string[]) =>
    new UpstreamPool({
      targets: urls.map((url) => ({ url, weight: 1 })),
      balancing: 'round-robin',
      outlier,
      whenNoneHealthy: 'panic',
    });
  const retries = { attempts: 3, idempotentMethods: ['GET', 'HEAD', 'OPTIONS'], budget: null };

  test('a refused connection goes to the next target whatever the method; the body arrives once', async () => {
    const u = await upstream();
    const dead = `http://127.0.0.1:${await freePort()}`;
    const f = await front({ pool: poolOf(dead, u.url), retries });
    for (let i = 0; i < 4; i++) {
      const r = await send(f.port, '/notify/v1/p', { method: 'POST', body: `n${i}` });
      assert.equal(r.status, 200);
    }
    assert.deepEqual(
      u.received.map((x) => x.body.toString()),
      ['n0', 'n1', 'n2', 'n3'],
    );
  });

  test('503 is retried for a bodyless GET, never for a POST; Retry-After over 1 s is passed on', async () => {
    const bad = await upstream();
    const good = await upstream();
    bad.handle((_req, res) => res.writeHead(503, { 'Retry-After': '0' }).end('busy'));
    const f = await front({ pool: poolOf(bad.url, good.url), retries });
    const get1 = await send(f.port, '/notify/v1/g');
    const get2 = await send(f.port, '/notify/v1/g');
    assert.deepEqual([get1.status, get2.status], [200, 200]);
    assert.equal(bad.received.length, 1, 'round-robin sent one of the two GETs to the failing target');
    assert.equal(good.received.length, 2);
    const posts = await Promise.all(
      [0, 1].map(() => send(f.port, '/notify/v1/p', { method: 'POST', body: 'x' })),
    );
    assert.deepEqual(posts.map((p) => p.status).sort(), [200, 503]);
    assert.equal(bad.received.length + good.received.length, 5, 'each POST arrived once');
    bad.handle((_req, res) => res.writeHead(503, { 'Retry-After': '30' }).end('later'));
    const statuses = [await send(f.port, '/notify/v1/g'), await send(f.port, '/notify/v1/g')].map(
      (r) => r.status,
    );
    assert.ok(statuses.includes(503), 'a long Retry-After reaches the client');
  });

  test('a body streamed to a target that then breaks is never sent again', async () => {
    const got: string[] = [];
    const breaking = await rawUpstream((s) => {
      got.push('broken');
      s.destroy();
    });
    const u = await upstream();
    const f = await front({ pool: poolOf(breaking, u.url), retries });
    const statuses: number[] = [];
    for (let i = 0; i < 2; i++)
      statuses.push((await send(f.port, '/notify/v1/p', { method: 'POST', body: 'once' })).status);
    assert.deepEqual(statuses.sort(), [200, 502]);
    assert.equal(got.length + u.received.length, 2, 'two POSTs, two arrivals');
    // A bodyless GET that met the same break goes to the other target.
    const gets = [await send(f.port, '/notify/v1/g'), await send(f.port, '/notify/v1/g')];
    assert.deepEqual(
      gets.map((g) => g.status),
      [200, 200],
    );
  });

  test('the bulkhead answers 503 UPSTREAM_BUSY with Retry-After before anything leaves', async () => {
    const u = await upstream();
    const held: ServerResponse[] = [];
    u.handle((_req, res) => held.push(res));
    const f = await front(
      { pool: poolOf(u.url), bulkhead: new Bulkhead({ perCompany: 1 }) },
      { company: { id: 'a' } as RequestState['company'], key: { id: 'k' } as RequestState['key'] },
    );
    const first = send(f.port, '/notify/v1/slow');
    await waitFor(() => held.length === 1);
    const second = await send(f.port, '/notify/v1/slow');
    assert.equal(second.status, 503);
    assert.equal(second.headers['retry-after'], '1');
    assert.equal((second.json as { error: string }).error, 'Service Unavailable');
    assert.equal(u.received.length, 1);
    held[0]!.end('done');
    assert.equal((await first).status, 200);
  });
});

describe('createRouteProxy: the total timeout', () => {
  test('over every attempt: 504 UPSTREAM_TOTAL_TIMEOUT, delivered whole, the upstream request cut', async () => {
    const u = await upstream();
    let upstreamClosed = false;
    u.handle((req) => req.socket.once('close', () => (upstreamClosed = true)));
    const f = await front({ target: u.url, timeoutMs: 5000, timeouts: { total: 150 } });
    const r = await fetchRaw(f.port, '/notify/v1/slow');
    assert.equal(r.status, 504);
    assert.equal(r.complete, true);
    assert.deepEqual(json(r.body), {
      error: 'Gateway Timeout',
      details: 'Upstream service did not complete the request in time',
    });
    assert.equal(f.states[0]!.error, 'UPSTREAM_TOTAL_TIMEOUT');
    await waitFor(() => upstreamClosed);
  });
});
