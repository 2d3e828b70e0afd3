import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { sha256Hex } from '../../src/admin/roles.js';
import { createdKeySchema, keyViewSchema } from '../../src/admin/schemas.js';
import { adminApi, assertDocumentedAnswer, type AdminCall } from '../helpers/admin.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { send, sendRaw } from '../helpers/http.js';

const TOKENS = {
  reader: 'reader-token-http-0123456789ab',
  keyops: 'keyops-token-http-0123456789ab',
  root: ADMIN_TOKEN,
};
type Who = keyof typeof TOKENS;
const EVERY_ROLE: Who[] = ['reader', 'keyops', 'root'];

/** One answer of the admin port, checked against the OpenAPI document like every adminApi answer. */
interface Answer {
  status: number;
  headers: Headers;
  text: string;
  body: Record<string, unknown> & Record<string, unknown>[];
}

/** The HTTP semantics of the admin port: bodies, media types, unknown paths and methods, probes. */
describe('admin API: bodies, media types, unknown paths and methods', () => {
  let t: TestGateway;
  let as: Record<Who, AdminCall>;
  let keyId: string;

  /** A request with full control of the headers and the body (fetch adds no Content-Type). */
  async function call(
    method: string,
    path: string,
    opts: { who?: Who | null; headers?: Record<string, string>; body?: string } = {},
  ): Promise<Answer> {
    const who = opts.who === undefined ? 'root' : opts.who;
    const res = await fetch(`http://127.0.0.1:${t.adminPort}${path}`, {
      method,
      headers: { ...(who ? { Authorization: `Bearer ${TOKENS[who]}` } : {}), ...opts.headers },
      ...(opts.body !== undefined ? { body: opts.body } : {}),
    });
    const text = await res.text();
    let body: unknown = null;
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
    const answer = { status: res.status, headers: res.headers, text, body: body as Answer['body'] };
    assertDocumentedAnswer(method, path, answer);
    return answer;
  }

  /** A request with no body and neither Content-Length nor Transfer-Encoding (curl -X POST). */
  async function bodiless(method: string, path: string): Promise<{ status: number; body: unknown }> {
    const raw = await sendRaw(
      t.adminPort,
      `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n` +
        'Content-Type: application/json\r\nConnection: close\r\n\r\n',
    );
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(raw)?.[1]);
    const text = raw.slice(raw.indexOf('\r\n\r\n') + 4);
    assert.match(raw, /\r\ncontent-type: application\/json; charset=utf-8\r\n/i, raw);
    return { status, body: JSON.parse(text) };
  }

  before(async () => {
    t = await startTestGateway({
      store: { type: 'memory' },
      keys: { maxActiveKeys: 0 },
      admin: {
        tokens: [
          { name: 'reader', role: 'read', sha256: sha256Hex(TOKENS.reader) },
          { name: 'keyops', role: 'keys', sha256: sha256Hex(TOKENS.keyops) },
        ],
      },
    });
    as = {
      reader: adminApi(t.adminPort, TOKENS.reader),
      keyops: adminApi(t.adminPort, TOKENS.keyops),
      root: adminApi(t.adminPort, TOKENS.root),
    };
    assert.equal((await as.root('POST', '/admin/v1/companies', { id: 'acme' })).status, 201);
    const k = await as.root('POST', '/admin/v1/companies/acme/keys', { label: 'one' });
    assert.equal(k.status, 201, k.text);
    keyId = String(k.body.id);
  });
  after(() => t.close());

  test('a missing or empty body where one is required: 400 naming what is missing', async () => {
    const companyFields = 'at least one of name, tier, status, apiAccess, scopes, limits is required';
    const expected: [string, string, string][] = [
      ['POST', '/admin/v1/companies', 'body: a JSON object is required; id: Required'],
      ['PATCH', '/admin/v1/companies/acme', `body: a JSON object is required; ${companyFields}`],
      [
        'PATCH',
        `/admin/v1/keys/${keyId}`,
        'body: a JSON object is required; at least one of scopes, limits is required',
      ],
    ];
    for (const [method, path, details] of expected) {
      const want = { error: 'Bad Request', details };
      // No body at all (no Content-Length, no Transfer-Encoding), as `curl -X POST` sends it.
      assert.deepEqual(await bodiless(method, path), { status: 400, body: want }, `${method} ${path}`);
      // An empty body (Content-Length: 0), with or without a Content-Type.
      const empty = await call(method, path, { headers: { 'Content-Type': 'application/json' }, body: '' });
      assert.deepEqual([empty.status, empty.body], [400, want], `${method} ${path} empty`);
      const untyped = await call(method, path);
      assert.deepEqual([untyped.status, untyped.body], [400, want], `${method} ${path} untyped`);
      // A JSON array is not an object.
      const list = await as.root(method, path, [{ id: 'acme-2' }]);
      assert.deepEqual(
        [list.status, list.body],
        [400, { error: 'Bad Request', details: 'body: must be a JSON object' }],
      );
      // An explicit {} is validated as any other body: the field, without the body sentence.
      const obj = await as.root(method, path, {});
      assert.equal(obj.status, 400);
      assert.equal(obj.body.details, details.replace('body: a JSON object is required; ', ''));
    }
    // The bodies of key create and rotate are optional: absent means {}.
    const created = await bodiless('POST', '/admin/v1/companies/acme/keys');
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const newId = (created.body as { id: string }).id;
    const rotated = await call('POST', `/admin/v1/keys/${newId}/rotate`);
    assert.equal(rotated.status, 201, rotated.text);
    const list = await as.root('POST', '/admin/v1/companies/acme/keys', []);
    assert.deepEqual([list.status, list.body.details], [400, 'body: must be a JSON object']);
    // Nothing was changed by a refused request.
    const companies = await as.root('GET', '/admin/v1/companies');
    assert.deepEqual(
      companies.list.map((c) => c.id),
      ['acme'],
    );
    assert.equal((await as.root('GET', '/admin/v1/companies/acme')).body.status, 'active');
  });

  test('only application/json is read: any other media type is 415, never a silent "Required"', async () => {
    const json = '{"id":"typed-co"}';
    for (const type of [
      'application/json-patch+json',
      'application/merge-patch+json',
      'application/vnd.api+json',
      'application/jsonx',
      'application/json-seq',
      'application/json5',
      'text/json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/json; charset=latin-9', // a charset it does not decode
      'json',
      '',
    ]) {
      const r = await call('POST', '/admin/v1/companies', { headers: { 'Content-Type': type }, body: json });
      assert.deepEqual(
        [r.status, r.body],
        [415, { error: 'Unsupported Media Type', details: 'Content-Type must be application/json' }],
        type,
      );
    }
    // Before the role check is reached, whatever the path or the role.
    const patch = await call('PATCH', `/admin/v1/keys/${keyId}`, {
      who: 'reader',
      headers: { 'Content-Type': 'application/json-patch+json' },
      body: '[{"op":"remove","path":"/scopes"}]',
    });
    assert.equal(patch.status, 415);
    assert.equal((await as.root('GET', '/admin/v1/companies/typed-co')).status, 404, 'nothing was created');
    // The exact media type, in any case, with parameters.
    let n = 0;
    for (const type of [
      'application/json',
      'APPLICATION/JSON',
      'Application/Json; charset=utf-8',
      'application/json;charset="UTF-8"',
      ' application/json ; charset=utf-8',
    ]) {
      const r = await call('POST', '/admin/v1/companies', {
        headers: { 'Content-Type': type },
        body: JSON.stringify({ id: `typed-${++n}` }),
      });
      assert.equal(r.status, 201, `${type}: ${r.text}`);
    }
  });

  test('application/json with a charset other than UTF-8 is 415, in any spelling; nothing is created', async () => {
    const json = '{"id":"charset-co"}';
    for (const type of [
      'application/json; charset=utf-16',
      'application/json; charset=UTF-16LE',
      'application/json; charset="utf-16"',
      'application/json;charset=utf-32',
      'application/json; charset=utf-7',
      'application/json; charset=utf8',
      'application/json; charset=iso-8859-1',
      'application/json; charset=us-ascii',
      'application/json; charset=""',
      'application/json; charset=',
      'application/json; charset=utf-8; charset=utf-16',
      'application/json; CHARSET=Utf-16',
    ]) {
      const r = await call('POST', '/admin/v1/companies', { headers: { 'Content-Type': type }, body: json });
      assert.deepEqual(
        [r.status, r.body],
        [415, { error: 'Unsupported Media Type', details: 'Content-Type must be application/json' }],
        type,
      );
    }
    assert.equal((await as.root('GET', '/admin/v1/companies/charset-co')).status, 404, 'nothing was created');
    // UTF-8 in any case, quoted or not, and other parameters, are read.
    let n = 0;
    for (const type of [
      'application/json; charset=UTF-8',
      'application/json; charset="utf-8"',
      'application/json; Charset=Utf-8; foo=bar',
    ]) {
      const r = await call('POST', '/admin/v1/companies', {
        headers: { 'Content-Type': type },
        body: JSON.stringify({ id: `charset-${++n}` }),
      });
      assert.equal(r.status, 201, `${type}: ${r.text}`);
    }
  });

  test('query parameters: repeated, array-shaped or unknown ones are 400 naming them; nothing is ignored', async () => {
    const cases: [string, string][] = [
      ['/admin/v1/audit?companyId[]=acme', 'companyId'],
      ['/admin/v1/audit?companyId%5B%5D=acme', 'companyId'],
      ['/admin/v1/audit?companyId=acme&companyId=other', 'companyId'],
      ['/admin/v1/audit?companyId[x]=acme', 'companyId'],
      ['/admin/v1/audit?limit[]=5', 'limit'],
      ['/admin/v1/audit?limit=1&limit=2', 'limit'],
      ['/admin/v1/audit?company=acme', 'company'],
      ['/admin/v1/audit?companyId=', 'companyId'],
      ['/admin/v1/audit?companyId=a%20b', 'companyId'],
      ['/admin/v1/companies/acme/usage?granularity=day&granularity=hour', 'granularity'],
      ['/admin/v1/companies/acme/usage?from[]=2026-01-01', 'from'],
      ['/admin/v1/companies/acme/usage?granularit=day', 'granularit'],
      ['/admin/v1/companies?limit=1', 'limit'],
      ['/admin/v1/companies?status=suspended', 'status'],
      ['/admin/v1/companies/acme?x=1', 'x'],
      ['/admin/v1/companies/acme/keys?status=active', 'status'],
      [`/admin/v1/keys/${keyId}?x=1`, 'x'],
      ['/admin/v1/openapi.json?format=yaml', 'format'],
    ];
    for (const who of EVERY_ROLE) {
      for (const [path, name] of cases) {
        const r = await call('GET', path, { who });
        assert.equal(r.status, 400, `${who} ${path}: ${r.text}`);
        assert.equal(r.body.error, 'Bad Request', path);
        assert.ok(
          String(r.body.details).startsWith(`${name}: `) || String(r.body.details).includes(` ${name}`),
          `${path}: ${r.body.details}`,
        );
      }
    }
    // Writes too: a query string on a POST, PATCH or DELETE is refused before anything changes.
    const del = await call('DELETE', `/admin/v1/keys/${keyId}?force=1`);
    assert.equal(del.status, 400, del.text);
    assert.equal((await as.root('GET', `/admin/v1/keys/${keyId}`)).body.status, 'active', 'not revoked');
    const post = await as.root('POST', '/admin/v1/companies?dryRun=1', { id: 'query-co' });
    assert.equal(post.status, 400, post.text);
    assert.equal((await as.root('GET', '/admin/v1/companies/query-co')).status, 404, 'not created');
    // A name that looks like a key is not echoed.
    const pasted = await call('GET', '/admin/v1/audit?nk_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=1');
    assert.equal(pasted.status, 400);
    assert.doesNotMatch(pasted.text, /nk_live/);
    // The documented parameters, each given once, still answer.
    assert.equal((await call('GET', '/admin/v1/audit?companyId=acme&limit=5')).status, 200);
    assert.equal((await call('GET', '/admin/v1/companies')).status, 200);
    assert.equal((await call('GET', '/admin/v1/companies?')).status, 200);
  });

  test('scope paths that no safe request path can match are 400 naming the field, on create and patch', async () => {
    const paths = [
      '/notify/v1/../media',
      '/notify/v1/./otps',
      '/notify/v1/..',
      '/notify/v1/.',
      '/notify/v1/...',
      '/notify/v1//otps',
      '/notify/v1/%2e%2e/media',
      '/notify/v1/%2E/otps',
      '/notify/v1/otps%2fx',
      '/notify/v1\\..\\media',
      '/notify/v1/ｏtps',
      '//notify/v1',
    ];
    for (const p of paths) {
      const scopes = [{ route: '/notify/v1', paths: [p] }];
      const created = await as.root('POST', '/admin/v1/companies', { id: 'scope-co', scopes });
      assert.equal(created.status, 400, `${p}: ${created.text}`);
      assert.match(String(created.body.details), /^scopes\.0\.paths\.0: /, p);
      const patched = await as.root('PATCH', '/admin/v1/companies/acme', { scopes });
      assert.equal(patched.status, 400, `${p}: ${patched.text}`);
      assert.match(String(patched.body.details), /^scopes\.0\.paths\.0: /, p);
      const key = await as.root('PATCH', `/admin/v1/keys/${keyId}`, { scopes });
      assert.equal(key.status, 400, `${p}: ${key.text}`);
      assert.match(String(key.body.details), /^scopes\.0\.paths\.0: /, p);
    }
    const route = await as.root('POST', '/admin/v1/companies', {
      id: 'scope-co',
      scopes: [{ route: '/notify/v1/..' }],
    });
    assert.equal(route.status, 400, route.text);
    assert.match(String(route.body.details), /^scopes\.0\.route: /);
    // Nothing changed.
    assert.equal((await as.root('GET', '/admin/v1/companies/scope-co')).status, 404);
    assert.equal((await as.root('GET', '/admin/v1/companies/acme')).body.scopes, null);
    assert.equal((await as.root('GET', `/admin/v1/keys/${keyId}`)).body.scopes, null);
    // Dots inside a segment are fine.
    const fine = await as.root('POST', '/admin/v1/companies', {
      id: 'scope-co',
      scopes: [
        { route: '/notify/v1', paths: ['/notify/v1/otps.v2', '/notify/v1/.well-known', '/notify/v1/a..b/'] },
      ],
    });
    assert.equal(fine.status, 201, fine.text);
  });

  test('names and labels: control, bidi, zero-width and unpaired surrogate characters are 400 naming the field', async () => {
    const bad = [
      'line\nbreak',
      'tab\there',
      'nul\u0000',
      'esc\u001b[31m',
      'del\u007f',
      'c1\u0085',
      'c1\u009b',
      'rlo\u202egnp.exe',
      'lre\u202a',
      'lrm\u200e',
      'rlm\u200f',
      'isolate\u2066x\u2069',
      'zero\u200bwidth',
      'word joiner\u2060',
      'bom\ufeffx',
      'ls\u2028x',
      'lone \ud800',
      'lone \udc00',
      'reversed \udc00\ud800',
      // Final attacker re-check: nothing visible, stacked or baseless marks, unassigned code points.
      '\u200d\u200d',
      '\ufe0f\ufe0f',
      '\u2800\u2800',
      'zalgo' + '\u0336'.repeat(30),
      '\u0301mark first',
      'unassigned \u0378',
      'nonchar \uffff',
    ];
    for (const text of bad) {
      // JSON.stringify writes control characters and unpaired surrogates as \u escapes.
      const where = JSON.stringify(text);
      const created = await as.root('POST', '/admin/v1/companies', { id: 'text-co', name: text });
      assert.equal(created.status, 400, `${where}: ${created.text}`);
      assert.match(String(created.body.details), /^name: /, where);
      const patched = await as.root('PATCH', '/admin/v1/companies/acme', { name: text });
      assert.equal(patched.status, 400, `${where}: ${patched.text}`);
      assert.match(String(patched.body.details), /^name: /, where);
      const key = await as.root('POST', '/admin/v1/companies/acme/keys', { label: text });
      assert.equal(key.status, 400, `${where}: ${key.text}`);
      assert.match(String(key.body.details), /^label: /, where);
      const rotated = await as.root('POST', `/admin/v1/keys/${keyId}/rotate`, { label: text });
      assert.equal(rotated.status, 400, `${where}: ${rotated.text}`);
      assert.match(String(rotated.body.details), /^label: /, where);
    }
    // Nothing changed: no company, the name as it was, no new key, the key not rotated.
    assert.equal((await as.root('GET', '/admin/v1/companies/text-co')).status, 404);
    assert.equal((await as.root('GET', '/admin/v1/companies/acme')).body.name, 'acme');
    const key = await as.root('GET', `/admin/v1/keys/${keyId}`);
    assert.equal(key.body.rotatedTo, null);
    // Letters of any script, emoji (a surrogate pair), spaces and punctuation are fine, and so are
    // the zero-width non-joiner and joiner (a Persian spelling, an emoji sequence).
    const fine = await as.root('POST', '/admin/v1/companies', {
      id: 'text-co',
      name: 'Acme GmbH — Zürich, 東京 & שלום 🚀 می\u200cخواهم 👩\u200d👧 Nguye\u0302\u0303n ❤️',
    });
    assert.equal(fine.status, 201, fine.text);
  });

  test('company ids are case-sensitive: ACME and acme are two companies (docs/admin.md)', async () => {
    const upper = await as.root('POST', '/admin/v1/companies', { id: 'ACME' });
    assert.equal(upper.status, 201, upper.text);
    assert.equal((await as.root('GET', '/admin/v1/companies/ACME')).body.id, 'ACME');
    assert.equal((await as.root('GET', '/admin/v1/companies/acme')).body.id, 'acme');
    const page = readFileSync(new URL('../../docs/admin.md', import.meta.url), 'utf8');
    assert.match(page, /ids are `[^`]+` and\s+\*\*case-sensitive\*\*: `ACME` and `acme` are two companies/);
  });

  test('an unknown admin path is 404 for every role, 401 without a token', async () => {
    for (const path of [
      '/admin/v1/nothing-here',
      '/admin/v1/companies/acme/nothing',
      '/admin/v2/companies',
      '/x',
    ]) {
      for (const who of EVERY_ROLE) {
        for (const method of ['GET', 'POST', 'DELETE']) {
          const r = await as[who](method, path, method === 'POST' ? {} : undefined);
          assert.deepEqual(
            [r.status, r.body],
            [404, { error: 'Not Found', details: 'No admin route matches this path' }],
            `${who} ${method} ${path}`,
          );
        }
      }
      const anon = await call('GET', path, { who: null });
      assert.equal(anon.status, 401, path);
      assert.equal(anon.headers.get('www-authenticate'), 'Bearer realm="notify-gateway-admin"');
    }
    // A known route still needs its role: unknown paths opened nothing.
    assert.equal((await as.reader('POST', '/admin/v1/companies', { id: 'by-reader' })).status, 403);
  });

  test('a method a path does not serve, OPTIONS included: 405 JSON with Allow, for every role', async () => {
    const cases: [string, string, string][] = [
      ['PUT', `/admin/v1/keys/${keyId}`, 'GET, HEAD, PATCH, DELETE'],
      ['OPTIONS', `/admin/v1/keys/${keyId}`, 'GET, HEAD, PATCH, DELETE'],
      ['OPTIONS', '/admin/v1/companies', 'POST, GET, HEAD'],
      ['DELETE', '/admin/v1/companies', 'POST, GET, HEAD'],
      ['PUT', '/admin/v1/companies/acme', 'GET, HEAD, PATCH'],
      ['GET', `/admin/v1/keys/${keyId}/rotate`, 'POST'],
      ['OPTIONS', '/admin/v1/openapi.json', 'GET, HEAD'],
      ['POST', '/metrics', 'GET, HEAD'],
      ['OPTIONS', '/healthz', 'GET, HEAD'],
      ['POST', '/readyz', 'GET, HEAD'],
      // Express matches paths in any case and with a trailing slash: so does the 405.
      ['OPTIONS', '/ADMIN/V1/COMPANIES', 'POST, GET, HEAD'],
      ['OPTIONS', '/admin/v1/companies/', 'POST, GET, HEAD'],
    ];
    for (const who of EVERY_ROLE) {
      for (const [method, path, allow] of cases) {
        const r = await call(method, path, { who });
        assert.equal(r.status, 405, `${who} ${method} ${path}: ${r.text}`);
        assert.equal(r.headers.get('allow'), allow, `${method} ${path}`);
        assert.match(r.headers.get('content-type') ?? '', /^application\/json; charset=utf-8$/);
        assert.deepEqual(r.body, {
          error: 'Method Not Allowed',
          details: 'This admin path does not serve this method; the Allow header lists the methods it does',
        });
      }
    }
    // Unauthenticated: 401 first, whatever the method.
    for (const [method, path] of cases) assert.equal((await call(method, path, { who: null })).status, 401);
    // OPTIONS on an unknown path: 404, JSON too.
    const nowhere = await call('OPTIONS', '/admin/v1/nothing-here');
    assert.equal(nowhere.status, 404);
    // No CORS: a cross-origin preflight carries Origin and is refused, without Access-Control-*.
    const preflight = await call('OPTIONS', '/admin/v1/companies', {
      who: null,
      headers: {
        Origin: 'https://console.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'authorization, content-type',
      },
    });
    assert.equal(preflight.status, 403);
    assert.equal(preflight.body.details, 'The admin API does not serve browser requests');
    for (const [name] of preflight.headers) assert.doesNotMatch(name, /^access-control-/, name);
    // The methods that are served still work, HEAD included.
    assert.equal((await call('HEAD', '/admin/v1/companies')).status, 200);
    assert.equal((await as.reader('GET', '/admin/v1/companies/')).status, 200);
  });

  test('the probes on the admin port need no token and answer as documented', async () => {
    for (const who of [null, 'reader'] as const) {
      const health = await call('GET', '/healthz', { who });
      assert.deepEqual([health.status, health.body], [200, { status: 'ok' }]);
      const ready = await call('GET', '/readyz', { who });
      assert.equal(ready.status, 200);
      assert.equal(ready.body.status, 'ready');
      assert.equal('checks' in ready.body, who !== null, 'details with a token only');
    }
    const head = await send(t.adminPort, '/readyz', { method: 'HEAD' });
    assert.equal(head.status, 200);
  });

  test("docs/admin.md's key fields are the API's: list, read and create answers", () => {
    const page = readFileSync(new URL('../../docs/admin.md', import.meta.url), 'utf8');
    const fieldsOf = (row: string | undefined) =>
      new Set(/\{([a-zA-Z, ]+)\}/.exec(row ?? '')?.[1]?.split(', ') ?? []);
    const listRow = page.split('\n').find((l) => l.startsWith('| `GET /admin/v1/companies/:id/keys`'));
    assert.deepEqual(fieldsOf(listRow), new Set(Object.keys(keyViewSchema.shape)), listRow);
    const createRow = page.split('\n').find((l) => l.startsWith('| `POST /admin/v1/companies/:id/keys`'));
    const createAnswer = /create \(201\) `\{([a-zA-Z, ]+)\}`/.exec(createRow ?? '')?.[1]?.split(', ');
    assert.deepEqual(new Set(createAnswer), new Set(Object.keys(createdKeySchema.shape)), createRow);
  });
});
