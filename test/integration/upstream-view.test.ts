import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { verifyGatewaySignature } from '../../src/signing.js';
import { gatewayWithUpstream, type TestGateway } from '../helpers/gateway.js';
import { send, sendFrom, sendRaw } from '../helpers/http.js';
import type { Received, RecordingUpstream } from '../helpers/upstream.js';

/**
 * What crosses the gateway (INVARIANTS #9, #10, #1): each test asserts on exactly what the
 * recording upstream saw (raw header list, path) or on the raw bytes the client got.
 */

const SECRET = 'a-shared-signing-secret-of-32-chars-or-more';

/** Lowercased names of the raw header list the upstream received, in order. */
function namesOf(r: Received): string[] {
  return r.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
}

function valuesOf(r: Received, name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < r.rawHeaders.length; i += 2)
    if (r.rawHeaders[i]!.toLowerCase() === name) out.push(r.rawHeaders[i + 1]!);
  return out;
}

const b64 = (s: string) => Buffer.from(s, 'latin1').toString('base64');
const b64url = (s: string) => Buffer.from(s, 'latin1').toString('base64url');
const pct = (s: string) => [...s].map((c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join('');

/** Every form of the key this file sends, for the "not anywhere" check. */
function keyForms(key: string): string[] {
  return [key, key.toLowerCase(), key.toUpperCase(), pct(key), pct(key).toUpperCase(), b64(key), b64url(key)];
}

function assertNoKey(r: Received, key: string, label: string): void {
  const text = JSON.stringify(r.rawHeaders) + '\n' + r.url;
  for (const form of keyForms(key))
    assert.ok(!text.includes(form), `${label}: a form of the key reached the upstream`);
  // Base64 at any alignment: the core of the encoding of the key after 0, 1 or 2 other bytes.
  for (let i = 0; i < 3; i++) {
    const core = b64('\0'.repeat(i) + key).slice(
      Math.ceil((i * 8) / 6),
      Math.floor(((i + key.length) * 8) / 6),
    );
    const plain = text.replace(/-/g, '+').replace(/_/g, '/');
    assert.ok(!plain.includes(core), `${label}: the key reached the upstream in base64 (offset ${i})`);
  }
}

describe('what the upstream and the client see', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;

  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream((u) => ({
      server: { trustedProxies: ['127.0.0.2'] },
      routes: [
        { prefix: '/notify/v1', target: u.url },
        { prefix: '/based', target: `${u.url}/base` },
        { prefix: '/slashed', target: `${u.url}/base/` },
      ],
      headers: { acceptClientRequestId: true },
      rateLimit: { tiers: [{ name: 'standard', points: 100_000, duration: 60 }] },
    })));
  });
  after(() => close?.());
  beforeEach(() => {
    upstream.received.length = 0;
    upstream.handle((_req, res) => {
      res.setHeader('Content-Type', 'application/json');
      res.end('{"ok":true}');
    });
  });

  // Upper or lower case, separators and hex are the strict level's (test/integration/guard-levels.test.ts).
  test('a copy of the key in any other header, as sent, %-encoded or in base64, never reaches the upstream', async () => {
    const cases: [string, string][] = [
      ['Authorization', `Bearer ${key}`],
      ['Authorization', `bearer    ${key}   `],
      ['Authorization', `Basic ${b64(`${key}:`)}`],
      ['Authorization', `Basic ${b64(`user:${key}`)}`],
      ['Authorization', `Basic ${b64(`ab:${key}`)}`],
      ['Authorization', `basic ${b64url(`${key}:`)}`],
      ['X-Auth', key],
      ['X-Auth', pct(key)],
      ['X-Auth', pct(key).toUpperCase()],
      ['X-Auth', pct(pct(key))],
      ['X-Auth', encodeURIComponent(`Bearer ${key}`)],
      ['X-Auth', `prefix-${b64('x' + key)}`],
      ['X-Auth', encodeURIComponent(b64(`u:${key}`))],
      ['X-Token', `eyJhbGciOiJub25lIn0.${b64url(JSON.stringify({ k: key }))}.`],
      ['Tracestate', `vendor=${key}`],
      ['X-Request-Id', key],
      [`X-${key}`, '1'],
    ];
    for (const [name, value] of cases) {
      upstream.received.length = 0;
      const label = `${name}: ${value.slice(0, 24)}…`;
      const r = await send(t.port, '/notify/v1/x', {
        headers: [
          ['X-API-Key', key],
          [name, value],
          ['X-Innocent', 'stays'],
        ],
      });
      assert.equal(r.status, 200, label);
      const got = upstream.received[0]!;
      assertNoKey(got, key, label);
      assert.ok(
        !namesOf(got).includes(name.toLowerCase()) || name === 'X-Request-Id',
        `${label}: header kept`,
      );
      assert.deepEqual(valuesOf(got, 'x-innocent'), ['stays'], `${label}: an unrelated header was dropped`);
      // A request id made of the key is never adopted: not for the upstream, the client or the log.
      assert.ok(!String(r.headers['x-request-id']).includes(key), label);
    }
    assert.ok(!t.logText().includes(key), 'the key reached the log');
  });

  test('only the cookie pair that holds the key is dropped; headers without the key pass', async () => {
    const cookies: [string, string | undefined][] = [
      [`a=1; session=${key}; b=2`, 'a=1; b=2'],
      [`a=1;tok=${pct(key)};b=2`, 'a=1; b=2'],
      [`auth=${b64(`${key}:`)}; theme=dark`, 'theme=dark'],
      [`${key}=1; theme=dark`, 'theme=dark'],
      [`only=${key}`, undefined],
    ];
    for (const [sent, expected] of cookies) {
      upstream.received.length = 0;
      const r = await send(t.port, '/notify/v1/x', {
        headers: [
          ['X-API-Key', key],
          ['Cookie', sent],
        ],
      });
      assert.equal(r.status, 200);
      const got = upstream.received[0]!;
      assertNoKey(got, key, sent);
      assert.deepEqual(valuesOf(got, 'cookie'), expected === undefined ? [] : [expected], sent);
    }
    upstream.received.length = 0;
    await send(t.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', key],
        ['Authorization', 'Bearer some-other-credential'],
        ['Cookie', 'a=1; b=2'],
      ],
    });
    const got = upstream.received[0]!;
    assert.deepEqual(valuesOf(got, 'authorization'), ['Bearer some-other-credential']);
    assert.deepEqual(valuesOf(got, 'cookie'), ['a=1; b=2']);
  });

  test('the key in Host or in a trusted proxy’s X-Forwarded-* is not echoed into X-Forwarded-*', async () => {
    const viaHost = await send(t.port, '/notify/v1/x', {
      headers: [
        ['Host', key],
        ['X-API-Key', key],
      ],
    });
    // Refusing such a Host is fine too; forwarding it is not.
    assert.ok(viaHost.status === 200 || viaHost.status === 400, String(viaHost.status));
    for (const r of upstream.received) assertNoKey(r, key, 'Host');
    upstream.received.length = 0;
    const viaProxy = await sendFrom('127.0.0.2', t.port, '/notify/v1/x', [
      ['X-API-Key', key],
      ['X-Forwarded-For', `${key}, 203.0.113.9`],
      ['X-Forwarded-Host', key],
    ]);
    assert.equal(viaProxy.status, 200);
    const got = upstream.received[0]!;
    assertNoKey(got, key, 'trusted X-Forwarded-*');
    assert.deepEqual(valuesOf(got, 'x-forwarded-for'), ['127.0.0.2']);
    assert.deepEqual(valuesOf(got, 'x-forwarded-host'), [`127.0.0.1:${t.port}`]);
  });

  const FAMILY: [string, string][] = [
    ['X-Forwarded-Port', '1'],
    ['X-Forwarded-Prefix', '/admin'],
    ['X-Forwarded-Ssl', 'on'],
    ['X-Forwarded-Scheme', 'https'],
    ['X-Forwarded-Server', 'evil.example'],
    ['X-Forwarded-Uri', '/admin'],
    ['X-Forwarded-Path', '/admin'],
    ['X-Forwarded-Url', 'http://evil.example/admin'],
    ['X-Forwarded-Client-Cert', 'Hash=evil'],
    ['X-Forwarded-Whatever', 'evil'],
    ['X_Forwarded_Port', '2'],
    ['X-Original-URL', '/admin'],
    ['X-Original-Uri', '/admin'],
    ['X-Original-Host', 'evil.example'],
    ['X-Rewrite-URL', '/admin'],
    ['X-Original-Forwarded-For', '6.6.6.6'],
    ['True-Client-IP', '6.6.6.6'],
    ['X-Client-IP', '6.6.6.6'],
    ['CF-Connecting-IP', '6.6.6.6'],
    ['X-Cluster-Client-IP', '6.6.6.6'],
    ['Fastly-Client-IP', '6.6.6.6'],
    ['X-ProxyUser-Ip', '6.6.6.6'],
    ['Client-IP', '6.6.6.6'],
    ['X-Real-IP', '6.6.6.6'],
    ['Forwarded', 'for=6.6.6.6;host=evil.example'],
    ['X-Host', 'evil.example'],
    ['X-HTTP-Host-Override', 'evil.example'],
    ['X-HTTP-Method-Override', 'DELETE'],
    ['X-HTTP-Method', 'DELETE'],
    ['X-Method-Override', 'DELETE'],
    ['Proxy-Authorization', 'Basic ZXZpbDpldmls'],
    ['Proxy-Connection', 'keep-alive'],
    ['HTTP2-Settings', 'AAMAAABkAARAAAAAAAIAAAAA'],
  ];
  /** Passed from a trusted proxy (they describe its connection); everything else above never passes. */
  const FROM_TRUSTED = new Set([
    'x-forwarded-port',
    'x_forwarded_port',
    'x-forwarded-ssl',
    'x-forwarded-scheme',
    'x-forwarded-server',
    'x-forwarded-client-cert',
    'x-forwarded-whatever',
  ]);

  test('forwarding, client-IP, URL- and method-override headers from an untrusted peer never pass', async () => {
    const r = await send(t.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', key],
        ['X-Forwarded-For', '6.6.6.6'],
        ['X-Forwarded-Host', 'evil.example'],
        ...FAMILY,
      ],
    });
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    const names = namesOf(got);
    for (const [name] of FAMILY)
      assert.ok(!names.includes(name.toLowerCase()), `${name} reached the upstream`);
    assert.deepEqual(valuesOf(got, 'x-forwarded-for'), ['127.0.0.1']);
    assert.deepEqual(valuesOf(got, 'x-forwarded-proto'), ['http']);
    assert.deepEqual(valuesOf(got, 'x-forwarded-host'), [`127.0.0.1:${t.port}`]);
    assert.ok(!/evil|6\.6\.6\.6|admin|DELETE/.test(JSON.stringify(got.rawHeaders)));
    assert.equal(got.method, 'GET');
  });

  test('from a trusted proxy, X-Forwarded-For is appended and -Host believed; overrides still never pass', async () => {
    const r = await sendFrom('127.0.0.2', t.port, '/notify/v1/x', [
      ['X-API-Key', key],
      ['X-Forwarded-For', '203.0.113.9'],
      ['X-Forwarded-Host', 'api.example'],
      ['X-Forwarded-Proto', 'https'],
      ...FAMILY,
    ]);
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    const names = namesOf(got);
    for (const [name] of FAMILY) {
      const n = name.toLowerCase();
      if (FROM_TRUSTED.has(n))
        assert.equal(names.filter((x) => x === n).length, 1, `${name} from a trusted proxy`);
      else assert.ok(!names.includes(n), `${name} reached the upstream from a trusted proxy`);
    }
    assert.deepEqual(valuesOf(got, 'x-forwarded-for'), ['203.0.113.9, 127.0.0.2']);
    assert.deepEqual(valuesOf(got, 'x-forwarded-host'), ['api.example']);
    assert.deepEqual(valuesOf(got, 'x-forwarded-proto'), ['https']);
  });

  test('headers named in the client’s Connection never reach the upstream', async () => {
    const r = await send(t.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', key],
        ['Connection', 'keep-alive,X-One ,  x-TWO'],
        ['Connection', 'X-Three'],
        ['X-One', '1'],
        ['X-Two', '2'],
        ['X-Three', '3'],
        ['X-Four', '4'],
        ['Keep-Alive', 'timeout=5'],
        ['TE', 'trailers'],
        ['Upgrade', 'h2c'],
      ],
    });
    assert.equal(r.status, 200);
    const names = namesOf(upstream.received[0]!);
    for (const n of ['x-one', 'x-two', 'x-three', 'keep-alive', 'te', 'upgrade'])
      assert.ok(!names.includes(n), `${n} reached the upstream`);
    assert.ok(names.includes('x-four'));
  });

  test('the upstream’s hop-by-hop headers never reach the client', async () => {
    upstream.handle((_req, res) => {
      res.setHeader('Connection', 'keep-alive, X-Internal-Debug, X-Other-Internal');
      res.setHeader('X-Internal-Debug', 'db=10.0.0.5');
      res.setHeader('X-Other-Internal', 'secret');
      res.setHeader('Keep-Alive', 'timeout=99');
      res.setHeader('Proxy-Authenticate', 'Basic realm="internal"');
      res.setHeader('Proxy-Connection', 'keep-alive');
      res.setHeader('Upgrade', 'h2c');
      res.setHeader('Trailer', 'X-Checksum');
      res.setHeader('Transfer-Encoding', 'chunked');
      res.setHeader('X-Kept', 'yes');
      res.write('hello ');
      res.addTrailers({ 'X-Checksum': 'abc' });
      res.end('world');
    });
    const raw = await sendRaw(
      t.port,
      `GET /notify/v1/x HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nConnection: close\r\n\r\n`,
      3000,
    );
    const [head, body] = [raw.slice(0, raw.indexOf('\r\n\r\n')), raw.slice(raw.indexOf('\r\n\r\n') + 4)];
    assert.match(head, /^HTTP\/1\.1 200 /);
    const names = head
      .split('\r\n')
      .slice(1)
      .map((l) => l.slice(0, l.indexOf(':')).toLowerCase());
    for (const n of [
      'x-internal-debug',
      'x-other-internal',
      'keep-alive',
      'proxy-authenticate',
      'proxy-connection',
      'upgrade',
      'trailer',
    ])
      assert.ok(!names.includes(n), `${n} reached the client`);
    assert.deepEqual(
      names.filter((n) => n === 'connection' || n === 'transfer-encoding'),
      ['connection', 'transfer-encoding'],
    );
    assert.match(head, /\r\nConnection: close(\r\n|$)/i);
    assert.match(head, /\r\nTransfer-Encoding: chunked(\r\n|$)/i);
    assert.match(head, /\r\nX-Kept: yes/i);
    // Framed by the gateway, and no trailer section.
    assert.equal(body, '6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n');
  });

  test('Proxy-Authenticate on a 407 and Upgrade on a 426 do not pass either', async () => {
    upstream.handle((_req, res) => {
      res.writeHead(407, { 'Proxy-Authenticate': 'Basic realm="internal"', 'Content-Length': '0' });
      res.end();
    });
    const r = await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': key } });
    assert.equal(r.status, 407);
    assert.equal(r.headers['proxy-authenticate'], undefined);
    upstream.handle((_req, res) => {
      res.writeHead(426, { Upgrade: 'TLS/1.2', Connection: 'Upgrade', 'Content-Length': '0' });
      res.end();
    });
    const u = await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': key } });
    assert.equal(u.status, 426);
    assert.equal(u.headers.upgrade, undefined);
    assert.notEqual(String(u.headers.connection).toLowerCase(), 'upgrade');
  });

  test('the upstream receives the path and query exactly as sent', async () => {
    const exact = [
      '/notify/v1',
      '/notify/v1?',
      '/notify/v1/http:/evil',
      '/notify/v1/https:/evil/x',
      '/notify/v1/x/http:/evil?u=http://evil//x',
      '/notify/v1/a;b=c/d;e',
      '/notify/v1/a%2Fb%2f',
      '/notify/v1/%7e%41%20x',
      '/notify/v1/x?',
      '/notify/v1/x??a=1',
      '/notify/v1/x?a=1&&b=%zz&c=%2F%2F&d=//e',
      "/notify/v1/x'!$&()*+,=@:",
      '/notify/v1/x/',
      // `...` alone is a dot-like segment (refused); dots inside names pass.
      '/notify/v1/.x/..y/...z',
    ];
    for (const path of exact) {
      upstream.received.length = 0;
      const r = await send(t.port, path, { headers: { 'X-API-Key': key } });
      assert.equal(r.status, 200, path);
      assert.equal(upstream.received[0]?.url, path);
    }
  });

  test('a target with a base path gets it prepended, nothing else changes', async () => {
    const cases: [string, string][] = [
      ['/based', '/base/based'],
      ['/based/x', '/base/based/x'],
      ['/based/http:/evil?q=1', '/base/based/http:/evil?q=1'],
      ['/based/a%2F;x=1/?', '/base/based/a%2F;x=1/?'],
      ['/slashed/x', '/base/slashed/x'],
      ['/slashed/https:/y', '/base/slashed/https:/y'],
    ];
    for (const [sent, expected] of cases) {
      upstream.received.length = 0;
      const r = await send(t.port, sent, { headers: { 'X-API-Key': key } });
      assert.equal(r.status, 200, sent);
      assert.equal(upstream.received[0]?.url, expected, sent);
    }
  });

  test('paths an upstream could resolve elsewhere are refused, never rewritten and forwarded', async () => {
    for (const path of [
      '//notify/v1/x',
      '/notify/v1//x',
      '/notify/v1/./x',
      '/notify/v1/../x',
      '/notify/v1/%2e%2e/x',
      '/notify/v1/%2E/x',
      '/notify/v1/..;/x',
      '/notify/v1/x/..',
    ]) {
      const r = await send(t.port, path, { headers: { 'X-API-Key': key } });
      assert.equal(r.status, 400, path);
    }
    assert.equal(upstream.received.length, 0);
  });
});

describe('configured names and signatures', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;

  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream((u) => ({
      routes: [{ prefix: '/notify/v1', target: `${u.url}/base` }],
      signing: { enabled: true, secret: SECRET },
      // One upstream socket: concurrent requests wait for it (see the saturation test).
      upstream: { maxSockets: 1 },
      headers: { stripFromClients: ['X-Internal-Token', 'X-Debug-*'] },
    })));
  });
  after(() => close?.());

  test('headers.stripFromClients: named headers and prefixes never reach the upstream', async () => {
    const r = await send(t.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', key],
        ['X-Internal-Token', 'a'],
        ['x_internal_token', 'b'],
        ['X-Debug-Mode', 'c'],
        ['X-Debug-', 'd'],
        ['X-Debugger', 'kept'],
      ],
    });
    assert.equal(r.status, 200);
    const names = namesOf(upstream.received[0]!);
    assert.ok(!names.some((n) => /internal|debug-/.test(n)), names.join());
    assert.ok(names.includes('x-debugger'));
  });

  test('the signature covers exactly the path the upstream received', async () => {
    for (const path of ['/notify/v1/http:/evil', '/notify/v1/a%2F;b?c=//d', '/notify/v1?']) {
      upstream.received.length = 0;
      const r = await send(t.port, path, { headers: { 'X-API-Key': key } });
      assert.equal(r.status, 200, path);
      const got = upstream.received[0]!;
      assert.equal(got.url, `/base${path}`);
      const check = verifyGatewaySignature(
        { method: got.method, url: got.url, headers: got.headers },
        { secret: SECRET },
      );
      assert.equal(check.ok, true, `${path}: ${JSON.stringify(check)}`);
    }
  });

  test('with every upstream socket busy, paths and signatures stay exact (no crash, no rejoined path)', async () => {
    // With the agent's sockets all in use, the request is written before a socket is assigned:
    // the path and the signature must be set before that, not on the socket event.
    upstream.received.length = 0;
    upstream.handle((_req, res) => setTimeout(() => res.end('{}'), 20));
    const paths = Array.from({ length: 6 }, (_, i) => `/notify/v1/http:/evil/${i}`);
    const replies = await Promise.all(
      paths.map((p, i) =>
        send(t.port, p, {
          method: i % 2 ? 'POST' : 'GET',
          headers: { 'X-API-Key': key },
          body: i % 2 ? 'x' : undefined,
        }),
      ),
    );
    assert.deepEqual(
      replies.map((r) => r.status),
      paths.map(() => 200),
    );
    assert.deepEqual(upstream.received.map((r) => r.url).sort(), paths.map((p) => `/base${p}`).sort());
    for (const got of upstream.received) {
      const check = verifyGatewaySignature(
        { method: got.method, url: got.url, headers: got.headers },
        { secret: SECRET },
      );
      assert.equal(check.ok, true, got.url);
    }
  });
});

describe('a key scoped to one path cannot leave it through double encoding (B2)', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;

  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream(
      {},
      {
        company: 'scoped',
        keyScopes: [{ route: '/notify/v1', methods: ['GET'], paths: ['/notify/v1/health'] }],
      },
    ));
  });
  after(() => close?.());

  test('every spelling is refused with the path-check 400 and the upstream sees nothing', async () => {
    // The scope holds: in scope forwards, out of scope is 403.
    assert.equal((await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': key } })).status, 200);
    assert.equal((await send(t.port, '/notify/v1/otps', { headers: { 'X-API-Key': key } })).status, 403);
    upstream.received.length = 0;
    for (const seg of [
      '%25%32%65%25%32%65',
      '%%32e%%32e',
      '%2%65%2%65',
      '%25252e%25252e',
      '%252e%252e',
      '..%25%35%63otps',
      '%2525252e%2525252e',
      '%25%32%45.',
    ]) {
      const r = await send(t.port, `/notify/v1/health/${seg}/otps`, { headers: { 'X-API-Key': key } });
      assert.equal(r.status, 400, seg);
      assert.deepEqual(r.json, { error: 'Bad Request', details: 'Malformed request' }, seg);
    }
    assert.deepEqual(
      upstream.received.map((r) => r.url),
      [],
      'nothing was forwarded',
    );
  });
});

describe('identity, certificate, client-IP, override and tenant headers never arrive (B5)', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;

  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream());
  });
  after(() => close?.());

  test('sent by an untrusted peer with a valid key: none reaches the upstream, ordinary headers do', async () => {
    const asserted = [
      'X-Consumer-ID',
      'X-Consumer-Username',
      'X-Consumer-Custom-ID',
      'X-Credential-Identifier',
      'X-Anonymous-Consumer',
      'X-Userinfo',
      'X-Authenticated-Scope',
      'X-Authenticated-Userid',
      'X-Jwt-Claim-Sub',
      'X-SSL-Client-Cert',
      'X-SSL-Client-Verify',
      'X-Client-Cert',
      'Ssl-Client-Verify',
      'X-Client-Verify',
      'X-Client-DN',
      'CF-Connecting-IPv6',
      'X-Real-Client-IP',
      'X-Azure-ClientIP',
      'X-Azure-SocketIP',
      'X-Appengine-User-IP',
      'Akamai-Client-IP',
      'Fastly-Client-IP',
      'X-ProxyUser-Ip',
      'X-Envoy-External-Address',
      'X-Override-URL',
      'X-Rewrite-Path',
      'X-HTTP-Destination-URL',
      'X-Method',
      '_method',
      'X-HTTP-Method',
      'X-Method-Override',
      'X-Tenant-Id',
      'X-Company',
      'Company-Id',
      'XCompanyId',
      'X-User-Id',
      'X-Remote-User',
      'Remote-User',
      'X-Auth-User',
      'X-Forwarded-User',
      'X-Forwarded-Email',
      'X-Forwarded-Groups',
      'X-Auth-Request-User',
      'X-Auth-Request-Email',
      'X-Amzn-Oidc-Identity',
      'X-Goog-Authenticated-User-Email',
      'X-MS-Client-Principal-Name',
    ];
    const r = await send(t.port, '/notify/v1/health', {
      headers: [
        ['X-API-Key', key],
        ...asserted.map((n): [string, string] => [n, `asserted-${n}`]),
        ['X-Client-Version', 'kept-1'],
        ['X-Correlation-Id', 'kept-2'],
      ],
    });
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    const leaked = [];
    for (let i = 0; i < got.rawHeaders.length; i += 2)
      if (got.rawHeaders[i + 1]!.startsWith('asserted-')) leaked.push(got.rawHeaders[i]);
    assert.deepEqual(leaked, [], 'client-asserted headers reached the upstream');
    assert.equal(got.headers['x-client-version'], 'kept-1');
    assert.equal(got.headers['x-correlation-id'], 'kept-2');
    assert.equal(got.headers['x-company-id'], 'acme', 'the identity is the one the gateway sets');
  });
});
