import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Socket } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import fc from 'fast-check';
import { generateApiKey } from '../../src/auth/api-key.js';
import { DEFAULT_TIERS } from '../../src/config/schema.js';
import { createExampleBackend } from '../../src/demo/backend.js';
import { gatewaySignatureMiddleware, signGatewayRequest, verifyGatewaySignature } from '../../src/signing.js';
import { MemoryKeyStore } from '../../src/store/memory-store.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, send, sendRaw } from '../helpers/http.js';
import { freePort, startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

const SECRET = 'a-shared-signing-secret-of-32-chars-or-more';

/** A GET from a given local source address (127.0.0.0/8 is all loopback); resolves with the status. */
function sendFrom(localAddress: string, port: number, path: string, key?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, localAddress, agent: false, headers: key ? { 'X-API-Key': key } : {} },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Keys created in this file: the canary sweep at the end checks none leaked anywhere. */
const canaries: string[] = [];

async function setupCompany(t: TestGateway, id: string, tier = 'standard') {
  assert.ok((await t.gw.service.createCompany({ id, tier })).ok);
  const k = await t.gw.service.createKey(id, {});
  assert.ok(k.ok);
  canaries.push(k.value.key);
  return k.value;
}

describe('hostile input', () => {
  let upstream: RecordingUpstream;
  let t: TestGateway;
  let key: string;
  let revokedKey: string;

  before(async () => {
    upstream = await startUpstream();
    t = await startTestGateway({
      server: { headersTimeoutMs: 600, requestTimeoutMs: 1500, bodyLimitBytes: 1_000_000 },
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      rateLimit: { authFailures: { points: 100_000 } },
    });
    key = (await setupCompany(t, 'acme')).key;
    const r = await setupCompany(t, 'rev');
    revokedKey = r.key;
    assert.ok((await t.gw.service.revokeKey(r.id)).ok);
  });
  after(async () => {
    await t?.close();
    await upstream?.close();
  });
  beforeEach(() => {
    upstream.received.length = 0;
  });

  test('request smuggling shapes are refused by the strict parser and never reach the upstream', async () => {
    const head = `POST /notify/v1/otps HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n`;
    const cases = {
      'CL + TE': `${head}Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nX`,
      'duplicate CL': `${head}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!`,
      'TE not chunked-final': `${head}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n`,
      'TE obfuscated': `${head}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n`,
      'TE with space before colon': `${head}Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n`,
      'bare LF': `POST /notify/v1/otps HTTP/1.1\nHost: x\nX-API-Key: ${key}\nContent-Length: 0\n\n`,
      'bad chunk size': `${head}Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n`,
      'obs-fold header': `${head}X-Company-Id: a\r\n  b\r\nContent-Length: 0\r\n\r\n`,
    };
    for (const [name, raw] of Object.entries(cases)) {
      const res = await sendRaw(t.port, raw, 800);
      assert.match(res, /^HTTP\/1\.1 400 /, name);
      assert.ok(res.includes('{"error":"Bad Request","details":"Malformed request"}'), name);
    }
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(upstream.received.length, 0);
  });

  test('a large upload with a bad key is refused without reading the body', async () => {
    const started = Date.now();
    const res = await sendRaw(
      t.port,
      `POST /notify/v1/upload HTTP/1.1\r\nHost: x\r\nX-API-Key: ${generateApiKey('live')}\r\nContent-Length: 500000000\r\n\r\n` +
        'x'.repeat(1000),
      3000,
    );
    assert.match(res, /^HTTP\/1\.1 401 /);
    assert.match(res, /Connection: close/i, 'the connection is closed instead of drained');
    assert.ok(Date.now() - started < 2000, 'closed at once, not after a timeout');
  });

  test('Connection: close from the client is honoured on proxied answers; a malformed path closes too', async () => {
    const res = await sendRaw(
      t.port,
      `GET /notify/v1/x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
      3000,
    );
    assert.match(res, /^HTTP\/1\.1 200 /);
    assert.match(res, /\r\nConnection: close\r\n/i);
    assert.ok(!/keep-alive/i.test(res.split('\r\n\r\n')[0]!), 'no upstream keep-alive header passes through');
    const started = Date.now();
    const bad = await sendRaw(
      t.port,
      `GET /notify/v1/../x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n\r\n`,
      3000,
    );
    assert.match(bad, /^HTTP\/1\.1 400 /);
    // sendRaw gives up after 3000 ms: ending well before that means the server closed the socket.
    assert.ok(Date.now() - started < 2500, 'the server closed the connection');
  });

  test('oversized headers → 431 in the spec shape', async () => {
    const res = await sendRaw(
      t.port,
      `GET /notify/v1/x HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assert.match(res, /^HTTP\/1\.1 431 /);
    assert.ok(res.includes('"Request Header Fields Too Large"'));
  });

  test('slow headers (slowloris) and slow bodies are cut; a normal client stays fast meanwhile', async () => {
    const slow = new Socket();
    const got: Buffer[] = [];
    const closed = new Promise<number>((resolve) => {
      const start = Date.now();
      slow.on('close', () => resolve(Date.now() - start));
    });
    slow.on('data', (d) => got.push(d));
    slow.on('error', () => undefined);
    slow.connect(t.port, '127.0.0.1', () => slow.write('GET /notify/v1/x HTTP/1.1\r\nHost: x\r\n'));
    const drip = setInterval(() => slow.writable && slow.write('X-A: b\r\n'), 100);
    const normal = await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': key } });
    assert.equal(normal.status, 200);
    const took = await closed;
    clearInterval(drip);
    assert.ok(took < 2500, `slowloris connection lived ${took} ms`);
    assert.match(Buffer.concat(got).toString(), /^HTTP\/1\.1 408 /);

    // A body that trickles past requestTimeoutMs is cut too.
    const body = new Socket();
    const bodyClosed = new Promise<number>((resolve) => {
      const start = Date.now();
      body.on('close', () => resolve(Date.now() - start));
    });
    body.on('error', () => undefined);
    body.connect(t.port, '127.0.0.1', () =>
      body.write(
        `POST /notify/v1/x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Length: 100000\r\n\r\n`,
      ),
    );
    const trickle = setInterval(() => body.writable && body.write('a'), 100);
    const bodyTook = await bodyClosed;
    clearInterval(trickle);
    assert.ok(bodyTook < 4000, `slow body lived ${bodyTook} ms`);
  });

  test('a client abort propagates to the upstream request', async () => {
    let upstreamSawClose = false;
    upstream.handle(() => undefined); // never answers
    const hang = await startUpstream();
    const aborted = new Promise<void>((resolve) => {
      hang.handle((req) => {
        req.socket.on('close', () => {
          upstreamSawClose = true;
          resolve();
        });
      });
    });
    const t2 = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: hang.url }],
      log: { level: 'silent' },
    });
    try {
      const k = await setupCompany(t2, 'ab');
      const req = request({
        host: '127.0.0.1',
        port: t2.port,
        path: '/notify/v1/x',
        headers: { 'X-API-Key': k.key },
        agent: false,
      });
      req.on('error', () => undefined);
      req.end();
      await eventually(async () => hang.received.length === 1, 2000);
      req.destroy();
      await Promise.race([
        aborted,
        new Promise((_, rej) => setTimeout(() => rej(new Error('upstream never saw the abort')), 2000)),
      ]);
      assert.ok(upstreamSawClose);
    } finally {
      await t2.close();
      await hang.close();
      upstream.handle((_req, res) => res.end('{"ok":true}'));
    }
  });

  test('a slow reader does not make the gateway buffer: backpressure holds the upstream back', async () => {
    const big = await startUpstream();
    const chunk = Buffer.alloc(64 * 1024, 'x');
    let written = 0;
    let stop = false;
    big.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
      // Writes only as fast as the gateway takes it: `written` stalls once buffers are full.
      const pump = () => {
        while (!stop && written < 512 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    const t2 = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: big.url }],
      log: { level: 'silent' },
    });
    const client = new Socket();
    try {
      const k = await setupCompany(t2, 'slow-reader');
      client.on('error', () => undefined);
      await new Promise<void>((r) => client.connect(t2.port, '127.0.0.1', r));
      client.pause(); // reads nothing
      client.write(`GET /notify/v1/big HTTP/1.1\r\nHost: x\r\nX-API-Key: ${k.key}\r\n\r\n`);
      await eventually(async () => written > 0, 2000);
      await new Promise((r) => setTimeout(r, 1500));
      const settled = written;
      const heapBefore = process.memoryUsage().heapUsed;
      await new Promise((r) => setTimeout(r, 1000));
      assert.ok(
        settled < 64 * 1024 * 1024,
        `${settled} bytes left the upstream for a client that reads nothing`,
      );
      assert.ok(
        written - settled <= 1024 * 1024,
        `the upstream kept writing: ${written - settled} more bytes in 1 s`,
      );
      assert.ok(
        process.memoryUsage().heapUsed - heapBefore < 16 * 1024 * 1024,
        'the heap grew while nothing moved',
      );
    } finally {
      stop = true;
      client.destroy();
      await t2.close();
      await big.close();
    }
  });

  test('trusted headers sent as trailers never reach the upstream', async () => {
    const res = await sendRaw(
      t.port,
      `POST /notify/v1/x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nTransfer-Encoding: chunked\r\nTrailer: X-Company-Id\r\nConnection: close\r\n\r\n` +
        `5\r\nhello\r\n0\r\nX-Company-Id: evil\r\nX-API-Key: ${key}\r\n\r\n`,
    );
    assert.match(res, /^HTTP\/1\.1 200 /);
    const got = upstream.received[0]!;
    assert.equal(got.body.toString(), 'hello');
    assert.equal(got.headers['x-company-id'], 'acme');
    assert.deepEqual(got.trailers, {}, 'no trailer is forwarded');
    assert.equal(got.headers.trailer, undefined);
  });

  test('unknown and revoked keys answer the same bytes; timing differs only by noise', async () => {
    const unknown = generateApiKey('live');
    const a = await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': unknown } });
    const b = await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': revokedKey } });
    assert.equal(a.status, 401);
    assert.equal(a.body, b.body);
    assert.deepEqual(
      Object.keys(a.headers)
        .filter((h) => h !== 'date' && h !== 'x-request-id')
        .sort(),
      Object.keys(b.headers)
        .filter((h) => h !== 'date' && h !== 'x-request-id')
        .sort(),
    );
    const time = async (k: string) => {
      const s = performance.now();
      await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k } });
      return performance.now() - s;
    };
    const ua: number[] = [];
    const ra: number[] = [];
    for (let i = 0; i < 100; i++) {
      ua.push(await time(unknown));
      ra.push(await time(revokedKey));
    }
    const med = (xs: number[]) => xs.sort((x, y) => x - y)[xs.length >> 1]!;
    // Both are answered from the local cache; a gap of more than a millisecond would be a signal.
    assert.ok(Math.abs(med(ua) - med(ra)) < 1, `unknown ${med(ua)} ms vs revoked ${med(ra)} ms`);
  });

  test('property: random header names/values and query strings → only 400/401/404/413/431, nothing forwarded', async () => {
    const token = fc.stringMatching(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,20}$/);
    const value = fc.string({ maxLength: 60 }).map((s) => s.replace(/[\r\n\0]/g, ''));
    const query = fc.array(fc.tuple(fc.string({ maxLength: 12 }), fc.string({ maxLength: 20 })), {
      maxLength: 4,
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(token, value), { maxLength: 6 }),
        query,
        fc.boolean(),
        async (headers, q, withKeyInQuery) => {
          const qs = q.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
          if (withKeyInQuery) qs.push(`api_key=${encodeURIComponent(key)}`);
          const path = `/notify/v1/x${qs.length ? '?' + qs.join('&') : ''}`;
          // Random headers never include a valid X-API-Key, so nothing may be forwarded.
          const hs = headers.filter(
            ([n]) =>
              n.toLowerCase() !== 'x-api-key' &&
              !['host', 'content-length', 'transfer-encoding', 'expect'].includes(n.toLowerCase()),
          );
          const raw = `GET ${path} HTTP/1.1\r\nHost: x\r\n${hs.map(([n, v]) => `${n}: ${v}\r\n`).join('')}Connection: close\r\n\r\n`;
          const res = await sendRaw(t.port, Buffer.from(raw, 'latin1'), 1000);
          const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(res)?.[1]);
          assert.ok(
            [400, 401, 404, 413, 431].includes(status),
            `status ${status} for ${JSON.stringify(raw)}`,
          );
        },
      ),
      { numRuns: 150 },
    );
    // Random raw bytes as a whole request.
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 300 }), async (bytes) => {
        const res = await sendRaw(t.port, Buffer.concat([Buffer.from(bytes), Buffer.from('\r\n\r\n')]), 500);
        if (res) assert.match(res, /^HTTP\/1\.1 (400|401|404|413|431) /);
      }),
      { numRuns: 100 },
    );
    assert.equal(upstream.received.length, 0);
    assert.equal((await send(t.port, '/healthz')).status, 200, 'process alive');
  });

  test('CORS preflights get no permissive Access-Control-Allow-* answer', async () => {
    const r = await send(t.port, '/notify/v1/otps', {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://evil.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'x-api-key',
      },
    });
    assert.equal(r.status, 401);
    assert.ok(!Object.keys(r.headers).some((h) => h.startsWith('access-control-allow')));
    assert.equal(upstream.received.length, 0);
  });
});

describe('brute force', () => {
  let upstream: RecordingUpstream;
  let t: TestGateway;
  let lookups = 0;

  before(async () => {
    upstream = await startUpstream();
    const store = new MemoryKeyStore();
    const find = store.findKeyByHash.bind(store);
    store.findKeyByHash = async (h: string) => {
      lookups++;
      return find(h);
    };
    t = await startTestGateway(
      {
        store: { type: 'memory' },
        routes: [{ prefix: '/notify/v1', target: upstream.url }],
        rateLimit: { authFailures: { points: 5, duration: 60 } },
        log: { level: 'warn' },
      },
      { store },
    );
  });
  after(async () => {
    await t?.close();
    await upstream?.close();
  });

  test('failed authentications are limited per client address; unknown keys cost one lookup', async () => {
    const k = await setupCompany(t, 'bf');
    const unknown = generateApiKey('live');
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++)
      statuses.push((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': unknown } })).status);
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
    assert.equal(lookups, 1, 'the negative cache answered the repeats');
    const blocked = await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } });
    assert.equal(blocked.status, 429, 'the address is blocked, even with a valid key');
    assert.deepEqual(blocked.json, {
      error: 'Too Many Requests',
      details: 'Too many failed authentications from this address; retry after the delay in Retry-After',
    });
    assert.ok(Number(blocked.headers['retry-after']) > 0);
    // Checksum failures never reach the store at all.
    assert.equal(lookups, 1);
  });

  test('keys in URLs count against the same per-address budget', async () => {
    const k = await setupCompany(t, 'bf-url');
    // A fresh gateway per address is not possible here, so use another client address: 127.0.0.2.
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await sendFrom('127.0.0.2', t.port, `/notify/v1/x?api_key=${generateApiKey('live')}`);
      statuses.push(r);
    }
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 429, 429]);
    assert.equal(await sendFrom('127.0.0.2', t.port, '/notify/v1/x', k.key), 429);
  });
});

describe('signed identity for upstreams', () => {
  let backend: Server;
  let t: TestGateway;
  let port: number;

  before(async () => {
    backend = createServer(
      createExampleBackend({ guard: gatewaySignatureMiddleware({ secret: SECRET }) as never }),
    );
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    port = (backend.address() as AddressInfo).port;
    t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: `http://127.0.0.1:${port}` }],
      signing: { enabled: true, secret: SECRET },
      browser: { refuseBrowserRequests: true },
      log: { level: 'warn' },
    });
  });
  after(async () => {
    await t?.close();
    await new Promise((r) => backend.close(r));
  });

  test('through the gateway: accepted; direct, forged, tampered or replayed: refused', async () => {
    const k = await setupCompany(t, 'signed');
    const ok = await send(t.port, '/notify/v1/health?x=1', {
      headers: { 'X-API-Key': k.key, 'X-Gateway-Signature': 't=1,v1=' + 'a'.repeat(64) },
    });
    assert.equal(ok.status, 200, ok.body);
    assert.equal((ok.json as { company_id: string }).company_id, 'signed');
    const direct = await send(port, '/notify/v1/health', {
      headers: { 'X-Company-Id': 'signed', 'X-Api-Key-Id': k.id },
    });
    assert.equal(direct.status, 401);
    const now = Math.floor(Date.now() / 1000);
    const sig = signGatewayRequest(SECRET, {
      method: 'GET',
      target: '/notify/v1/health',
      companyId: 'signed',
      keyId: k.id,
      tier: 'standard',
      timestamp: now,
    });
    const ids = { 'X-Company-Id': 'signed', 'X-Api-Key-Id': k.id, 'X-Company-Tier': 'standard' };
    const valid = await send(port, '/notify/v1/health', { headers: { ...ids, 'X-Gateway-Signature': sig } });
    assert.equal(valid.status, 200);
    const otherTier = await send(port, '/notify/v1/health', {
      headers: { ...ids, 'X-Company-Tier': 'enterprise', 'X-Gateway-Signature': sig },
    });
    assert.equal(otherTier.status, 401, 'the tier is signed too');
    const otherCompany = await send(port, '/notify/v1/health', {
      headers: { ...ids, 'X-Company-Id': 'evil', 'X-Gateway-Signature': sig },
    });
    assert.equal(otherCompany.status, 401);
    const otherPath = await send(port, '/notify/v1/otps', {
      method: 'GET',
      headers: { ...ids, 'X-Gateway-Signature': sig },
    });
    assert.equal(otherPath.status, 401);
    const old = signGatewayRequest(SECRET, {
      method: 'GET',
      target: '/notify/v1/health',
      companyId: 'signed',
      keyId: k.id,
      tier: 'standard',
      timestamp: now - 3600,
    });
    const replay = await send(port, '/notify/v1/health', { headers: { ...ids, 'X-Gateway-Signature': old } });
    assert.equal(replay.status, 401);
    assert.deepEqual(
      verifyGatewaySignature(
        {
          method: 'GET',
          url: '/notify/v1/health',
          headers: {
            'x-company-id': 'signed',
            'x-api-key-id': k.id,
            'x-company-tier': 'standard',
            'x-gateway-signature': old,
          },
        },
        { secret: SECRET },
      ),
      { ok: false, reason: 'expired' },
    );
    assert.equal(
      verifyGatewaySignature({ method: 'GET', url: '/', headers: {} }, { secret: SECRET }).ok,
      false,
    );
  });

  test('browser markers are refused with 403 when configured', async () => {
    const k = await setupCompany(t, 'browser');
    for (const headers of [{ Origin: 'https://app.example' }, { 'Sec-Fetch-Mode': 'cors' }] as Record<
      string,
      string
    >[]) {
      const r = await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': k.key, ...headers } });
      assert.equal(r.status, 403);
      assert.deepEqual(r.json, {
        error: 'Forbidden',
        details: 'API keys are for server-side use only; browser requests are refused',
      });
    }
  });
});

describe('failing dependencies', () => {
  let upstream: RecordingUpstream;
  before(async () => {
    upstream = await startUpstream();
  });
  after(async () => upstream?.close());

  test('Redis down at start: the gateway starts, /readyz 503, uncached keys 503 quickly; recovers when Redis comes up', async () => {
    const port = await freePort();
    const t = await startTestGateway({
      store: {
        type: 'redis',
        redis: { url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 300, commandTimeoutMs: 200 },
      },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      log: { level: 'silent' },
    });
    let redis: TestRedis | null = null;
    try {
      assert.equal((await send(t.port, '/readyz')).status, 503);
      const s = Date.now();
      const r = await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': generateApiKey('live') } });
      assert.equal(r.status, 503);
      assert.ok(Date.now() - s < 1000);
      // Redis comes up on the port the gateway has been trying all along.
      redis = await startRedis({ port });
      await eventually(async () => (await send(t.port, '/readyz')).status === 200, 5000, 100);
      const k = await setupCompany(t, 'late');
      assert.equal((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } })).status, 200);
    } finally {
      await t.close();
      await redis?.stop();
    }
  });

  test('Redis paused (SIGSTOP): answers stay bounded, cached keys keep working, then normal again', async () => {
    const redis = await startRedis();
    const t = await startTestGateway({
      store: { type: 'redis', redis: { url: redis.url, commandTimeoutMs: 200 } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      cache: { positiveTtlMs: 100 },
      // Every request asks Redis: a lease already held keeps serving while Redis is away
      // (test/integration/lease-limiter.test.ts); this is about what happens when it must ask.
      rateLimit: { tiers: DEFAULT_TIERS, lease: { maxSize: 1 } },
      log: { level: 'silent' },
    });
    try {
      const k = await setupCompany(t, 'paused');
      assert.equal((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } })).status, 200);
      redis.pause();
      const times: number[] = [];
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const s = Date.now();
        statuses.push((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } })).status);
        times.push(Date.now() - s);
      }
      const unknown = await send(t.port, '/notify/v1/x', {
        headers: { 'X-API-Key': generateApiKey('live') },
      });
      redis.resume();
      assert.deepEqual(statuses, [200, 200, 200, 200, 200], 'cached key served, insurance limiter counting');
      assert.ok(Math.max(...times) < 1500, `slowest answer ${Math.max(...times)} ms`);
      assert.equal(unknown.status, 503);
      await eventually(async () => (await send(t.port, '/readyz')).status === 200, 5000, 100);
      const metrics = await fetch(`http://127.0.0.1:${t.adminPort}/metrics`, {
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.match(await metrics.text(), /gateway_rate_limiter_fallback_total\{policy="insurance"\} [1-9]/);
    } finally {
      redis.resume();
      await t.close();
      await redis.stop();
    }
  });

  test('closed policy: 503 from the limiter while Redis is down', async () => {
    const redis = await startRedis();
    const t = await startTestGateway({
      store: { type: 'redis', redis: { url: redis.url, commandTimeoutMs: 200 } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      // Every request asks Redis (a lease already held would keep serving while Redis is away).
      rateLimit: { failurePolicy: 'closed', lease: { maxSize: 1 } },
      log: { level: 'silent' },
    });
    try {
      const k = await setupCompany(t, 'closed');
      assert.equal((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } })).status, 200);
      await redis.kill();
      const r = await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } });
      assert.equal(r.status, 503);
      assert.deepEqual(r.json, {
        error: 'Service Unavailable',
        details: 'Rate limiter is unavailable; retry shortly',
      });
    } finally {
      await t.close();
      await redis.stop();
    }
  });

  test('an upstream answering 101 Switching Protocols gets a 502, not a hanging client', async () => {
    const switching = await startUpstream();
    switching.handle((_req, res) => {
      res.socket!.write(
        'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
      );
    });
    const t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: switching.url }],
      log: { level: 'silent' },
    });
    try {
      const k = await setupCompany(t, 'switch');
      const s = Date.now();
      const r = await send(t.port, '/notify/v1/ws', { headers: { 'X-API-Key': k.key } });
      assert.equal(r.status, 502);
      assert.ok(Date.now() - s < 2000);
    } finally {
      await t.close();
      await switching.close();
    }
  });

  test('upstream reset mid-response: the client sees an aborted response, never a complete one', async () => {
    const resetting = await startUpstream();
    resetting.handle((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': '1000' });
      res.write('partial');
      setTimeout(() => res.socket?.destroy(), 50);
    });
    const t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: resetting.url }],
      log: { level: 'silent' },
    });
    try {
      const k = await setupCompany(t, 'reset');
      await assert.rejects(
        send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } }),
        /aborted|ECONNRESET|socket hang up/,
      );
      assert.equal((await send(t.port, '/healthz')).status, 200, 'the gateway stays up');
    } finally {
      await t.close();
      await resetting.close();
    }
  });
});

describe('canary sweep', () => {
  test('no key created in this file appears in any log line, metric or error body', async () => {
    // Every gateway above logged into its own capture; one more gateway replays the key-bearing
    // request shapes and we check all its outputs in one place.
    const upstream = await startUpstream();
    const t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      log: { level: 'debug' },
    });
    try {
      const k = await setupCompany(t, 'canary');
      const bodies: string[] = [];
      const shapes: [string, Record<string, string>][] = [
        ['/notify/v1/x', { 'X-API-Key': k.key }],
        [`/notify/v1/x?api_key=${k.key}`, {}],
        [`/notify/v1/${k.key}`, {}],
        ['/notify/v1/x', { 'X-API-Key': k.key + 'x' }],
        ['/nothing', { 'X-API-Key': k.key }],
        ['/notify/v1/../x', { 'X-API-Key': k.key }],
      ];
      for (const [path, headers] of shapes) bodies.push((await send(t.port, path, { headers })).body);
      await t.gw.service.revokeKey(k.id);
      bodies.push((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } })).body);
      const metrics = await (
        await fetch(`http://127.0.0.1:${t.adminPort}/metrics`, {
          headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).text();
      const audit = await (
        await fetch(`http://127.0.0.1:${t.adminPort}/admin/v1/audit`, {
          headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).text();
      const upstreamSaw = JSON.stringify(
        upstream.received.map((r) => [r.url, r.rawHeaders, r.body.toString()]),
      );
      await new Promise((r) => setTimeout(r, 50));
      const everything = [t.logText(), metrics, audit, upstreamSaw, ...bodies].join('\n');
      for (const c of [...canaries]) {
        assert.ok(!everything.includes(c), 'a key leaked');
        assert.ok(!everything.includes(c.slice(14, 40)), 'the secret part of a key leaked');
      }
      assert.equal(upstream.received.length, 1, 'only the one valid request was forwarded');
    } finally {
      await t.close();
      await upstream.close();
    }
  });
});
