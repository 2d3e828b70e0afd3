import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { adminApi } from '../helpers/admin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// The company dashboard over HTTP, end to end: two gateway instances on one real Redis, a real
// SMTP server the codes are read from (never a test hook), a recording upstream. Invariant 19:
// a company sees and touches only itself; a code is single-use, expires, allows 5 tries; the
// sign-in form tells nobody whether an address exists.

let redis: TestRedis;
let smtp: TestSmtp;
let upstream: RecordingUpstream;
let t1: TestGateway;
let t2: TestGateway;

interface Reply {
  status: number;
  headers: Headers;
  body: Record<string, unknown> & { details?: string };
  list: Record<string, unknown>[];
}

/** A dashboard API call as the page makes it (same origin, JSON), with `cookie` when given. */
async function dash(
  t: TestGateway,
  method: string,
  path: string,
  opts: { body?: unknown; cookie?: string; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const origin = `http://127.0.0.1:${t.gw.dashboardPort}`;
  const headers: Record<string, string> = {
    ...(method !== 'GET'
      ? { Origin: origin, 'Sec-Fetch-Site': 'same-origin', 'Content-Type': 'application/json' }
      : {}),
    ...(opts.cookie ? { Cookie: opts.cookie } : {}),
    ...opts.headers,
  };
  const res = await fetch(`${origin}/api/${path}`, {
    method,
    headers,
    ...(method !== 'GET' ? { body: JSON.stringify(opts.body ?? {}) } : {}),
  });
  const text = await res.text();
  const parsed = text ? (JSON.parse(text) as unknown) : null;
  return {
    status: res.status,
    headers: res.headers,
    body: (parsed ?? {}) as Reply['body'],
    list: Array.isArray(parsed) ? (parsed as Record<string, unknown>[]) : [],
  };
}

async function gatewayStatus(t: TestGateway, key: string): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${t.port}/notify/v1/health`, { headers: { 'X-API-Key': key } });
  await r.arrayBuffer();
  return r.status;
}

/** Asks for a code, reads it from the mail that arrives, signs in; returns the session cookie. */
async function signIn(t: TestGateway, email: string): Promise<string> {
  const asked = await dash(t, 'POST', 'sign-in/code', { body: { email } });
  assert.equal(asked.status, 202, JSON.stringify(asked.body));
  const mail = await smtp.waitFor(email, /sign-in code/);
  const code = /\b(\d{6})\b/.exec(mail.text)![1]!;
  const r = await dash(t, 'POST', 'sign-in', { body: { email, code } });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.headers.get('set-cookie')!.split(';')[0]!;
}

/** Registers a company, approves it through the admin API; returns its id. */
async function approvedCompany(name: string, email: string): Promise<string> {
  assert.equal((await dash(t1, 'POST', 'register', { body: { companyName: name, email } })).status, 202);
  const admin = adminApi(t1.adminPort);
  const regs = (await admin('GET', '/admin/v1/registrations')).body as unknown as {
    id: string;
    email: string;
  }[];
  const id = regs.find((r) => r.email === email)!.id;
  const ok = await admin('POST', `/admin/v1/registrations/${id}/approve`);
  assert.equal(ok.status, 200, ok.text);
  await smtp.waitFor(email, /approved/);
  return id;
}

before(async () => {
  [redis, smtp, upstream] = await Promise.all([startRedis(), startSmtp(), startUpstream()]);
  const config = (over: object) => ({
    store: { type: 'redis' as const, redis: { url: redis.url } },
    routes: [{ prefix: '/notify/v1', target: upstream.url }],
    dashboard: {
      enabled: true,
      port: 0,
      mail: { url: smtp.url, from: 'Dashboard <dashboard@gateway.test>' },
      ...over,
    },
  });
  t1 = await startTestGateway(config({ signIn: { perClientPerHour: 1000, perAddressPerHour: 50 } }));
  // The second instance believes X-Forwarded-For from loopback: each test client gets its own address.
  t2 = await startTestGateway({
    ...config({ signIn: { resendCooldownSeconds: 0, perAddressPerHour: 3, perClientPerHour: 6 } }),
    server: { trustedProxies: ['127.0.0.1'] },
  });
});
after(async () => {
  await t1?.close();
  await t2?.close();
  await smtp?.close();
  await upstream?.close();
  await redis?.stop();
});

describe('company dashboard', () => {
  let cookie = '';
  let companyId = '';
  const owner = 'owner@acme.test';

  test('register, approved by an operator, mail received, sign-in with the code from the mail; cookie flags', async () => {
    companyId = await approvedCompany('Acme <script>alert(1)</script>', owner);
    const company = await adminApi(t1.adminPort)('GET', `/admin/v1/companies/${companyId}`);
    assert.equal((company.body as unknown as { status: string }).status, 'active');
    const asked = await dash(t1, 'POST', 'sign-in/code', { body: { email: owner } });
    const mail = await smtp.waitFor(owner, /sign-in code/);
    assert.equal(mail.html, false, 'plain text only');
    assert.match(mail.text, /Acme <script>/, 'the name as text, nothing rendered');
    const code = /\b(\d{6})\b/.exec(mail.text)![1]!;
    assert.equal(asked.status, 202);
    const r = await dash(t1, 'POST', 'sign-in', { body: { email: owner, code } });
    assert.equal(r.status, 200);
    const setCookie = r.headers.get('set-cookie')!;
    assert.match(setCookie, /^__Host-ng_session=[A-Za-z0-9_-]{43};/);
    for (const flag of ['HttpOnly', 'Secure', 'SameSite=Strict', 'Path=/'])
      assert.ok(setCookie.includes(flag), flag);
    assert.doesNotMatch(setCookie, /Domain=/i);
    cookie = setCookie.split(';')[0]!;
    const me = await dash(t2, 'GET', 'me', { cookie });
    assert.equal(me.status, 200, 'the session lives in the store: every instance knows it');
    assert.equal(me.body.companyId, companyId);
    assert.equal(me.body.role, 'owner');
    const again = await dash(t1, 'POST', 'sign-in', { body: { email: owner, code } });
    assert.equal(again.status, 401, 'a code is single-use');
  });

  test('generate: shown once, works on the gateway port on every instance; a second; a third refused by the cap; revoke → 401', async () => {
    const k1 = await dash(t1, 'POST', 'keys', {
      cookie,
      body: { label: '<b>primary</b>', environment: 'live' },
    });
    assert.equal(k1.status, 201);
    assert.equal(k1.headers.get('cache-control'), 'no-store');
    const key1 = String(k1.body.key);
    assert.equal(await gatewayStatus(t1, key1), 200);
    assert.equal(await gatewayStatus(t2, key1), 200);
    const list = await dash(t1, 'GET', 'keys', { cookie });
    assert.ok(!JSON.stringify(list.list).includes(key1), 'the list never holds the key');
    assert.equal(list.list[0]!.label, '<b>primary</b>');
    const k2 = await dash(t1, 'POST', 'keys', { cookie, body: { label: 'backup', environment: 'test' } });
    assert.equal(k2.status, 201);
    const k3 = await dash(t1, 'POST', 'keys', { cookie, body: { label: 'third' } });
    assert.equal(k3.status, 409);
    assert.match(k3.body.details!, /Revoke a key you no longer use/);
    const revoked = await dash(t1, 'DELETE', `keys/${String(k1.body.id)}`, { cookie });
    assert.equal(revoked.status, 200);
    await eventually(
      async () => (await gatewayStatus(t1, key1)) === 401 && (await gatewayStatus(t2, key1)) === 401,
      1000,
    );
    const audit = await adminApi(t1.adminPort)(
      'GET',
      `/admin/v1/audit?companyId=${companyId}&event=key.created,key.revoked`,
    );
    const actors = (audit.body as unknown as { actor: string }[]).map((e) => e.actor);
    assert.deepEqual([...new Set(actors)], [`member:${owner}`]);
  });

  test('rotate with grace: both keys work, then the old one stops', async () => {
    const k = await dash(t1, 'POST', 'keys', { cookie, body: { label: 'old one' } });
    assert.equal(k.status, 201, 'the revoked key gave its place back');
    const r = await dash(t1, 'POST', `keys/${String(k.body.id)}/rotate`, {
      cookie,
      body: { gracePeriodSeconds: 2 },
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.ok(r.body.oldKeyRevokesAt, 'the page shows when the old key stops');
    assert.equal(await gatewayStatus(t1, String(k.body.key)), 200);
    assert.equal(await gatewayStatus(t2, String(r.body.key)), 200);
    await eventually(async () => (await gatewayStatus(t2, String(k.body.key))) === 401, 5000, 100);
    assert.equal(await gatewayStatus(t1, String(r.body.key)), 200);
  });

  test('a member of A never reads or touches B through the API with its cookie', async () => {
    const bId = await approvedCompany('Beta', 'owner@beta.test');
    const bCookie = await signIn(t1, 'owner@beta.test');
    const bKey = await dash(t1, 'POST', 'keys', { cookie: bCookie, body: { label: 'beta' } });
    assert.equal(bKey.status, 201);
    const bKeyId = String(bKey.body.id);
    for (const [method, path] of [
      ['DELETE', `keys/${bKeyId}`],
      ['POST', `keys/${bKeyId}/rotate`],
      ['DELETE', 'members/owner@beta.test'],
    ] as const) {
      const r = await dash(t1, method, path, { cookie });
      assert.equal(r.status, 404, `${method} ${path}`);
    }
    const mine = await dash(t1, 'GET', 'keys', { cookie });
    assert.ok(mine.list.every((k) => k.companyId === companyId));
    const members = await dash(t1, 'GET', 'members', { cookie });
    assert.ok(members.list.every((m) => m.companyId === companyId));
    const activity = await dash(t1, 'GET', 'activity', { cookie });
    assert.ok(activity.list.length > 0 && activity.list.every((e) => e.companyId === companyId));
    assert.equal(await gatewayStatus(t1, String(bKey.body.key)), 200, "B's key still works");
    const bKeys = await adminApi(t1.adminPort)('GET', `/admin/v1/companies/${bId}/keys`);
    assert.deepEqual(
      (bKeys.body as unknown as { rotatedTo: null }[]).map((k) => k.rotatedTo),
      [null],
    );
  });

  test('a cross-origin write is 403 and changes nothing; a cross-site read too; the page cannot be framed', async () => {
    const before = (await dash(t1, 'GET', 'keys', { cookie })).list.length;
    const attempts: Record<string, string>[] = [
      { Origin: 'http://evil.test', 'Sec-Fetch-Site': 'cross-site' },
      { Origin: 'http://evil.test', 'Sec-Fetch-Site': 'same-origin' },
      { 'Sec-Fetch-Site': 'same-site' },
      { Origin: '' },
    ];
    for (const headers of attempts) {
      const r = await dash(t1, 'POST', 'keys', { cookie, headers, body: { label: 'csrf' } });
      assert.equal(r.status, 403, JSON.stringify(headers));
      assert.equal(r.body.error, 'Forbidden');
    }
    const plain = await dash(t1, 'POST', 'keys', {
      cookie,
      headers: { 'Content-Type': 'text/plain' },
      body: { label: 'x' },
    });
    assert.equal(plain.status, 415, 'a text/plain "simple request" is refused');
    const read = await dash(t1, 'GET', 'keys', { cookie, headers: { 'Sec-Fetch-Site': 'cross-site' } });
    assert.equal(read.status, 403);
    assert.equal((await dash(t1, 'GET', 'keys', { cookie })).list.length, before);
    const page = await fetch(`http://127.0.0.1:${t1.gw.dashboardPort}/`);
    const csp = page.headers.get('content-security-policy') ?? '';
    assert.match(csp, /frame-ancestors 'none'/);
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline/);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    assert.doesNotMatch(await page.text(), /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  });

  test('a wrong code 5 times burns it; the right code then fails', async () => {
    const email = 'dev@acme.test';
    const invited = await dash(t1, 'POST', 'members', { cookie, body: { email, role: 'developer' } });
    assert.equal(invited.status, 201);
    await smtp.waitFor(email, /invited/);
    await dash(t1, 'POST', 'sign-in/code', { body: { email } });
    const code = /\b(\d{6})\b/.exec((await smtp.waitFor(email, /sign-in code/)).text)![1]!;
    const wrong = code === '123456' ? '654321' : '123456';
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => dash(t1, 'POST', 'sign-in', { body: { email, code: wrong } })),
    );
    assert.ok(answers.every((a) => a.status === 401 && a.body.details === answers[0]!.body.details));
    assert.equal((await dash(t1, 'POST', 'sign-in', { body: { email, code } })).status, 401, 'burnt');
  });

  test('a developer cannot manage members; the last owner cannot be removed', async () => {
    const dev = await signIn(t1, 'dev@acme.test');
    const r = await dash(t1, 'POST', 'members', {
      cookie: dev,
      body: { email: 'x@acme.test', role: 'owner' },
    });
    assert.equal(r.status, 403);
    assert.equal((await dash(t1, 'DELETE', `members/${owner}`, { cookie: dev })).status, 403);
    assert.equal((await dash(t1, 'DELETE', `members/${owner}`, { cookie })).status, 409);
    const removed = await dash(t1, 'DELETE', 'members/dev@acme.test', { cookie });
    assert.equal(removed.status, 200);
    assert.equal(
      (await dash(t2, 'GET', 'me', { cookie: dev })).status,
      401,
      'removed: the session ends at once',
    );
  });

  test('an unknown address gets the same answer as a known one; cooldown; limits per address and per client', async () => {
    const known = await dash(t1, 'POST', 'sign-in/code', { body: { email: owner } });
    const unknown = await dash(t1, 'POST', 'sign-in/code', { body: { email: 'nobody@acme.test' } });
    assert.equal(known.status, unknown.status);
    assert.deepEqual(known.body, unknown.body);
    const knownAgain = await dash(t1, 'POST', 'sign-in/code', { body: { email: owner } });
    const unknownAgain = await dash(t1, 'POST', 'sign-in/code', { body: { email: 'nobody@acme.test' } });
    assert.equal(knownAgain.status, 429, 'resend cooldown');
    assert.deepEqual([unknownAgain.status, unknownAgain.body], [knownAgain.status, knownAgain.body]);
    assert.ok(Number(knownAgain.headers.get('retry-after')) > 0);
    assert.ok(!smtp.mails.some((m) => m.to === 'nobody@acme.test'), 'no mail to an unknown address');
    const refused = await dash(t1, 'POST', 'sign-in', {
      body: { email: 'nobody@acme.test', code: '000000' },
    });
    const wrong = await dash(t1, 'POST', 'sign-in', { body: { email: owner, code: '000000' } });
    assert.deepEqual([refused.status, refused.body], [wrong.status, wrong.body]);
    // Per address (t2: 3 an hour, no cooldown), from different clients.
    const perAddress = [];
    for (let i = 0; i < 4; i++)
      perAddress.push(
        (
          await dash(t2, 'POST', 'sign-in/code', {
            body: { email: 'limit@x.test' },
            headers: { 'X-Forwarded-For': `10.1.0.${i}` },
          })
        ).status,
      );
    assert.deepEqual(perAddress, [202, 202, 202, 429]);
    // Per client (t2: 6 an hour), for different addresses.
    const perClient = [];
    for (let i = 0; i < 7; i++)
      perClient.push(
        (
          await dash(t2, 'POST', 'sign-in/code', {
            body: { email: `c${i}@x.test` },
            headers: { 'X-Forwarded-For': '10.2.0.1' },
          })
        ).status,
      );
    assert.deepEqual(perClient, [202, 202, 202, 202, 202, 202, 429]);
  });

  test('suspending the company ends its sessions at once, on every instance; sign-out deletes the session', async () => {
    const ops = 'ops@acme.test';
    assert.equal(
      (await dash(t1, 'POST', 'members', { cookie, body: { email: ops, role: 'owner' } })).status,
      201,
    );
    const second = await signIn(t1, ops);
    assert.equal((await dash(t2, 'GET', 'me', { cookie: second })).status, 200);
    const out = await dash(t2, 'POST', 'sign-out', { cookie: second });
    assert.match(out.headers.get('set-cookie')!, /Max-Age=0/);
    assert.equal((await dash(t1, 'GET', 'me', { cookie: second })).status, 401);
    const third = await signIn(t1, ops);
    const suspend = await adminApi(t1.adminPort)('PATCH', `/admin/v1/companies/${companyId}`, {
      status: 'suspended',
    });
    assert.equal(suspend.status, 200);
    assert.equal((await dash(t2, 'GET', 'keys', { cookie })).status, 401);
    assert.equal((await dash(t1, 'GET', 'me', { cookie })).status, 401);
    assert.equal((await dash(t2, 'GET', 'me', { cookie: third })).status, 401);
  });

  test('registration closed and admin routes when the dashboard is off', async () => {
    const off = await adminApi(t1.adminPort)('DELETE', '/admin/v1/companies/x/members/a@b.test');
    assert.equal(off.status, 404);
    const twice = await adminApi(t1.adminPort)('POST', `/admin/v1/registrations/${companyId}/reject`);
    assert.equal(twice.status, 409, 'decided once');
  });
});
