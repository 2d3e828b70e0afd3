import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { generateApiKey } from '../../src/auth/api-key.js';
import { createCompanyAndKey } from '../helpers/admin.js';
import { gatewayWithUpstream, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { send } from '../helpers/http.js';
import { startUpstream, type Received, type RecordingUpstream } from '../helpers/upstream.js';

/**
 * Key material in headers, client-asserted headers and dot-like paths, through a real gateway and a recording upstream: every
 * form is sent with a valid key, and the upstream sees none of it.
 */

const hex = (c: string, pad: number) => c.charCodeAt(0).toString(16).padStart(pad, '0');
/** A UTF-8 string as raw header bytes (Node's client writes a header value's characters as latin1). */
const utf8Bytes = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
const fullWidth = (s: string) => [...s].map((c) => String.fromCharCode(c.charCodeAt(0) + 0xfee0)).join('');
const each = (s: string, f: (c: string) => string) => [...s].map(f).join('');

function keyForms(key: string): [string, string][] {
  return [
    ['%u', each(key, (c) => '%u' + hex(c, 4))],
    [
      'overlong',
      each(key, (c) => {
        const n = c.charCodeAt(0);
        return `%${(0xc0 | (n >> 6)).toString(16)}%${(0x80 | (n & 0x3f)).toString(16)}`;
      }),
    ],
    ['\\u{}', each(key, (c) => `\\u{${hex(c, 1)}}`)],
    ['\\u', each(key, (c) => `\\u${hex(c, 4)}`)],
    ['octal', each(key, (c) => '\\' + c.charCodeAt(0).toString(8).padStart(3, '0'))],
    ['&#0…;', each(key, (c) => `&#${String(c.charCodeAt(0)).padStart(8, '0')};`)],
    ['&#x0…;', each(key, (c) => `&#x${hex(c, 5)};`)],
    ['full-width', utf8Bytes(fullWidth(key))],
  ];
}

/** Every text the upstream received: header names and values, and the URL. */
const seen = (r: Received) => JSON.stringify(r.rawHeaders) + '\n' + r.url;

describe('forms of key material and client-asserted headers never reach the upstream (strict level)', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;

  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream({
      guards: { level: 'strict' },
      rateLimit: { tiers: [{ name: 'standard', points: 100_000, duration: 60 }] },
    }));
  });
  after(() => close?.());
  beforeEach(() => {
    upstream.received.length = 0;
  });

  test('the presented key in every escape and Unicode form, in any header, is dropped', async () => {
    for (const [label, form] of keyForms(key)) {
      upstream.received.length = 0;
      const r = await send(t.port, '/notify/v1/x', {
        headers: [
          ['X-API-Key', key],
          ['X-Carrier', form],
          ['Authorization', `Bearer ${form}`],
          ['X-Innocent', 'stays'],
        ],
      });
      assert.equal(r.status, 200, label);
      const got = upstream.received[0]!;
      assert.equal(got.headers['x-carrier'], undefined, label);
      assert.equal(got.headers.authorization, undefined, label);
      assert.equal(got.headers['x-innocent'], 'stays', label);
      assert.ok(!seen(got).includes(form), label);
    }
  });

  test('a key split between a header name and its value, or across cookie pairs, is dropped', async () => {
    const body = key.slice(8);
    const a = body.slice(0, 19);
    const b = body.slice(19);
    const r = await send(t.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', key],
        [`X-${a}`, b],
        ['Cookie', `theme=dark; a=${a}; b=${b}`],
        ['X-Innocent', 'stays'],
      ],
    });
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    const text = seen(got).toLowerCase();
    assert.ok(!text.includes(a.toLowerCase()) && !text.includes(b.toLowerCase()), text);
    assert.equal(got.headers.cookie, 'theme=dark');
    assert.equal(got.headers['x-innocent'], 'stays');
  });

  test("another company's key body, without its prefix, is dropped", async () => {
    const other = generateApiKey('live');
    const body = other.slice(8);
    const r = await send(t.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', key],
        ['X-Other', body],
        ['Cookie', `sid=${body}; theme=dark`],
      ],
    });
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    assert.ok(!seen(got).includes(body));
    assert.equal(got.headers.cookie, 'theme=dark');
  });

  test('client-IP, identity, tenant and method headers from an untrusted peer are dropped, ordinary ones pass', async () => {
    const asserted = [
      'Fly-Client-IP',
      'X-Vercel-Forwarded-For',
      'X-Nf-Client-Connection-Ip',
      'Incap-Client-IP',
      'X-Sucuri-ClientIP',
      'Do-Connecting-Ip',
      'Cdn-Src-Ip',
      'Ali-Cdn-Real-Ip',
      'CloudFront-Viewer-Address',
      'X-Webauth-User',
      'X-Webauth-Email',
      'X-authentik-username',
      'X-Pomerium-Jwt-Assertion',
      'X-Pomerium-Claim-Email',
      'Cf-Access-Jwt-Assertion',
      'Cf-Access-Authenticated-User-Email',
      'X-Vouch-User',
      'X-Endpoint-API-UserInfo',
      'X-Ms-Token-Aad-Id-Token',
      'X-Hasura-Role',
      'X-Hasura-User-Id',
      'X-Hasura-Admin-Secret',
      'OIDC_CLAIM_sub',
      'Oidc-Claim-Email',
      'Impersonate-User',
      'Impersonate-Group',
      'X-Impersonate-User',
      'X-Kong-Consumer-Id',
      'X-Tyk-Api-Key-Id',
      'X-Auth-Email',
      'X-Auth-Username',
      'X-Role',
      'X-Roles',
      'X-Groups',
      'X-Is-Admin',
      'Remote-Groups',
      'X-Jwt-Payload',
      'X-Middleware-Subrequest',
      'X-Scope-OrgID',
      'X-Grafana-Org-Id',
      'X-Org-Id',
      'X-Organization-Id',
      'X-Account-Id',
      'X-Customer-Id',
      'X-Project-Id',
      'X-Workspace-Id',
      'X-Client-Id',
      'X-HTTP-Verb',
      'X-Forwarded-Method',
    ];
    const r = await send(t.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', key],
        ...asserted.map((n): [string, string] => [n, `asserted-${n}`]),
        ['Idempotency-Key', 'kept-1'],
        ['Accept-Language', 'kept-2'],
        ['Traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
        ['X-Client-Version', 'kept-3'],
      ],
    });
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    const leaked: string[] = [];
    for (let i = 0; i < got.rawHeaders.length; i += 2)
      if (got.rawHeaders[i + 1]!.startsWith('asserted-')) leaked.push(got.rawHeaders[i]!);
    assert.deepEqual(leaked, []);
    assert.equal(got.headers['idempotency-key'], 'kept-1');
    assert.equal(got.headers['accept-language'], 'kept-2');
    assert.equal(got.headers['x-client-version'], 'kept-3');
    assert.ok(got.headers.traceparent !== undefined);
    assert.equal(got.method, 'GET');
  });
});

describe('dot-like segments and Unicode separators are refused for a key scoped to one path', () => {
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

  test('every reported spelling gets the path-check 400 and nothing is forwarded; ordinary paths pass', async () => {
    assert.equal((await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': key } })).status, 200);
    upstream.received.length = 0;
    for (const seg of [
      '..%20',
      '..%09',
      '.%20.',
      '...',
      '%2e%2e%2e',
      '%ef%bc%8e%ef%bc%8e',
      '%e2%80%a4%e2%80%a4',
      '..%ef%bc%8f',
      '..%ef%bc%bc',
      '%2e%2e%2520',
    ]) {
      const r = await send(t.port, `/notify/v1/health/${seg}/otps`, { headers: { 'X-API-Key': key } });
      assert.equal(r.status, 400, seg);
      assert.deepEqual(r.json, { error: 'Bad Request', details: 'Malformed request' }, seg);
      const end = await send(t.port, `/notify/v1/health/${seg}`, { headers: { 'X-API-Key': key } });
      assert.equal(end.status, 400, `${seg} at the end`);
    }
    assert.deepEqual(
      upstream.received.map((r) => r.url),
      [],
    );
    // Dots, spaces and non-ASCII that resolve nowhere else: in scope, forwarded as sent.
    for (const p of [
      '/notify/v1/health/%ef%bd%86.v2%20x',
      '/notify/v1/health/a%20.',
      '/notify/v1/health/..a',
    ]) {
      const ok = await send(t.port, p, { headers: { 'X-API-Key': key } });
      assert.equal(ok.status, 200, p);
    }
    assert.deepEqual(
      upstream.received.map((r) => r.url),
      ['/notify/v1/health/%ef%bd%86.v2%20x', '/notify/v1/health/a%20.', '/notify/v1/health/..a'],
    );
  });
});

describe('padded dot segments and more client-asserted names', () => {
  let upstream: RecordingUpstream;
  let t: TestGateway;
  let key: string;
  let scopedKey: string;

  before(async () => {
    upstream = await startUpstream();
    t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
    });
    key = (await createCompanyAndKey(t.gw.service, 'acme2')).key;
    const k = await createCompanyAndKey(t.gw.service, 'scoped2');
    scopedKey = k.key;
    const u = await t.gw.service.updateKey(k.id, {
      scopes: [{ route: '/notify/v1', methods: ['GET'], paths: ['/notify/v1/health'] }],
    });
    assert.ok(u.ok, JSON.stringify(u));
  });
  after(async () => {
    await t?.close();
    await upstream?.close();
  });
  beforeEach(() => {
    upstream.received.length = 0;
  });

  test('every known padded dot segment gets the path-check 400, nothing is forwarded', async () => {
    const segments = [
      ...['01', '02', '03', '04', '05', '06', '07', '08', '0e', '0f', '1c', '1d', '1e', '1f', '7f'].map(
        (b) => `..%${b}`,
      ),
      '%1f..',
      '..%c2%85',
      '..%251c',
      '..%257f',
      '..%e2%88%95',
      '..%e2%88%96',
      '..%c2%a5',
      '..%e2%82%a9',
      '..%e2%80%8b',
      '..%c2%ad',
      '..%cd%8f',
      '..%e1%85%9f',
      '%e3%80%82%e3%80%82',
      '.%e3%80%82',
    ];
    const wrong: string[] = [];
    for (const seg of segments)
      for (const p of [`/notify/v1/health/${seg}/otps`, `/notify/v1/health/${seg}`]) {
        const r = await send(t.port, p, { headers: { 'X-API-Key': scopedKey } });
        if (
          r.status !== 400 ||
          JSON.stringify(r.json) !== '{"error":"Bad Request","details":"Malformed request"}'
        )
          wrong.push(`${p} → ${r.status}`);
      }
    assert.deepEqual(wrong, []);
    assert.deepEqual(
      upstream.received.map((r) => r.url),
      [],
    );
    // The same characters away from a dot-only segment: in scope, forwarded as sent.
    for (const p of [
      '/notify/v1/health/a%e2%88%95b',
      '/notify/v1/health/%c2%a5100',
      '/notify/v1/health/file.v2.json',
    ]) {
      const ok = await send(t.port, p, { headers: { 'X-API-Key': scopedKey } });
      assert.equal(ok.status, 200, p);
    }
    assert.deepEqual(
      upstream.received.map((r) => r.url),
      ['/notify/v1/health/a%e2%88%95b', '/notify/v1/health/%c2%a5100', '/notify/v1/health/file.v2.json'],
    );
  });

  test('every known client-asserted header is dropped from an untrusted peer, ordinary ones pass', async () => {
    const asserted = [
      'X-Custom-IP-Authorization',
      'X-True-IP',
      'X-Client-Address',
      'X-Email',
      'X-Subject',
      'X-Uid',
      'X-Login',
      'X-Proxy-User',
      'X-Api-User',
      'X-On-Behalf-Of',
      'X-Act-As',
      'X-Run-As',
      'X-Sudo',
      'X-Impersonate',
      'X-Service-Account',
      'X-Oidc-Claim-Sub',
      'X-Iap-User',
      'X-User-Info',
      'X-App-Id',
      'X-Application-Id',
      'X-Tenant-Name',
      'X-Org-Slug',
      'X-Namespace',
      'X-Realm',
      'X-Site-Id',
      'X-Shopify-Shop-Domain',
      'X-Key-Id',
      'X-Forwarded-Principal',
      'X-Remote-Login',
    ];
    const r = await send(t.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', key],
        ...asserted.map((n): [string, string] => [n, `asserted-${n}`]),
        ['Idempotency-Key', 'kept-1'],
        ['Accept-Language', 'kept-2'],
        ['X-Client-Version', 'kept-3'],
        ['X-Request-Id', 'kept-4'],
        ['User-Agent', 'kept-5'],
        ['Traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
      ],
    });
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    const leaked: string[] = [];
    for (let i = 0; i < got.rawHeaders.length; i += 2)
      if (got.rawHeaders[i + 1]!.startsWith('asserted-')) leaked.push(got.rawHeaders[i]!);
    assert.deepEqual(leaked, []);
    assert.equal(got.headers['idempotency-key'], 'kept-1');
    assert.equal(got.headers['accept-language'], 'kept-2');
    assert.equal(got.headers['x-client-version'], 'kept-3');
    assert.equal(got.headers['user-agent'], 'kept-5');
    assert.ok(got.headers.traceparent !== undefined);
  });
});

describe('identity, client-address and URL-override families never reach the upstream', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;
  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream({}));
  });
  after(() => close?.());
  beforeEach(() => {
    upstream.received.length = 0;
  });

  const REPORTED = [
    'Company',
    'Company-Name',
    'Company-Slug',
    'Company-Uuid',
    'X-Company-Slug',
    'X-Company-Uuid',
    'X-Company-Domain',
    'X-CompanyName',
    'X-Company-Key',
    'X-Company-Code',
    'X-Company-Ref',
    'X-Companies',
    'X-Company-Ids',
    'X-Company--Id',
    'X-Company.Id',
    'X-Company-Id-Override',
    'X-Gateway-Company',
    'X-Gw-Company-Id',
    'X-Gateway-Key-Id',
    'X-Api-Key-Id2',
    'Cluster-Client-IP',
    'Real-Ip',
    'X-Forwarder-For',
    'X-HTTP-DestinationURL',
    'Proxy-Url',
    'Proxy-Host',
    'Base-Url',
    'Http-Url',
    'Request-Uri',
    'Uri',
    'Url',
    'X-Proxy-Url',
    'X-Proxy-Host',
    'X-Host-Override',
    'X-Backend-Host',
    'X-Real-Host',
    'X-Server-Name',
    'X-Owner',
    'X-Owner-Id',
    'X-Caller',
    'X-Caller-Id',
    'X-Actor',
    'X-Actor-Id',
    'X-Requester',
    'X-Requester-Id',
    'X-Business-Id',
    'X-Vendor-Id',
    'X-Seller-Id',
    'X-Brand-Id',
    'X-Tier',
    'X-Plan',
    'X-Company-Plan',
    'X-Subscription-Tier',
    'X-Internal',
    'X-Trusted',
    'X-Bypass',
  ];
  const ORDINARY: [string, string][] = [
    ['Accept', 'application/json'],
    ['Accept-Language', 'en'],
    ['Content-Type', 'application/json'],
    ['User-Agent', 'sdk/1.0'],
    ['Origin', 'https://app.example'],
    ['Referer', 'https://app.example/a'],
    ['If-None-Match', '"e"'],
    ['Cache-Control', 'no-cache'],
    ['Traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
    ['Tracestate', 'a=b'],
    ['Baggage', 'k=v'],
    ['Idempotency-Key', 'i-1'],
    ['Sec-Fetch-Mode', 'cors'],
    ['Cookie', 'theme=dark'],
    ['X-Client-Version', '1'],
    ['X-Callback-Url', 'https://cb.example'],
  ];

  test('every reported name, with a valid key, from an untrusted peer: none arrives; ordinary headers arrive as sent', async () => {
    const r = await send(t.port, '/notify/v1/x', {
      headers: [
        ['X-API-Key', key],
        ...REPORTED.map((n): [string, string] => [n, `asserted-${n}`]),
        ...ORDINARY,
      ],
    });
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    const leaked: string[] = [];
    for (let i = 0; i < got.rawHeaders.length; i += 2)
      if (got.rawHeaders[i + 1]!.startsWith('asserted-')) leaked.push(got.rawHeaders[i]!);
    assert.deepEqual(leaked, []);
    for (const [name, value] of ORDINARY) assert.equal(got.headers[name.toLowerCase()], value, name);
    assert.equal(got.headers['x-company-id'], 'acme');
  });
});

describe('headers.allowFromClients: only the listed client headers reach the upstream', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;
  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream({
      headers: { allowFromClients: ['Accept', 'X-Sdk-*', 'X-Company-Id'] },
    }));
  });
  after(() => close?.());

  test('listed names and prefixes pass with the trusted headers; the rest, and forged trusted headers, do not', async () => {
    const r = await send(t.port, '/notify/v1/x', {
      method: 'POST',
      body: '{}',
      headers: [
        ['X-API-Key', key],
        ['Content-Type', 'application/json'],
        ['Accept', 'application/json'],
        ['X-Sdk-Version', '1'],
        ['X-Company-Id', 'forged'],
        ['User-Agent', 'not-listed'],
        ['X-Tenant', 'not-listed'],
      ],
    });
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    assert.equal(got.headers.accept, 'application/json');
    assert.equal(got.headers['x-sdk-version'], '1');
    assert.equal(got.headers['content-type'], 'application/json');
    assert.equal(got.headers['x-company-id'], 'acme');
    assert.equal(got.headers['user-agent'], undefined);
    assert.equal(got.headers['x-tenant'], undefined);
    assert.ok(got.headers['x-request-id'] !== undefined && got.headers['x-forwarded-for'] !== undefined);
  });
});
