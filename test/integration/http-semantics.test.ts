import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { generateApiKey } from '../../src/auth/api-key.js';
import { gatewayWithUpstream, type TestGateway } from '../helpers/gateway.js';
import { send, sendRaw } from '../helpers/http.js';
import { seriesValue } from '../helpers/step-server.js';
import type { RecordingUpstream } from '../helpers/upstream.js';

/**
 * Malformed HTTP is refused, not repaired (INVARIANTS #11): methods (finding 9 of issue 10) and
 * `Host` / request-target form (finding 13). Every refusal is asserted on the bytes the client got
 * and on the recording upstream, which must have received nothing.
 */

const METHOD_BODY = JSON.stringify({
  error: 'Method Not Allowed',
  details: 'This method is not allowed here; the Allow header lists the methods that are',
});
const BAD_BODY = '{"error":"Bad Request","details":"Malformed request"}';
const DEFAULT_ALLOW = 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS';

/** Status line, lowercased header map and body of a raw HTTP/1.1 answer. */
function parseRaw(raw: string): { status: number; headers: Map<string, string>; body: string } {
  const end = raw.indexOf('\r\n\r\n');
  const lines = raw.slice(0, end).split('\r\n');
  const headers = new Map<string, string>();
  for (const l of lines.slice(1))
    headers.set(l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim());
  return { status: Number(lines[0]?.split(' ')[1]), headers, body: raw.slice(end + 4) };
}

describe('methods, Host and request targets', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;

  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream(
      (u) => ({
        routes: [
          { prefix: '/notify/v1', target: u.url },
          { prefix: '/read-only', target: u.url, methods: ['GET'] },
          { prefix: '/dav', target: u.url, methods: ['PROPFIND', 'GET', 'HEAD'] },
        ],
        rateLimit: { tiers: [{ name: 'tiny', points: 3, duration: 60 }], authFailures: { points: 1000 } },
        log: { level: 'warn' },
      }),
      { tier: 'tiny' },
    ));
  });
  after(() => close?.());
  beforeEach(() => {
    upstream.received.length = 0;
  });

  test('finding 9: TRACE, TRACK and CONNECT with a valid key → 405 JSON with Allow; nothing forwarded', async () => {
    const cases = {
      TRACE: `TRACE /notify/v1/x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n\r\n`,
      'TRACE on a route with methods': `TRACE /read-only/x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n\r\n`,
      'TRACE on no route': `TRACE /elsewhere HTTP/1.1\r\nHost: x\r\n\r\n`,
      'TRACE on a probe': `TRACE /healthz HTTP/1.1\r\nHost: x\r\n\r\n`,
      'lowercase trace': `trace /notify/v1/x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n\r\n`,
      TRACK: `TRACK /notify/v1/x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n\r\n`,
      CONNECT: `CONNECT 127.0.0.1:${upstream.port} HTTP/1.1\r\nHost: 127.0.0.1:${upstream.port}\r\nX-API-Key: ${key}\r\n\r\n`,
      'CONNECT with a path': `CONNECT /notify/v1/x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n\r\n`,
    };
    for (const [name, raw] of Object.entries(cases)) {
      const started = Date.now();
      const res = parseRaw(await sendRaw(t.port, raw, 3000));
      assert.equal(res.status, 405, name);
      assert.equal(res.body, METHOD_BODY, name);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8', name);
      const allow = name.includes('methods') ? 'GET, HEAD' : DEFAULT_ALLOW;
      assert.equal(res.headers.get('allow'), allow, name);
      // TRACK (refused by Node's parser) and CONNECT (never reaches the app) are answered on the
      // socket, which is then closed: sendRaw returns well before its 3 s limit.
      if (/TRACK|CONNECT/.test(name)) {
        assert.equal(res.headers.get('connection'), 'close', name);
        assert.ok(Date.now() - started < 2500, `${name}: the connection was closed`);
      }
    }
    assert.equal(upstream.received.length, 0);
  });

  test('finding 9: a method outside the route’s list → 405 with Allow, before the key: no lookup, no quota', async () => {
    const failures = await seriesValue(t.gw.metrics.authFailures, { reason: 'unknown' });
    for (const k of [key, generateApiKey('live'), undefined]) {
      const r = await send(t.port, '/read-only/x', {
        method: 'POST',
        headers: k ? { 'X-API-Key': k, 'Content-Type': 'application/json' } : {},
        body: '{}',
      });
      assert.equal(r.status, 405);
      assert.equal(r.body, METHOD_BODY);
      assert.equal(r.headers.allow, 'GET, HEAD');
      assert.equal(r.headers['ratelimit-remaining'], undefined, 'no quota touched');
    }
    const prop = await send(t.port, '/notify/v1/x', { method: 'PROPFIND', headers: { 'X-API-Key': key } });
    assert.equal(prop.status, 405, 'a route without a list forwards the default methods only');
    assert.equal(prop.headers.allow, DEFAULT_ALLOW);
    assert.equal(await seriesValue(t.gw.metrics.authFailures, { reason: 'unknown' }), failures);
    assert.equal(upstream.received.length, 0);
    // GET implies HEAD; a listed uncommon method passes; the quota (3) was untouched by the 405s.
    const get = await send(t.port, '/read-only/x', { headers: { 'X-API-Key': key } });
    assert.equal(get.status, 200);
    assert.equal(get.headers['ratelimit-remaining'], '2');
    assert.equal(
      (await send(t.port, '/read-only/x', { method: 'HEAD', headers: { 'X-API-Key': key } })).status,
      200,
    );
    assert.equal(
      (await send(t.port, '/dav/x', { method: 'PROPFIND', headers: { 'X-API-Key': key } })).status,
      200,
    );
    assert.deepEqual(
      upstream.received.map((r) => `${r.method} ${r.url}`),
      ['GET /read-only/x', 'HEAD /read-only/x', 'PROPFIND /dav/x'],
    );
  });

  test('finding 13: two Host lines or an invalid Host value → 400, connection closed, nothing forwarded', async () => {
    const hosts: Record<string, string> = {
      'two Host lines': 'Host: a.example\r\nHost: b.example',
      'two equal Host lines': 'Host: a.example\r\nhost: a.example',
      'a space': 'Host: a b',
      'a comma': 'Host: a.example,b.example',
      userinfo: 'Host: user@a.example',
      'empty value': 'Host: ',
      'two ports': 'Host: a.example:80:81',
      'non-digit port': 'Host: a.example:8o',
      'port too long': 'Host: a.example:123456',
      'a slash': 'Host: a.example/x',
      'a %-escape': 'Host: a%2eexample',
      'unclosed IP literal': 'Host: [::1',
    };
    for (const path of ['/notify/v1/x', '/healthz']) {
      for (const [name, host] of Object.entries(hosts)) {
        const started = Date.now();
        const raw = await sendRaw(
          t.port,
          `GET ${path} HTTP/1.1\r\n${host}\r\nX-API-Key: ${key}\r\n\r\n`,
          3000,
        );
        const res = parseRaw(raw);
        assert.equal(res.status, 400, `${path}, ${name}`);
        assert.equal(res.body, BAD_BODY, `${path}, ${name}`);
        assert.equal(res.headers.get('connection'), 'close', `${path}, ${name}`);
        assert.ok(Date.now() - started < 2500, `${path}, ${name}: the connection was closed`);
      }
    }
    assert.equal(upstream.received.length, 0);
  });

  test('finding 13: valid Host forms pass (name, IPv4, IPv6 literal, with a port; none for HTTP/1.0)', async () => {
    for (const host of [
      'a.example',
      'a.example:8080',
      '127.0.0.1',
      '[::1]:80',
      'svc_name.ns.svc.cluster.local.',
    ]) {
      const raw = await sendRaw(
        t.port,
        `GET /read-only/h HTTP/1.1\r\nHost: ${host}\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
        3000,
      );
      // The tier allows 3 requests a minute: a 429 still proves the Host passed the guard.
      assert.match(raw, /^HTTP\/1\.1 (200|429) /, host);
    }
    const old = await sendRaw(t.port, `GET /healthz HTTP/1.0\r\n\r\n`, 3000);
    assert.match(old, /^HTTP\/1\.1 200 /);
  });

  test('finding 13: absolute-form and authority-form targets → 400, nothing forwarded', async () => {
    for (const target of [
      `http://127.0.0.1:${upstream.port}/notify/v1/x`,
      'http://x/notify/v1/x',
      'https://x/healthz',
      'HTTP://x/notify/v1/x',
      'x:80',
      '*',
    ]) {
      const raw = await sendRaw(
        t.port,
        `GET ${target} HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\n\r\n`,
        3000,
      );
      const res = parseRaw(raw);
      assert.equal(res.status, 400, target);
      assert.equal(res.body, BAD_BODY, target);
    }
    assert.equal(upstream.received.length, 0);
  });
});
