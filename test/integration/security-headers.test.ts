import assert from 'node:assert/strict';
import { request, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { ConfigInput } from '../../src/config/schema.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { sendRaw } from '../helpers/http.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/**
 * Security headers (finding 11 of issue 10): on proxied answers per `securityHeaders.proxied`
 * (fill by default: the upstream's own values win), HSTS only over HTTPS, and the full set on
 * every answer the gateway makes itself, also those written straight to the socket.
 */

const UPSTREAM_CSP = "default-src 'self'";
/** What the gateway adds besides CSP/X-Frame-Options/HSTS (a sample of helmet's set). */
const FILLED = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'x-permitted-cross-domain-policies': 'none',
};

/** A GET from a loopback source address; resolves with status and headers. */
function get(
  port: number,
  path: string,
  opts: { from?: string; headers?: Record<string, string> } = {},
): Promise<{ status: number; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, localAddress: opts.from, agent: false, headers: opts.headers },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function assertGatewaySet(h: IncomingHttpHeaders, label: string): void {
  assert.match(String(h['content-security-policy']), /default-src 'none'/, label);
  assert.equal(h['x-frame-options'], 'SAMEORIGIN', label);
  for (const [name, value] of Object.entries(FILLED)) assert.equal(h[name], value, `${label}: ${name}`);
}

describe('security headers on proxied and gateway-made answers', () => {
  let upstream: RecordingUpstream;
  const gateways: Record<string, TestGateway> = {};
  /** One key per gateway (each has its own memory store). */
  const keys: Record<string, string> = {};

  before(async () => {
    upstream = await startUpstream();
    // The upstream sets a CSP and X-Frame-Options of its own, and HSTS over plain HTTP.
    upstream.handle((_req, res) => {
      res.setHeader('Content-Security-Policy', UPSTREAM_CSP);
      res.setHeader('X-Frame-Options', 'DENY');
      res.setHeader('Content-Type', 'application/json');
      res.end('{"ok":true}');
    });
    const base = (proxied?: 'fill' | 'override' | 'off'): ConfigInput => ({
      store: { type: 'memory' },
      server: { trustedProxies: ['127.0.0.2'] },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      ...(proxied ? { securityHeaders: { proxied } } : {}),
      log: { level: 'warn' },
    });
    for (const mode of ['default', 'override', 'off'] as const) {
      const t = await startTestGateway(base(mode === 'default' ? undefined : mode));
      gateways[mode] = t;
      assert.ok((await t.gw.service.createCompany({ id: 'acme', tier: 'standard' })).ok);
      const k = await t.gw.service.createKey('acme', {});
      assert.ok(k.ok);
      keys[mode] = k.value.key;
    }
  });
  after(async () => {
    await Promise.all(Object.values(gateways).map((t) => t.close()));
    await upstream?.close();
  });

  test('default (fill): the upstream’s own CSP and X-Frame-Options win, the others are added, no HSTS over HTTP', async () => {
    const t = gateways.default!;
    const before = upstream.received.length;
    const r = await get(t.port, '/notify/v1/x', { headers: { 'X-API-Key': keys.default! } });
    assert.equal(r.status, 200);
    assert.equal(upstream.received.length, before + 1);
    assert.equal(r.headers['content-security-policy'], UPSTREAM_CSP);
    assert.equal(r.headers['x-frame-options'], 'DENY');
    for (const [name, value] of Object.entries(FILLED)) assert.equal(r.headers[name], value, name);
    assert.equal(r.headers['strict-transport-security'], undefined, 'HSTS over plain HTTP');
  });

  test('HSTS only over HTTPS: X-Forwarded-Proto https from a trusted proxy, never from anyone else', async () => {
    const t = gateways.default!;
    const viaProxy = await get(t.port, '/notify/v1/x', {
      from: '127.0.0.2',
      headers: { 'X-API-Key': keys.default!, 'X-Forwarded-Proto': 'https' },
    });
    assert.equal(viaProxy.status, 200);
    assert.match(String(viaProxy.headers['strict-transport-security']), /^max-age=\d+/);
    const claimed = await get(t.port, '/notify/v1/x', {
      headers: { 'X-API-Key': keys.default!, 'X-Forwarded-Proto': 'https' },
    });
    assert.equal(claimed.status, 200);
    assert.equal(claimed.headers['strict-transport-security'], undefined);
    const denied = await get(t.port, '/notify/v1/x', {
      from: '127.0.0.2',
      headers: { 'X-Forwarded-Proto': 'https' },
    });
    assert.equal(denied.status, 401);
    assert.match(String(denied.headers['strict-transport-security']), /^max-age=\d+/);
  });

  test('override: the gateway’s set replaces the upstream’s', async () => {
    const r = await get(gateways.override!.port, '/notify/v1/x', {
      headers: { 'X-API-Key': keys.override! },
    });
    assert.equal(r.status, 200);
    assertGatewaySet(r.headers, 'override');
    assert.equal(r.headers['strict-transport-security'], undefined);
  });

  test('off: a proxied answer carries only the upstream’s headers', async () => {
    const r = await get(gateways.off!.port, '/notify/v1/x', { headers: { 'X-API-Key': keys.off! } });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-security-policy'], UPSTREAM_CSP);
    assert.equal(r.headers['x-frame-options'], 'DENY');
    for (const name of Object.keys(FILLED)) assert.equal(r.headers[name], undefined, name);
    assert.ok(r.headers['x-request-id'], 'the request id is not a security header');
  });

  test('gateway-made answers carry the full set in every mode: 401, 404, 405, probes, socket-level 400 and 405', async () => {
    for (const mode of ['default', 'override', 'off']) {
      const t = gateways[mode]!;
      for (const [path, status, headers] of [
        ['/notify/v1/x', 401, {}],
        ['/elsewhere', 404, {}],
        ['/healthz', 200, {}],
        ['/readyz', 200, {}],
        ['/notify/v1/x?api_key=abc', 401, {}],
      ] as const) {
        const r = await get(t.port, path, { headers });
        assert.equal(r.status, status, `${mode} ${path}`);
        assertGatewaySet(r.headers, `${mode} ${path}`);
        assert.equal(r.headers['strict-transport-security'], undefined, `${mode} ${path}`);
      }
      for (const raw of [
        `TRACE /notify/v1/x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        `CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n`,
        `GET /notify/v1/x HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n`,
        `GET /notify/v1/x HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`,
      ]) {
        const res = await sendRaw(t.port, raw, 3000);
        const head = res.slice(0, res.indexOf('\r\n\r\n')).toLowerCase();
        assert.match(head, /^http\/1\.1 (400|405) /, raw);
        assert.match(head, /\r\ncontent-security-policy: default-src 'none'/, raw);
        assert.match(head, /\r\nx-content-type-options: nosniff/, raw);
        assert.match(head, /\r\nx-frame-options: sameorigin/, raw);
        assert.ok(!head.includes('strict-transport-security'), raw);
      }
    }
  });
});
