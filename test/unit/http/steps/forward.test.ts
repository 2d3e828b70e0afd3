import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { generateApiKey } from '../../../../src/auth/api-key.js';
import { createKeyMatcherOf } from '../../../../src/guards/key-material.js';
import { createForward } from '../../../../src/http/steps/forward.js';
import { createRouteProxy } from '../../../../src/proxy/route-proxy.js';
import type { RequestState } from '../../../../src/request-state.js';
import { send } from '../../../helpers/http.js';
import { serveStep, testCompany, testKey, type StepServer } from '../../../helpers/step-server.js';
import { startUpstream, type RecordingUpstream } from '../../../helpers/upstream.js';

const HEADERS = {
  companyId: 'x-company-id',
  keyId: 'x-api-key-id',
  companyTier: 'x-company-tier',
  requestId: 'x-request-id',
};
const keyMatcherOf = createKeyMatcherOf('default', { maxLength: 256, acceptLegacy: false });
const servers: StepServer[] = [];
const agent = new Agent({ keepAlive: true });
let upstream: RecordingUpstream;
before(async () => {
  upstream = await startUpstream();
});
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
  agent.destroy();
  await upstream.close();
});

/** The step alone, forwarding to the real recording upstream through a real route proxy. */
async function start(state: Partial<RequestState> = {}) {
  const proxy = createRouteProxy({ target: upstream.url, timeoutMs: 5000, bodyLimitBytes: 0, agent });
  const step = createForward({
    headers: HEADERS,
    untrustedHeaders: ['x-gateway-signature'],
    proxies: new Map([['/notify/v1', proxy]]),
    keyMatcherOf,
  });
  const srv = await serveStep(step, {
    state: { id: 'req-1', route: '/notify/v1', key: testKey(), company: testCompany(), ...state },
  });
  servers.push(srv);
  return srv;
}

describe('forward step', () => {
  test('the upstream gets the path as sent, the trusted headers set once, and no key or client copies', async () => {
    upstream.received.length = 0;
    const srv = await start();
    const r = await send(srv.port, '/notify/v1/otps?to=a%2Fb', {
      method: 'POST',
      headers: [
        ['X-API-Key', 'nk_live_secret'],
        ['X-Company-Id', 'evil'],
        ['x_company_tier', 'enterprise'],
        ['X-Request-Id', 'client-id'],
        ['X-Forwarded-For', '203.0.113.9'],
        ['X-Forwarded-Host', 'evil.example'],
        ['X-Gateway-Signature', 'forged'],
        ['Content-Type', 'application/json'],
        ['Content-Length', '2'],
      ],
      body: '{}',
    });
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { ok: true });
    assert.equal(srv.reached.length, 0, 'the proxy answered, nothing went past it');
    const got = upstream.received[0]!;
    assert.equal(got.method, 'POST');
    assert.equal(got.url, '/notify/v1/otps?to=a%2Fb');
    assert.equal(got.body.toString(), '{}');
    assert.equal(got.headers['x-api-key'], undefined);
    assert.equal(got.headers['x-gateway-signature'], undefined);
    assert.equal(got.headers['x-company-id'], 'acme');
    assert.equal(got.headers['x-api-key-id'], 'key_test1');
    assert.equal(got.headers['x-company-tier'], 'free');
    assert.equal(got.headers['x-request-id'], 'req-1');
    assert.equal(got.headers['x-forwarded-for'], '127.0.0.1');
    assert.equal(got.headers['x-forwarded-proto'], 'http');
    assert.equal(got.headers['x-forwarded-host'], `127.0.0.1:${srv.port}`);
    assert.equal(got.headers['content-type'], 'application/json');
    const names = got.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase().replace(/_/g, '-'));
    for (const n of ['x-company-id', 'x-company-tier', 'x-request-id', 'x-forwarded-for'])
      assert.equal(names.filter((x) => x === n).length, 1, n);
  });

  test('from a trusted proxy, X-Forwarded-For is extended and X-Forwarded-Host/-Proto believed', async () => {
    upstream.received.length = 0;
    const srv = await start({ peerTrusted: true });
    await send(srv.port, '/notify/v1/x', {
      headers: {
        'X-Forwarded-For': '203.0.113.9',
        'X-Forwarded-Host': 'api.example',
        'X-Forwarded-Proto': 'https',
      },
    });
    const got = upstream.received[0]!;
    assert.equal(got.headers['x-forwarded-for'], '203.0.113.9, 127.0.0.1');
    assert.equal(got.headers['x-forwarded-host'], 'api.example');
    assert.equal(got.headers['x-forwarded-proto'], 'https');
  });

  test('a list from a trusted proxy: the entry the nearest hop appended (the last) decides, not the client’s claim', async () => {
    upstream.received.length = 0;
    const srv = await start({ peerTrusted: true });
    await send(srv.port, '/notify/v1/x', {
      headers: [
        ['X-Forwarded-Host', 'evil.example, api.example'],
        ['X-Forwarded-Proto', 'https, http'],
      ],
    });
    const got = upstream.received[0]!;
    assert.equal(got.headers['x-forwarded-host'], 'api.example');
    assert.equal(got.headers['x-forwarded-proto'], 'http');
    // Sent twice, Node joins the lines: the last line's last entry.
    upstream.received.length = 0;
    await send(srv.port, '/notify/v1/x', {
      headers: [
        ['X-Forwarded-Proto', 'https'],
        ['X-Forwarded-Proto', 'http'],
      ],
    });
    assert.equal(upstream.received[0]!.headers['x-forwarded-proto'], 'http');
  });

  test('Host and X-Forwarded-Host holding a key are not echoed into X-Forwarded-Host', async () => {
    upstream.received.length = 0;
    const srv = await start({ peerTrusted: true });
    const key = generateApiKey('live');
    await send(srv.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', key],
        ['X-Forwarded-Host', key],
      ],
    });
    const got = upstream.received[0]!;
    assert.equal(got.headers['x-forwarded-host'], `127.0.0.1:${srv.port}`);
    assert.ok(!JSON.stringify(got.rawHeaders).includes(key.slice(8, 40)));
  });

  test('Connection: close from the client is remembered and honoured on the answer', async () => {
    const srv = await start();
    const r = await send(srv.port, '/notify/v1/x', { headers: { Connection: 'keep-alive, close' } });
    assert.equal(r.status, 200);
    assert.equal(r.headers.connection, 'close');
    assert.equal(srv.finished.at(-1)?.clientClose, true);
  });

  test('Expect: 100-continue: the step sends the 100, then the body streams to the upstream', async () => {
    upstream.received.length = 0;
    const srv = await start();
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: srv.port,
          path: '/notify/v1/x',
          method: 'POST',
          agent: false,
          headers: { Expect: '100-continue', 'Content-Length': '5' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      const noContinue = setTimeout(() => {
        req.destroy();
        reject(new Error('no 100 Continue within 5 s'));
      }, 5000);
      req.once('continue', () => {
        clearTimeout(noContinue);
        req.end('hello');
      });
      req.flushHeaders();
    });
    assert.equal(status, 200);
    assert.equal(upstream.received[0]!.body.toString(), 'hello');
    assert.equal(upstream.received[0]!.headers.expect, undefined);
  });

  test('invalid options throw when the step is built', () => {
    assert.throws(
      () =>
        createForward({
          headers: { ...HEADERS, keyId: 'X-Api-Key-Id' },
          untrustedHeaders: [],
          proxies: new Map(),
          keyMatcherOf,
        }),
      /headers.keyId must be a lowercase header name/,
    );
    assert.throws(
      () => createForward({ headers: HEADERS, untrustedHeaders: [], proxies: {} as never, keyMatcherOf }),
      /proxies must be a Map/,
    );
  });
});
