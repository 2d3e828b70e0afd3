import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, beforeEach, describe, test } from 'node:test';
import { generateApiKey } from '../../src/auth/api-key.js';
import { createCompanyAndKey } from '../helpers/admin.js';
import { gatewayWithUpstream, type GatewayWithUpstream } from '../helpers/gateway.js';
import { eventually, send, type Reply } from '../helpers/http.js';
import type { Received } from '../helpers/upstream.js';

/**
 * `guards.level` through a real gateway and a recording upstream (INVARIANTS #1, #9): what the
 * default level finds (the copies an honest client makes by mistake) and what it leaves, on
 * purpose, to the strict level (encodings only a deliberate client builds; docs/security.md,
 * threat model non-goal N1); and every client value the gateway echoes or logs.
 */

const KEY_IN_URL = {
  error: 'Unauthorized',
  details: 'API key must be sent in the X-API-Key header, not in the URL',
};
const b64 = (s: string, enc: 'base64' | 'base64url' = 'base64') => Buffer.from(s, 'latin1').toString(enc);
const pct = (s: string) => [...s].map((c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join('');
const bodyOf = (key: string) => key.slice(key.indexOf('_', 3) + 1);

function valuesOf(r: Received, name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < r.rawHeaders.length; i += 2)
    if (r.rawHeaders[i]!.toLowerCase() === name) out.push(r.rawHeaders[i + 1]!);
  return out;
}

/** A request from a chosen loopback address with a raw header list. */
function sendFrom(
  localAddress: string,
  port: number,
  path: string,
  headers: [string, string][],
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        localAddress,
        agent: false,
        headers: ['Host', `127.0.0.1:${port}`, ...headers.flat()],
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('guards.level: default finds what an honest client leaks, strict also what a deliberate one builds', () => {
  let def: GatewayWithUpstream;
  let strict: GatewayWithUpstream;
  const config = {
    rateLimit: {
      tiers: [{ name: 'standard', points: 100_000, duration: 60 }],
      authFailures: { enabled: false },
    },
  };
  before(async () => {
    def = await gatewayWithUpstream(config);
    strict = await gatewayWithUpstream({ ...config, guards: { level: 'strict' } });
  });
  after(async () => {
    await def?.close();
    await strict?.close();
  });
  beforeEach(() => {
    def.upstream.received.length = 0;
    strict.upstream.received.length = 0;
  });

  /** Sends `value` in a header and a cookie pair with the gateway's key; what the upstream got. */
  async function carried(g: GatewayWithUpstream, value: string): Promise<Received> {
    g.upstream.received.length = 0;
    const r = await send(g.t.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', g.key],
        ['X-Copy', value],
        ['Cookie', `a=1; s=${value}`],
        ['X-Innocent', 'stays'],
      ],
    });
    assert.equal(r.status, 200);
    const got = g.upstream.received[0]!;
    assert.deepEqual(valuesOf(got, 'x-innocent'), ['stays']);
    return got;
  }

  const FOUND: [string, (k: string) => string][] = [
    ['the key', (k) => k],
    ['the body without its prefix', bodyOf],
    ['the key without its checksum', (k) => k.slice(0, -6)],
    ['%-encoded', pct],
    ['%-encoded three times', (k) => pct(k).replace(/%/g, '%2525')],
    ['Basic credentials', (k) => `Basic ${b64(`${k}:`)}`],
    ['base64url in a JWT payload', (k) => `e30.${b64(JSON.stringify({ k }), 'base64url')}.`],
  ];
  const LEFT: [string, (k: string) => string][] = [
    ['upper case', (k) => k.toUpperCase()],
    ['hex', (k) => Buffer.from(k).toString('hex')],
    ['\\u escapes', (k) => [...k].map((c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join('')],
    ['dots between characters', (k) => k.split('').join('.')],
    ['base64 of base64', (k) => b64(b64(k))],
  ];

  test('default: the copies an honest client makes, in a header or a cookie pair, are dropped', async () => {
    for (const [label, form] of FOUND) {
      const got = await carried(def, form(def.key));
      assert.deepEqual(valuesOf(got, 'x-copy'), [], label);
      assert.deepEqual(valuesOf(got, 'cookie'), ['a=1'], label);
    }
  });

  test('default leaves self-made encodings of the own key (non-goal); strict drops them', async () => {
    for (const [label, form] of LEFT) {
      const d = await carried(def, form(def.key));
      assert.deepEqual(valuesOf(d, 'x-copy'), [form(def.key)], `default forwards ${label}`);
      const s = await carried(strict, form(strict.key));
      assert.deepEqual(valuesOf(s, 'x-copy'), [], `strict drops ${label}`);
    }
  });

  test('another valid key: raw, %-encoded, upper-case prefix or in Basic credentials at the default level', async () => {
    const other = generateApiKey('test');
    await createCompanyAndKey(def.t.gw.service, 'globex');
    for (const form of [
      other,
      pct(other),
      other.replace('nk_test_', 'NK_TEST_'),
      `Basic ${b64(`${other}:`)}`,
    ]) {
      const got = await carried(def, form);
      assert.deepEqual(valuesOf(got, 'x-copy'), [], form.slice(0, 20));
    }
    // Its bare body or plain base64: the strict level's.
    const got = await carried(def, bodyOf(other));
    assert.deepEqual(valuesOf(got, 'x-copy'), [bodyOf(other)]);
    assert.deepEqual(valuesOf(await carried(strict, bodyOf(other)), 'x-copy'), []);
  });

  test('in the URL: the presented key as sent, %-encoded or in base64 is 401 KEY_IN_URL; deeper forms only at strict', async () => {
    for (const [label, form] of FOUND) {
      if (label === 'Basic credentials') continue;
      const r = await send(def.t.port, `/notify/v1/x?q=${encodeURIComponent(form(def.key))}`, {
        headers: { 'X-API-Key': def.key },
      });
      assert.deepEqual([r.status, r.json], [401, KEY_IN_URL], label);
    }
    // (An upper-cased key is still a key shape, which the URL guard refuses in any case.)
    for (const [label, form] of LEFT.filter(([l]) => l !== 'upper case')) {
      const path = `/notify/v1/x?q=${encodeURIComponent(form(def.key))}`;
      const d = await send(def.t.port, path, { headers: { 'X-API-Key': def.key } });
      assert.equal(d.status, 200, `default forwards ${label}`);
      const sp = `/notify/v1/x?q=${encodeURIComponent(form(strict.key))}`;
      const s = await send(strict.t.port, sp, { headers: { 'X-API-Key': strict.key } });
      assert.deepEqual([s.status, s.json], [401, KEY_IN_URL], `strict refuses ${label}`);
    }
    assert.equal(strict.upstream.received.length, 0);
  });

  test('values that merely look encoded pass at both levels', async () => {
    for (const g of [def, strict])
      for (const v of [
        `Bearer ${b64(JSON.stringify({ sub: 'user-1', iat: 1700000000 }), 'base64url')}`,
        '0123456789abcdef0123456789abcdef01234567-00f067aa0ba902b7',
        'A'.repeat(200),
        `nk_live_${'A'.repeat(38)}`,
      ]) {
        const got = await carried(g, v);
        assert.deepEqual(valuesOf(got, 'x-copy'), [v], v.slice(0, 20));
      }
  });
});

/**
 * Every field the gateway takes from the client and logs or echoes: the request id (when accepted),
 * the logged path, Host and X-Forwarded-Host, the client address from X-Forwarded-For, the user
 * agent (never logged). Each goes through the request's key check before it is written anywhere.
 */
describe('client values the gateway logs or echoes carry no key (default level)', () => {
  let g: GatewayWithUpstream;
  before(async () => {
    g = await gatewayWithUpstream({
      server: { trustedProxies: ['127.0.0.2'] },
      headers: { acceptClientRequestId: true },
      rateLimit: { authFailures: { enabled: false } },
    });
  });
  after(() => g?.close());
  beforeEach(() => {
    g.upstream.received.length = 0;
  });

  async function lineOf(r: Reply): Promise<Record<string, unknown>> {
    const id = r.headers['x-request-id'];
    const find = () => g.t.logs().find((l) => l.msg === 'request' && l.requestId === id);
    await eventually(async () => find() !== undefined, 3000);
    return find()!;
  }
  const assertNotLogged = (secret: string) => assert.ok(!g.t.logText().includes(secret.slice(0, 24)));

  test('a client request id holding the presented key, another key or the key in base64 is replaced', async () => {
    const other = generateApiKey('live');
    for (const id of [`r-${bodyOf(g.key).slice(0, 32)}`, other]) {
      const r = await send(g.t.port, '/notify/v1/x', { headers: { 'X-API-Key': g.key, 'X-Request-Id': id } });
      assert.equal(r.status, 200);
      assert.notEqual(r.headers['x-request-id'], id);
      assert.notEqual(g.upstream.received.at(-1)!.headers['x-request-id'], id);
      await lineOf(r);
    }
    const ok = await send(g.t.port, '/notify/v1/x', {
      headers: { 'X-API-Key': g.key, 'X-Request-Id': 'trace-42' },
    });
    assert.equal(ok.headers['x-request-id'], 'trace-42');
    assertNotLogged(bodyOf(g.key));
    assertNotLogged(bodyOf(other));
  });

  test('the logged path: the presented key refused with another answer is redacted, the answer unchanged', async () => {
    const unknown = generateApiKey('live');
    const r = await send(g.t.port, `/notify/v1/otps/${bodyOf(unknown)}`, {
      headers: { 'X-API-Key': unknown },
    });
    assert.equal(r.status, 401);
    assert.notDeepEqual(r.json, KEY_IN_URL);
    assert.equal((await lineOf(r)).path, '[redacted: key in URL]');
    assertNotLogged(bodyOf(unknown));
  });

  test('Host and a trusted proxy’s X-Forwarded-Host or -For holding the key are not echoed', async () => {
    const viaHost = await send(g.t.port, '/notify/v1/x', {
      headers: [
        ['Host', g.key],
        ['X-API-Key', g.key],
      ],
    });
    assert.equal(viaHost.status, 200);
    for (const r of g.upstream.received) assert.ok(!JSON.stringify(r.rawHeaders).includes(bodyOf(g.key)));
    g.upstream.received.length = 0;
    const status = await sendFrom('127.0.0.2', g.t.port, '/notify/v1/x', [
      ['X-API-Key', g.key],
      ['X-Forwarded-Host', g.key],
      ['X-Forwarded-For', g.key],
    ]);
    assert.equal(status, 200);
    const got = g.upstream.received[0]!;
    assert.ok(!JSON.stringify(got.rawHeaders).includes(bodyOf(g.key)));
    assert.deepEqual(valuesOf(got, 'x-forwarded-host'), [`127.0.0.1:${g.t.port}`]);
    assert.deepEqual(valuesOf(got, 'x-forwarded-for'), ['127.0.0.2']);
    const line = g.t
      .logs()
      .filter((l) => l.msg === 'request')
      .at(-1)!;
    assert.equal(line.clientIp, '127.0.0.2', 'a non-address from X-Forwarded-For is not a client address');
    assertNotLogged(bodyOf(g.key));
  });

  test('a hostname or header name holding a key in any case (as clients lowercase them) is not echoed', async () => {
    const other = generateApiKey('live');
    const folded = (k: string) => k.toLowerCase().replace(/_/g, '-');
    const viaHost = await send(g.t.port, '/notify/v1/x', {
      headers: [
        ['Host', `${folded(g.key)}.example.com`],
        ['X-API-Key', g.key],
        [`X-${other}`, '1'],
      ],
    });
    assert.equal(viaHost.status, 200);
    const status = await sendFrom('127.0.0.2', g.t.port, '/notify/v1/x', [
      ['X-API-Key', g.key],
      ['X-Forwarded-Host', `api.example, ${folded(other)}.example.com`],
    ]);
    assert.equal(status, 200);
    const [first, second] = g.upstream.received;
    for (const got of [first!, second!]) {
      const sent = JSON.stringify(got.rawHeaders).toLowerCase();
      for (const k of [g.key, other]) assert.ok(!sent.includes(bodyOf(k).slice(0, 24).toLowerCase()), sent);
    }
    // Host dropped: the gateway names none; the trusted proxy's list is dropped whole.
    assert.deepEqual(valuesOf(first!, 'x-forwarded-host'), []);
    assert.deepEqual(valuesOf(second!, 'x-forwarded-host'), [`127.0.0.1:${g.t.port}`]);
  });

  test('the user agent is never logged; holding the key it does not reach the upstream', async () => {
    const r = await send(g.t.port, '/notify/v1/x', {
      headers: { 'X-API-Key': g.key, 'User-Agent': `sdk ${g.key}` },
    });
    assert.equal(r.status, 200);
    assert.equal(valuesOf(g.upstream.received[0]!, 'user-agent').length, 0);
    const line = await lineOf(r);
    assert.ok(!Object.values(line).some((v) => String(v).includes('sdk')));
  });

  test('X-Forwarded-Proto and -Host from a trusted proxy: the entry it appended (the last) decides', async () => {
    const status = await sendFrom('127.0.0.2', g.t.port, '/notify/v1/x', [
      ['X-API-Key', g.key],
      ['X-Forwarded-Proto', 'https, http'],
      ['X-Forwarded-Host', 'evil.example, api.example'],
    ]);
    assert.equal(status, 200);
    const got = g.upstream.received[0]!;
    assert.deepEqual(valuesOf(got, 'x-forwarded-proto'), ['http']);
    assert.deepEqual(valuesOf(got, 'x-forwarded-host'), ['api.example']);
  });

  test('client-address and identity headers of CDNs and clouds never reach the upstream', async () => {
    const names = [
      'CF-Connecting-IPv6',
      'Cf-Pseudo-IPv4',
      'CF-Worker',
      'X-Akamai-Edgescape',
      'Fastly-SSL',
      'Fastly-FF',
      'CloudFront-Viewer-Country',
      'X-Amzn-Vpce-Id',
      'x-apigw-api-id',
      'X-Azure-Ref',
      'X-Azure-RequestChain',
      'X-FD-HealthProbe',
      'X-Goog-Authenticated-User-Email',
      'X-GFE-SSL',
      'X-User-IP',
      'X-AppEngine-Country',
      'X-Serverless-Authorization',
      'x-vercel-ip-country',
      'x-nf-geo',
      'Fly-Region',
      'X-Sucuri-Country',
      'X-Forward-Port',
      'WL-Proxy-SSL',
      'X-Envoy-Downstream-Service-Cluster',
      'X-Client-Trace-Id',
      'CDN-Loop',
    ];
    const status = await sendFrom('127.0.0.2', g.t.port, '/notify/v1/x', [
      ['X-API-Key', g.key],
      ...names.map((n): [string, string] => [n, `asserted-${n}`]),
      ['CF-Ray', 'kept-1'],
      ['X-Amzn-Trace-Id', 'Root=1-67891233-abcdef012345678912345678'],
    ]);
    assert.equal(status, 200);
    const got = g.upstream.received[0]!;
    const leaked = got.rawHeaders.filter((v, i) => i % 2 === 1 && v.startsWith('asserted-'));
    assert.deepEqual(leaked, []);
    assert.deepEqual(valuesOf(got, 'cf-ray'), ['kept-1']);
    assert.equal(valuesOf(got, 'x-amzn-trace-id').length, 1);
  });
});
