import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { createCompanyAndKey } from '../helpers/admin.js';
import { gatewayWithUpstream, type TestGateway } from '../helpers/gateway.js';
import { send, sendFrom } from '../helpers/http.js';
import type { Received, RecordingUpstream } from '../helpers/upstream.js';

/**
 * Key material that is not the plain key (INVARIANTS #1) and forwarding headers outside the
 * `X-Forwarded-*` family (#9): each test asserts on what the recording upstream received. These
 * forms are the strict level's (`guards.level: strict`); test/integration/guard-levels.test.ts
 * shows what the default level reads and leaves.
 */

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
const b64url = (s: string) => Buffer.from(s).toString('base64url');
const hex = (s: string) => Buffer.from(s).toString('hex');
const pct = (s: string) => [...s].map((c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join('');
const pctN = (s: string, n: number) => {
  let out = pct(s);
  for (let i = 1; i < n; i++) out = out.replace(/%/g, '%25');
  return out;
};
const base32 = (s: string) => {
  const A = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const b of Buffer.from(s)) bits += b.toString(2).padStart(8, '0');
  let out = '';
  for (let i = 0; i < bits.length; i += 5) out += A[parseInt(bits.slice(i, i + 5).padEnd(5, '0'), 2)];
  return out;
};

const KEY_IN_URL = 'API key must be sent in the X-API-Key header, not in the URL';

/** The key's secret body: what follows `nk_<env>_`. */
const bodyOf = (key: string) => key.slice(key.indexOf('_', 3) + 1);

/** Every encoding of a key that a deliberate client can build, by name (strict level). */
function leakedEncodings(key: string): [string, string][] {
  const pairs = (s: string) => s.match(/../g)!;
  return [
    ['body without the nk_live_ prefix', bodyOf(key)],
    ['key without its checksum', key.slice(0, -6)],
    ['body without checksum, upper case', bodyOf(key).slice(0, -6).toUpperCase()],
    ['hex with colons', pairs(hex(key)).join(':')],
    [
      'hex as \\x escapes',
      pairs(hex(key))
        .map((h) => '\\x' + h)
        .join(''),
    ],
    [
      'hex as 0x list',
      pairs(hex(key))
        .map((h) => '0x' + h)
        .join(','),
    ],
    ['JSON \\u escapes', [...key].map((c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join('')],
    ['HTML decimal entities', [...key].map((c) => `&#${c.charCodeAt(0)};`).join('')],
    ['HTML hex entities', [...key].map((c) => `&#x${c.charCodeAt(0).toString(16)};`).join('')],
    ['base32', base32(key)],
    ['base64 of UTF-16', b64(Buffer.from(key, 'utf16le'))],
    ['UTF-16 hex', Buffer.from(key, 'utf16le').toString('hex')],
    ['base64 of base64', b64(b64(key))],
    ['base64 of hex', b64(hex(key))],
    ['+ between characters', key.split('').join('+')],
    ['- between characters', key.split('').join('-')],
    ['. between characters', key.split('').join('.')],
    ['split by a quote and comma', `${key.slice(0, 22)}","${key.slice(22)}`],
    ['five rounds of %-encoding', pctN(key, 5)],
    ['seven rounds of %-encoding', pctN(key, 7)],
  ];
}

/** Each header value the upstream received. */
function headerValues(r: Received): string[] {
  return r.rawHeaders.filter((_, i) => i % 2 === 1);
}

function valuesOf(r: Received, name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < r.rawHeaders.length; i += 2)
    if (r.rawHeaders[i]!.toLowerCase() === name) out.push(r.rawHeaders[i + 1]!);
  return out;
}

/** The alphanumeric characters of everything the upstream got, lowercased: no 24-char run of the body may be in it. */
function assertNoSecret(r: Received, key: string, label: string): void {
  const all = (r.url + '\n' + r.rawHeaders.join('\n')).toLowerCase().replace(/[^a-z0-9]/g, '');
  const body = bodyOf(key).toLowerCase();
  for (let i = 0; i + 24 <= body.length; i++)
    assert.ok(
      !all.includes(body.slice(i, i + 24)),
      `${label}: part of the key's secret reached the upstream`,
    );
}

describe('key material in other shapes, other keys, forwarding headers (strict level)', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;
  let otherKey: string;

  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream({
      guards: { level: 'strict' },
      server: { trustedProxies: ['127.0.0.2'] },
      // The URL tests below each count as a failed authentication.
      rateLimit: {
        tiers: [{ name: 'standard', points: 100_000, duration: 60 }],
        authFailures: { enabled: false },
      },
    }));
    otherKey = (await createCompanyAndKey(t.gw.service, 'tiny')).key;
  });
  after(() => close?.());
  beforeEach(() => {
    upstream.received.length = 0;
  });

  test('A: the presented key in any known shape, in a header or a cookie pair, never reaches the upstream', async () => {
    for (const [label, value] of leakedEncodings(key)) {
      upstream.received.length = 0;
      const r = await send(t.port, '/notify/v1/x', {
        headers: [
          ['X-API-Key', key],
          ['X-Copy', value],
          ['Cookie', `a=1; sess=${value}; b=2`],
          ['X-Innocent', 'stays'],
        ],
      });
      assert.equal(r.status, 200, label);
      const got = upstream.received[0]!;
      assert.ok(!headerValues(got).some((v) => v.includes(value)), `${label}: reached the upstream`);
      assertNoSecret(got, key, label);
      // A value holding `;` (entities) splits the cookie pair: the pieces that together hold the
      // secret go, `a=1` and `b=2` stay.
      if (value.includes(';')) {
        const cookie = valuesOf(got, 'cookie');
        assert.equal(cookie.length, 1, label);
        assert.ok(cookie[0]!.startsWith('a=1; ') && cookie[0]!.endsWith('; b=2'), `${label}: ${cookie[0]}`);
      } else assert.deepEqual(valuesOf(got, 'cookie'), ['a=1; b=2'], label);
      assert.deepEqual(valuesOf(got, 'x-innocent'), ['stays'], label);
    }
    assert.ok(!t.logText().includes(bodyOf(key)), 'the key reached the log');
  });

  test('A: pieces in reverse header order, or around escapes, do not reach the upstream whole', async () => {
    const secret = bodyOf(key);
    const pieces: string[] = [];
    for (let i = 0; i < secret.length; i += 7) pieces.push(secret.slice(i, i + 7));
    // http-proxy writes the headers to the upstream in reverse: sent backwards, they arrive in order.
    const reversed = [...pieces].reverse().map((p): [string, string] => [p, '-']);
    const nameValue = [...pieces].reverse().map((p): [string, string] => [p.slice(0, 4), p.slice(4) || '-']);
    // `&#` before a digit: decoded, the digit becomes a tab; raw, the secret is whole.
    const eaten = secret.replace(/(\d)(?=\D|$)/g, '&#$1');
    const cut = eaten.length >> 1;
    const escaped: [string, string][] = [[`X-${eaten.slice(0, cut)}`, eaten.slice(cut)]];
    const cookie: [string, string][] = [['Cookie', `p=${eaten.slice(0, cut)}; q=${eaten.slice(cut)}`]];
    for (const [label, headers] of Object.entries({ reversed, nameValue, escaped, cookie })) {
      upstream.received.length = 0;
      const r = await send(t.port, '/notify/v1/x', {
        headers: [['X-API-Key', key], ...headers, ['X-Innocent', 'stays']],
      });
      assert.equal(r.status, 200, label);
      const got = upstream.received[0]!;
      assertNoSecret(got, key, label);
      assert.deepEqual(valuesOf(got, 'x-innocent'), ['stays'], label);
    }
  });

  test('A: 17 + 7 characters around Transfer-Encoding, which the gateway removes after reading a form body', async () => {
    const s = bodyOf(key);
    for (const [a, b] of [
      [s.slice(17, 24), `zz${s.slice(0, 17)}`],
      [`zz${s.slice(0, 17)}`, s.slice(17, 24)],
    ]) {
      upstream.received.length = 0;
      const r = await send(t.port, '/notify/v1/x', {
        method: 'POST',
        headers: [
          ['X-API-Key', key],
          [a!, 'zz'],
          ['Transfer-Encoding', 'chunked'],
          ['X-B', b!],
        ],
        body: 'a=1',
      });
      assert.equal(r.status, 200, r.body);
      const got = upstream.received[0]!;
      assert.equal(got.body.toString(), 'a=1');
      assertNoSecret(got, key, `around Transfer-Encoding: ${a}`);
    }
  });

  test('A: a key split across two headers does not reach the upstream whole; unrelated headers stay', async () => {
    for (const at of [8, 20, 30]) {
      upstream.received.length = 0;
      const r = await send(t.port, '/notify/v1/x', {
        headers: [
          ['X-API-Key', key],
          ['X-A', key.slice(0, at)],
          ['X-Innocent', 'stays'],
          ['X-B', key.slice(at)],
        ],
      });
      assert.equal(r.status, 200);
      const got = upstream.received[0]!;
      assertNoSecret(got, key, `split at ${at}`);
      assert.deepEqual(valuesOf(got, 'x-innocent'), ['stays']);
    }
  });

  test('A: values that merely look encoded pass unchanged (no false positives)', async () => {
    const benign: [string, string][] = [
      [
        'Authorization',
        `Bearer ${b64url(JSON.stringify({ sub: 'user-1', iat: 1700000000, scope: 'send' }))}`,
      ],
      ['Cookie', `sid=${b64(Buffer.alloc(48, 7))}; theme=dark`],
      ['X-Trace', '0123456789abcdef0123456789abcdef01234567-00f067aa0ba902b7'],
      ['X-Long', 'A'.repeat(200)],
      ['X-Escapes', '%25%25%41 \\x41 \\u0041 &#65; &#x41;'],
      [
        'User-Agent',
        'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36',
      ],
      ['X-Key-Like', `nk_live_${'A'.repeat(38)}`], // key-shaped, wrong checksum: not a key
    ];
    const r = await send(t.port, '/notify/v1/x', { headers: [['X-API-Key', key], ...benign] });
    assert.equal(r.status, 200);
    const got = upstream.received[0]!;
    for (const [name, value] of benign) assert.deepEqual(valuesOf(got, name.toLowerCase()), [value], name);
  });

  test('B: a second real key in Authorization, a cookie or a custom header never reaches the upstream', async () => {
    const cases: [string, string][] = [
      ['Authorization', `Bearer ${otherKey}`],
      ['X-Other-Key', otherKey],
      ['X-Other-Key', `token=${pct(otherKey)}`],
      ['X-Other-Key', b64(`${otherKey}:`)],
      ['X-Other-Key', otherKey.replace('nk_live_', 'NK_LIVE_')],
    ];
    for (const [name, value] of cases) {
      upstream.received.length = 0;
      const r = await send(t.port, '/notify/v1/x', {
        headers: [
          ['X-API-Key', key],
          [name, value],
          ['Cookie', `a=1; s=${otherKey}; b=2`],
        ],
      });
      assert.equal(r.status, 200, `${name}: ${value.slice(0, 12)}`);
      const got = upstream.received[0]!;
      assert.deepEqual(
        valuesOf(got, name.toLowerCase()),
        [],
        `${name}: ${value.slice(0, 12)} reached the upstream`,
      );
      assert.deepEqual(valuesOf(got, 'cookie'), ['a=1; b=2']);
      assertNoSecret(got, otherKey, name);
    }
  });

  test('C: the presented key in the URL in any shape is refused 401 KEY_IN_URL, never forwarded, and flagged exposed', async () => {
    const k = await t.gw.service.createKey('acme', {});
    assert.ok(k.ok);
    const own = k.value.key;
    const cases: [string, string][] = [
      ['base64 of key:', `/notify/v1/x?auth=${encodeURIComponent(b64(own + ':'))}`],
      ['base64url in the path', `/notify/v1/${b64url(own)}`],
      ['JWT payload', `/notify/v1/x?jwt=${b64url('{"alg":"none"}')}.${b64url(JSON.stringify({ k: own }))}.`],
      ['hex', `/notify/v1/x?h=${hex(own)}`],
      ['body only, path', `/notify/v1/${bodyOf(own)}`],
      ['body only, query', `/notify/v1/x?secret=${bodyOf(own)}`],
      ['upper case', `/notify/v1/x?q=${own.toUpperCase()}`],
      ['%20 between characters', `/notify/v1/x?q=${own.split('').join('%20')}`],
      ['+ between characters', `/notify/v1/x?q=${own.split('').join('+')}`],
      ['%00 inserted', `/notify/v1/x?q=${own.slice(0, 20)}%00${own.slice(20)}`],
      ['full-width underscore', `/notify/v1/x?q=${encodeURIComponent(own.replace(/_/g, '\uFF3F'))}`],
      ['five rounds of %-encoding', `/notify/v1/x?q=${pctN(own, 5)}`],
      ['five rounds, in the path', `/notify/v1/${pctN(own, 5)}`],
    ];
    for (const [label, path] of cases) {
      const r = await send(t.port, path, { headers: { 'X-API-Key': own } });
      assert.equal(r.status, 401, label);
      assert.equal((r.json as { details: string }).details, KEY_IN_URL, label);
    }
    assert.equal(upstream.received.length, 0, 'a URL holding the key was forwarded');
    const exposed = async () => {
      const keys = await t.gw.service.listKeys('acme');
      return keys.ok ? keys.value.find((x) => x.id === k.value.id)?.exposedAt : undefined;
    };
    for (let i = 0; i < 50 && !(await exposed()); i++) await new Promise((res) => setTimeout(res, 20));
    assert.ok(await exposed(), 'the key was not flagged exposed');
    assert.ok(!t.logText().includes(bodyOf(own)), 'the key reached the log');
  });

  test('C: another company’s key in a non-raw shape in the URL is refused 401 KEY_IN_URL', async () => {
    for (const path of [
      `/notify/v1/x?auth=${encodeURIComponent(b64(otherKey + ':'))}`,
      `/notify/v1/${b64url(otherKey)}`,
      `/notify/v1/x?h=${hex(otherKey)}`,
      `/notify/v1/x?q=${otherKey.split('').join('.')}`,
    ]) {
      const r = await send(t.port, path, { headers: { 'X-API-Key': key } });
      assert.equal(r.status, 401, path.slice(0, 40));
      assert.equal((r.json as { details: string }).details, KEY_IN_URL);
    }
    assert.equal(upstream.received.length, 0);
    // Long ids, hex and base64 that hold no key are forwarded.
    for (const path of [
      `/notify/v1/messages/${'0123456789abcdef'.repeat(4)}`,
      `/notify/v1/x?cursor=${b64url(JSON.stringify({ after: 'msg_1234567890', limit: 50 }))}`,
    ]) {
      const r = await send(t.port, path, { headers: { 'X-API-Key': key } });
      assert.equal(r.status, 200, path);
    }
    assert.equal(upstream.received.length, 2);
  });

  const FORWARDING: [string, string][] = [
    ['X-Forwarded', 'for=6.6.6.6'],
    ['Forwarded-For', '6.6.6.6'],
    ['X-Scheme', 'https'],
    ['X-Url-Scheme', 'https'],
    ['Front-End-Https', 'on'],
    ['X-Envoy-External-Address', '6.6.6.6'],
    ['X-Envoy-Original-Path', '/admin'],
    ['X-Envoy-Internal', 'true'],
    ['X-Remote-User', 'admin'],
    ['Remote-User', 'admin'],
    ['X-Authenticated-User', 'admin'],
    ['X-Authenticated-Userid', 'admin'],
    ['X-Auth-User', 'admin'],
    ['X-Forwarded-User', 'admin'],
    ['X-User', 'admin'],
    ['X-Remote-Addr', '6.6.6.6'],
    ['X-Originating-IP', '6.6.6.6'],
    ['X-Remote-IP', '6.6.6.6'],
    ['X-Auth-Request-User', 'admin'],
    ['X-Forwarded-Email', 'admin@evil.example'],
  ];

  test('D: forwarding, scheme and identity headers outside X-Forwarded-* never pass, from any peer', async () => {
    for (const from of ['127.0.0.1', '127.0.0.2']) {
      upstream.received.length = 0;
      const { status } = await sendFrom(from, t.port, '/notify/v1/x', [
        ['X-API-Key', key],
        ...FORWARDING,
        ['Via', '1.1 cdn'],
      ]);
      assert.equal(status, 200);
      const got = upstream.received[0]!;
      const names = got.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
      for (const [name] of FORWARDING) assert.ok(!names.includes(name.toLowerCase()), `${name} from ${from}`);
      assert.ok(!/6\.6\.6\.6|admin|https|on\b/.test(headerValues(got).join('\n')), headerValues(got).join());
      assert.deepEqual(valuesOf(got, 'x-forwarded-proto'), ['http']);
      // Via is informational (RFC 9110 §7.6.3) and passes.
      assert.deepEqual(valuesOf(got, 'via'), ['1.1 cdn']);
    }
  });
});
