import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateApiKey } from '../../src/auth/api-key.js';
import { createCompanyAndKey } from '../helpers/admin.js';
import { gatewayWithUpstream, type TestGateway } from '../helpers/gateway.js';
import { eventually, send, type Reply } from '../helpers/http.js';
import type { RecordingUpstream } from '../helpers/upstream.js';

/**
 * The strict level (`guards.level: strict`), which reads these forms; the default level's share is in
 * test/integration/guard-levels.test.ts.
 *
 * Key material in the URL is refused
 * (right after authentication at the latest, before a scope or limit answer can log it) and never
 * logged whatever the answer; method overrides and key encodings in the query that PHP, IIS or an
 * overlong-UTF-8 decoder would read are refused before anything reaches the upstream.
 */

const KEY_IN_URL = 'API key must be sent in the X-API-Key header, not in the URL';
const REDACTED = '[redacted: key in URL]';

/** The key's secret body: what follows `nk_<env>_`. */
const bodyOf = (key: string) => key.slice(key.indexOf('_', 3) + 1);
const b64url = (s: string) => Buffer.from(s).toString('base64url');
/** IIS `%uXXXX` for every character. */
const pctU = (s: string) => [...s].map((c) => '%u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join('');
/** Overlong 2-byte UTF-8 for every (ASCII) character: `n` → `%c1%ae`. */
const overlong2 = (s: string) =>
  [...s]
    .map((ch) => {
      const c = ch.charCodeAt(0);
      return `%${(0xc0 | (c >> 6)).toString(16)}%${(0x80 | (c & 63)).toString(16)}`;
    })
    .join('');
/** Overlong 3-byte UTF-8 for every (ASCII) character: `n` → `%e0%81%ae`. */
const overlong3 = (s: string) =>
  [...s]
    .map((ch) => {
      const c = ch.charCodeAt(0);
      return `%e0%${(0x80 | (c >> 6)).toString(16)}%${(0x80 | (c & 63)).toString(16)}`;
    })
    .join('');

/** The access line of the request answered by `r` (written when the response closes: waited for). */
async function lineOf(t: TestGateway, r: Reply): Promise<Record<string, unknown>> {
  const id = r.headers['x-request-id'];
  const find = () => t.logs().find((l) => l.msg === 'request' && l.requestId === id);
  await eventually(async () => find() !== undefined, 3000);
  return find()!;
}

describe('key material in the URL is refused before scope and limits, and never logged', () => {
  let t: TestGateway, upstream: RecordingUpstream, close: () => Promise<void>;
  /** Scoped to GET /notify/v1/health: everything else is 403. */
  let scoped: { id: string; key: string };
  /** One request per minute. */
  let limited: { id: string; key: string };
  /** Unrestricted, of another company. */
  let other: { id: string; key: string };

  before(async () => {
    const f = await gatewayWithUpstream(
      { guards: { level: 'strict' }, rateLimit: { authFailures: { enabled: false } } },
      { keyScopes: [{ route: '/notify/v1', methods: ['GET'], paths: ['/notify/v1/health'] }] },
    );
    ({ t, upstream, close } = f);
    scoped = { id: f.keyId, key: f.key };
    const l = await t.gw.service.createKey('acme', {});
    assert.ok(l.ok, JSON.stringify(l));
    const lp = await t.gw.service.updateKey(l.value.id, { limits: [{ points: 1, duration: 60 }] });
    assert.ok(lp.ok, JSON.stringify(lp));
    limited = { id: l.value.id, key: l.value.key };
    const o = await createCompanyAndKey(t.gw.service, 'globex');
    other = { id: o.id, key: o.key };
  });
  after(() => close?.());

  async function exposedAt(company: string, id: string): Promise<string | null | undefined> {
    const keys = await t.gw.service.listKeys(company);
    return keys.ok ? keys.value.find((k) => k.id === id)?.exposedAt : undefined;
  }
  async function waitExposed(company: string, id: string): Promise<void> {
    await eventually(async () => Boolean(await exposedAt(company, id)), 2000);
    assert.ok(await exposedAt(company, id), `${company}/${id} was not flagged exposed`);
  }
  function assertRefused(r: Reply, label: string): void {
    assert.equal(r.status, 401, label);
    assert.deepEqual(r.json, { error: 'Unauthorized', details: KEY_IN_URL }, label);
  }
  /**
   * The access lines of `replies` (waited for); none of them, nor any other log line, shows 24
   * characters of the secret in any case.
   */
  async function assertNotLogged(key: string, label: string, replies: Reply[]) {
    const lines = await Promise.all(replies.map((r) => lineOf(t, r)));
    const log = t.logText().toLowerCase();
    const secret = bodyOf(key).toLowerCase();
    for (let i = 0; i + 24 <= secret.length; i += 7)
      assert.ok(!log.includes(secret.slice(i, i + 24)), `${label}: the secret reached the log`);
    return lines;
  }

  test('the bare body of a scope-refused key: 401 KEY_IN_URL (not 403), flagged exposed, not logged', async () => {
    const r = await send(t.port, `/notify/v1/otps/${bodyOf(scoped.key)}`, {
      headers: { 'X-API-Key': scoped.key },
    });
    assertRefused(r, 'bare body');
    await waitExposed('acme', scoped.id);
    const [line] = await assertNotLogged(scoped.key, 'bare body', [r]);
    assert.equal(line!.path, REDACTED);
  });

  test('a base64url or upper-case copy with a scope-refused key: 401 KEY_IN_URL (not 403) after authentication', async () => {
    const k = await createCompanyAndKey(t.gw.service, 'initech');
    const p = await t.gw.service.updateKey(k.id, {
      scopes: [{ route: '/notify/v1', methods: ['GET'], paths: ['/notify/v1/health'] }],
    });
    assert.ok(p.ok, JSON.stringify(p));
    const key = k.key;
    const replies: Reply[] = [];
    for (const [label, path] of [
      ['base64url', `/notify/v1/otps/${b64url(key)}`],
      ['upper-case body', `/notify/v1/otps/${bodyOf(key).toUpperCase()}`],
      ['24 characters of the body', `/notify/v1/otps/x${bodyOf(key).slice(3, 27)}`],
    ] as const) {
      const r = await send(t.port, path, { headers: { 'X-API-Key': key } });
      assertRefused(r, label);
      replies.push(r);
    }
    await waitExposed('initech', k.id);
    for (const l of await assertNotLogged(key, 'scope-refused copies', replies))
      assert.deepEqual([l.path, l.status], [REDACTED, 401], 'access line');
    // The same key on its own path still works.
    assert.equal((await send(t.port, '/notify/v1/health', { headers: { 'X-API-Key': key } })).status, 200);
  });

  test('a key over its limit with its material in the URL: 401 KEY_IN_URL (not 429), not logged', async () => {
    assert.equal(
      (await send(t.port, '/notify/v1/otps', { headers: { 'X-API-Key': limited.key } })).status,
      200,
    );
    assert.equal(
      (await send(t.port, '/notify/v1/otps', { headers: { 'X-API-Key': limited.key } })).status,
      429,
    );
    const replies: Reply[] = [];
    for (const path of [`/notify/v1/otps/${bodyOf(limited.key)}`, `/notify/v1/otps/${b64url(limited.key)}`]) {
      const r = await send(t.port, path, { headers: { 'X-API-Key': limited.key } });
      assertRefused(r, path.slice(0, 30));
      replies.push(r);
    }
    await waitExposed('acme', limited.id);
    for (const l of await assertNotLogged(limited.key, 'over the limit', replies))
      assert.equal(l.path, REDACTED, 'access line');
  });

  test('no key, a matrix parameter, separators, another company’s key: refused before authentication, flagged exposed', async () => {
    const body = bodyOf(other.key);
    const cases: [string, string, Record<string, string>][] = [
      ['no key, bare body', `/notify/v1/otps/${body}`, {}],
      ['no key, matrix parameter', `/notify/v1/health;k=${body}`, {}],
      [
        'own key, other company’s key with separators',
        `/notify/v1/x/${other.key.split('').join('-')}`,
        { 'X-API-Key': scoped.key },
      ],
      [
        'own key, other company’s body with dots',
        `/notify/v1/x/${body.split('').join('.')}`,
        { 'X-API-Key': scoped.key },
      ],
      [
        'own key, other body over two segments',
        `/notify/v1/x/${body.slice(0, 19)}/${body.slice(19)}`,
        { 'X-API-Key': scoped.key },
      ],
      [
        'invalid key, other company’s body',
        `/notify/v1/otps/${body}`,
        { 'X-API-Key': generateApiKey('live') },
      ],
    ];
    const replies: Reply[] = [];
    for (const [label, path, headers] of cases) {
      const r = await send(t.port, path, { headers });
      assertRefused(r, label);
      replies.push(r);
    }
    await waitExposed('globex', other.id);
    for (const l of await assertNotLogged(other.key, 'pre-auth', replies))
      assert.equal(l.path, REDACTED, 'access line');
    // Only the requests without key material reached the upstream (the limited key's first, the health check).
    assert.deepEqual(upstream.received.map((r) => r.url).sort(), ['/notify/v1/health', '/notify/v1/otps']);
  });

  test('an unknown key with its own copy in the path: 401 INVALID_KEY, the copy redacted in the log', async () => {
    const unknown = generateApiKey('live');
    // The upper-cased key in base64url: no valid checksum before authentication (the URL guard
    // passes it), the presented key's material for the log rule. (Its checksum-valid base64url copy
    // is refused KEY_IN_URL before authentication: see the last describe.)
    const copy = b64url(unknown.toUpperCase());
    const r = await send(t.port, `/notify/v1/otps/${copy}`, { headers: { 'X-API-Key': unknown } });
    assert.equal(r.status, 401);
    assert.notDeepEqual(r.json, { error: 'Unauthorized', details: KEY_IN_URL });
    const [line] = await assertNotLogged(unknown, 'unknown key', [r]);
    assert.equal(line!.path, REDACTED);
    assert.ok(!t.logText().includes(copy.slice(0, 30)), 'the base64url copy reached the log');
    // Benign paths of refused requests are still logged as sent.
    const benign = await send(t.port, '/notify/v1/otps/12345', { headers: { 'X-API-Key': unknown } });
    assert.equal((await lineOf(t, benign)).path, '/notify/v1/otps/12345');
  });
});

describe('refused by the failed-authentication budget, the presented key’s copy is not logged', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;

  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream({
      guards: { level: 'strict' },
      rateLimit: { authFailures: { enabled: true, points: 2, duration: 60 } },
    }));
  });
  after(() => close?.());

  test('429 AUTH_RATE_LIMITED with a valid key: its base64url copy in the path is redacted', async () => {
    for (let i = 0; i < 3; i++)
      await send(t.port, '/notify/v1/otps', { headers: { 'X-API-Key': 'nk_live_' + 'x'.repeat(38) } });
    const r = await send(t.port, `/notify/v1/otps/${b64url(key)}`, { headers: { 'X-API-Key': key } });
    assert.equal(r.status, 429);
    const last = await lineOf(t, r);
    assert.equal(last.status, 429);
    assert.equal(last.path, REDACTED);
    assert.ok(!t.logText().includes(b64url(key).slice(0, 30)), 'the base64url copy reached the log');
    assert.equal(upstream.received.length, 0);
  });
});

describe('query string: PHP-style override names and legacy key encodings are refused', () => {
  let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;

  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream({
      guards: { level: 'strict' },
      rateLimit: { authFailures: { enabled: false } },
    }));
  });
  after(() => close?.());

  test('`%20_method`, `+_method`, `.method`, `_method[]`, `[_method]` are refused 400, `method` passes', async () => {
    for (const q of [
      '%20_method',
      '+_method',
      '%20%20_method',
      '+%20_method',
      '.method',
      '_method[]',
      '_method%5B%5D',
      '[_method]',
      '%09_method',
      '+_METHOD',
    ]) {
      const r = await send(t.port, `/notify/v1/otps/1?${q}=DELETE`, {
        method: 'POST',
        headers: { 'X-API-Key': key },
        body: '{}',
      });
      assert.equal(r.status, 400, q);
      assert.deepEqual(
        r.json,
        { error: 'Bad Request', details: 'Method overrides in the URL are not accepted' },
        q,
      );
    }
    assert.equal(upstream.received.length, 0, 'an override reached the upstream');
    const ok = await send(t.port, '/notify/v1/otps/1?method=sms&+method=sms&%20method=x', {
      method: 'POST',
      headers: { 'X-API-Key': key },
      body: '{}',
    });
    assert.equal(ok.status, 200);
    upstream.received.length = 0;
  });

  test('%u, overlong UTF-8 and a key split over parameters are refused KEY_IN_URL, never forwarded', async () => {
    const other = generateApiKey('live');
    const body = bodyOf(key);
    const cases: [string, string][] = [
      ['%u, own key', `/notify/v1/otps?q=${pctU(key)}`],
      ['%u, own body', `/notify/v1/otps?q=${pctU(body)}`],
      ['overlong 2-byte', `/notify/v1/otps?q=${overlong2(key)}`],
      ['overlong 3-byte', `/notify/v1/otps?q=${overlong3(key)}`],
      ['overlong 2-byte, other key', `/notify/v1/otps?q=${overlong2(other)}`],
      [
        'split over parameters',
        `/notify/v1/otps?${[...body].map((c, i) => `${'xy'[i % 2]}=${c}`).join('&')}`,
      ],
      ['nk_ shape split over two parameters', `/notify/v1/otps?a=${other.slice(0, 20)}&b=${other.slice(20)}`],
      [
        'other body split over parameters',
        `/notify/v1/otps?${[...bodyOf(other)].map((c, i) => `p${i}=${c}`).join('&')}`,
      ],
    ];
    for (const [label, path] of cases) {
      const r = await send(t.port, path, { headers: { 'X-API-Key': key } });
      assert.equal(r.status, 401, label);
      assert.deepEqual(r.json, { error: 'Unauthorized', details: KEY_IN_URL }, label);
    }
    assert.equal(upstream.received.length, 0, 'a URL holding a key was forwarded');
    // Not a false positive: ordinary parameters and %u text without a key pass.
    const ok = await send(t.port, '/notify/v1/otps?to=%2B4915112345678&channel=sms&text=%u0048i', {
      headers: { 'X-API-Key': key },
    });
    assert.equal(ok.status, 200);
  });
});

/**
 * Self-contained (own gateway, upstream and helpers): the presented key split over URL parts
 * reaches no upstream and no log; the key inside a malformed
 * key header is still the material the access line redacts.
 */
describe('the key split inside the URL, and keys in malformed key headers', () => {
  let upstream: RecordingUpstream;
  let t: TestGateway;
  let key: string;
  let close: (() => Promise<void>) | undefined;

  before(async () => {
    ({ t, upstream, key, close } = await gatewayWithUpstream(
      { guards: { level: 'strict' }, rateLimit: { authFailures: { enabled: false } } },
      { company: 'split-co' },
    ));
  });
  after(() => close?.());

  const secretOf = (k: string) => k.slice(k.indexOf('_', 3) + 1);
  /** No 24-character piece of the secret, in any case, in any log line. */
  function assertSecretNotLogged(k: string, label: string): void {
    const log = t.logText().toLowerCase();
    const secret = secretOf(k).toLowerCase();
    for (let i = 0; i + 24 <= secret.length; i++)
      assert.ok(
        !log.includes(secret.slice(i, i + 24)),
        `${label}: 24 characters of the secret reached the log`,
      );
  }
  async function accessLine(r: Reply): Promise<Record<string, unknown>> {
    const id = r.headers['x-request-id'];
    const find = () => t.logs().find((l) => l.msg === 'request' && l.requestId === id);
    await eventually(async () => find() !== undefined, 3000);
    return find()!;
  }

  test('the presented key split over segments, matrix and query parts is 401 KEY_IN_URL, not forwarded, not logged', async () => {
    const b = secretOf(key);
    const pct = (s: string) => [...s].map((c) => '%' + c.charCodeAt(0).toString(16)).join('');
    const cases: [string, string][] = [
      ['path and query value', `/notify/v1/send/${b.slice(0, 19)}?x=${b.slice(19)}`],
      ['two query values', `/notify/v1/send?x=${b.slice(0, 19)}&y=1&z=${b.slice(19)}`],
      [
        'three 13-character pieces',
        `/notify/v1/send?a=${b.slice(0, 13)}&y=1&b=${b.slice(13, 26)}&y=1&c=${b.slice(26)}`,
      ],
      ['two segments', `/notify/v1/send/${b.slice(0, 19)}/a/${b.slice(19)}`],
      ['matrix parameter', `/notify/v1/send/${b.slice(0, 19)};x=${b.slice(19)}`],
      ['reverse order', `/notify/v1/send/${b.slice(19)}?x=${b.slice(0, 19)}`],
      ['with the prefix', `/notify/v1/send/nk_live_${b.slice(0, 19)}?x=${b.slice(19)}`],
      ['query names', `/notify/v1/send?${b.slice(0, 19)}=1&${b.slice(19)}=2`],
      ['%-encoded pieces', `/notify/v1/send/${pct(b.slice(0, 19))}?x=${pct(b.slice(19))}`],
    ];
    for (const [label, path] of cases) {
      const r = await send(t.port, path, { method: 'POST', headers: { 'X-API-Key': key }, body: '{}' });
      assert.equal(r.status, 401, label);
      assert.deepEqual(r.json, { error: 'Unauthorized', details: KEY_IN_URL }, label);
      assert.equal((await accessLine(r)).path, REDACTED, label);
    }
    assert.equal(upstream.received.length, 0, 'a URL holding the split key was forwarded');
    assertSecretNotLogged(key, 'split');
    // Not a false positive: pieces covering only 22 characters pass.
    const lower = b.toLowerCase();
    const sep = (at: number) => ['0', '1', '2'].find((c) => c !== lower[at] && c !== lower[at - 1])!;
    const ok = await send(
      t.port,
      `/notify/v1/send/${b.slice(0, 11)}?${sep(11)}${sep(20)}=${b.slice(20, 31)}`,
      {
        method: 'POST',
        headers: { 'X-API-Key': key },
        body: '{}',
      },
    );
    assert.equal(ok.status, 200);
    upstream.received.length = 0;
  });

  test('a key in a malformed key header keeps its 401, and its copy in the path is not logged', async () => {
    const victim = (await createCompanyAndKey(t.gw.service, 'victim-co')).key;
    const b = secretOf(victim);
    const headerSets: [string, [string, string][]][] = [
      [
        'X-API-Key twice',
        [
          ['X-API-Key', victim],
          ['X-API-Key', victim],
        ],
      ],
      ['X-API-Key: Bearer K', [['X-API-Key', `Bearer ${victim}`]]],
      ['K followed by junk', [['X-API-Key', `${victim}#junk`]]],
      ['K over keys.maxLength', [['X-API-Key', victim + 'A'.repeat(300)]]],
      ['only Authorization: Bearer K', [['Authorization', `Bearer ${victim}`]]],
      ['only X_API_KEY', [['X_API_KEY', victim]]],
    ];
    // Copies the URL guard cannot confirm before authentication (no valid checksum as written):
    // the upper-cased key in base64url, the lower-cased body. A checksum-valid base64url copy is
    // refused KEY_IN_URL before authentication.
    for (const [label, headers] of headerSets)
      for (const path of [
        `/notify/v1/send/${b64url(victim.toUpperCase())}`,
        `/notify/v1/send/${b.toLowerCase()}`,
      ]) {
        const r = await send(t.port, path, { method: 'POST', headers, body: '{}' });
        assert.equal(r.status, 401, `${label}: ${path}`);
        const details = (r.json as { details?: string }).details;
        assert.notEqual(details, KEY_IN_URL, `${label}: the answer stays the authentication failure`);
        assert.equal((await accessLine(r)).path, REDACTED, `${label}: ${path}`);
      }
    assert.equal(upstream.received.length, 0);
    assertSecretNotLogged(victim, 'malformed key header');
  });
});

/**
 * A valid key (or its bare body) in base64 or hex in the URL, sent without
 * a key header or with another company's key, was answered 401 MISSING_KEY (404 unrouted), logged
 * verbatim and not flagged exposed. Now it is a key in the URL before authentication, like a plain
 * one: 401 KEY_IN_URL on a route, 404 elsewhere, the path redacted, the key flagged (one
 * `key.exposed` audit entry per request), nothing forwarded.
 */
describe('base64 and hex keys in the URL before authentication', () => {
  let t: TestGateway, upstream: RecordingUpstream, close: (() => Promise<void>) | undefined;
  let victim: { id: string; key: string };
  /** Another company's valid key, presented in X-API-Key. */
  let presented: string;

  before(async () => {
    const f = await gatewayWithUpstream(
      { guards: { level: 'strict' }, rateLimit: { authFailures: { enabled: false } } },
      { company: 'f2-co' },
    );
    ({ t, upstream, close } = f);
    presented = f.key;
    const v = await createCompanyAndKey(t.gw.service, 'f2-victim');
    victim = { id: v.id, key: v.key };
  });
  after(() => close?.());

  async function exposedAudits(): Promise<number> {
    const a = await t.gw.service.readAudit({ companyId: 'f2-victim', limit: 1000 });
    assert.ok(a.ok, JSON.stringify(a));
    return a.value.filter((e) => e.event === 'key.exposed' && e.keyId === victim.id).length;
  }

  test('base64url, base64 with +/= %-encoded, hex; at each byte offset of a blob; path, query value and name, matrix; routed and unrouted', async () => {
    const body = bodyOf(victim.key);
    const encodings: [string, (b: Buffer) => string][] = [
      ['base64url', (b) => b.toString('base64url')],
      ['base64, +/= %-encoded', (b) => encodeURIComponent(b.toString('base64'))],
      ['hex', (b) => b.toString('hex')],
      ['HEX', (b) => b.toString('hex').toUpperCase()],
    ];
    const places: [string, (e: string) => string][] = [
      ['path segment', (e) => `/${e}`],
      ['query value', (e) => `?cursor=${e}`],
      ['query name', (e) => `?${e}=1`],
      ['matrix parameter', (e) => `;s=${e}`],
    ];
    let sent = 0;
    const encodedForms: string[] = [];
    for (const [enc, encode] of encodings)
      for (const material of [victim.key, body])
        for (let lead = 0; lead < 3; lead++) {
          // Base64 standard with `+/` in it: 0xfb 0xff bytes around the key make both appear.
          const blob = Buffer.concat([
            Buffer.from([0xfb, 0xff, 0xfe].slice(0, lead)),
            Buffer.from(material),
            Buffer.from([0xfb, 0xef]),
          ]);
          const e = encode(blob);
          encodedForms.push(e);
          for (const [place, at] of places)
            for (const [base, status] of [
              ['/notify/v1/otps', 401],
              ['/unrouted', 404],
            ] as const)
              for (const headers of [{}, { 'X-API-Key': presented }] as Record<string, string>[]) {
                const label = `${enc}, ${lead} bytes before, ${material === body ? 'body' : 'key'}, ${place}, ${base}, ${'X-API-Key' in headers ? 'another key' : 'no key'}`;
                const r = await send(t.port, `${base}${at(e)}`, { headers });
                sent++;
                assert.equal(r.status, status, label);
                if (status === 401)
                  assert.deepEqual(r.json, { error: 'Unauthorized', details: KEY_IN_URL }, label);
                const line = await lineOf(t, r);
                assert.deepEqual([line.path, line.status], [REDACTED, status], label);
              }
        }
    assert.equal(upstream.received.length, 0, 'a URL holding a key was forwarded');
    // The access lines and every other log line: no key, no body (any case), no encoded form.
    const log = t.logText();
    for (const needle of [victim.key, body, body.toLowerCase(), ...encodedForms])
      assert.ok(!log.includes(needle), `reached the log: ${needle.slice(0, 40)}`);
    assert.ok(!log.toLowerCase().includes(body.toLowerCase().slice(0, 24)));
    // Flagged once per request (an audit entry each), whatever the answer, routed or not.
    await eventually(async () => (await exposedAudits()) === sent, 5000);
    assert.equal(await exposedAudits(), sent);
    const list = await t.gw.service.listKeys('f2-victim');
    assert.ok(list.ok && list.value.find((k) => k.id === victim.id)?.exposedAt);
  });

  test('three such requests, as curl sends them', async () => {
    const b64u = b64url(victim.key).replace(/=+$/, '');
    const hex = Buffer.from(victim.key).toString('hex');
    for (const [path, status] of [
      [`/notify/v1/${b64u}`, 401],
      [`/unrouted/${b64u}`, 404],
      [`/notify/v1/${hex}`, 401],
    ] as const) {
      const r = await send(t.port, path);
      assert.equal(r.status, status, path);
      assert.equal((await lineOf(t, r)).path, REDACTED, path);
    }
    assert.ok(!t.logText().includes(b64u) && !t.logText().includes(hex));
  });

  test('no false positives: UUIDs, sha256 digests and long base64 tokens that are not keys are routed and logged', async () => {
    upstream.received.length = 0;
    const token = Buffer.from(Array.from({ length: 96 }, (_, i) => (i * 37 + 11) & 0xff)).toString(
      'base64url',
    );
    for (const path of [
      '/notify/v1/messages/123e4567-e89b-12d3-a456-426614174000',
      '/notify/v1/blobs/e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      '/notify/v1/blobs/E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855',
      `/notify/v1/otps/${token}`,
      `/notify/v1/otps?cursor=${token}`,
    ]) {
      const r = await send(t.port, path, { headers: { 'X-API-Key': presented } });
      assert.equal(r.status, 200, path);
      assert.equal((await lineOf(t, r)).path, path.split('?')[0], path);
    }
    assert.equal(upstream.received.length, 5);
  });
});
