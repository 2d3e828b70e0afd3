import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { ConfigInput } from '../../src/config/schema.js';
import { verifyWebhook } from '../../src/signing.js';
import { isoSeconds } from '../../src/time.js';
import { adminApi, createCompanyAndKey } from '../helpers/admin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startReceiver, until, type Receipt, type Receiver } from '../helpers/receiver.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// INVARIANTS 20: an event is delivered at least once and signed, once per deployment, never once
// per instance. Real receivers that fail, hang and succeed; real gateways; a real redis-server.

const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
/** Fast retries for tests: the schedule's shape is the production one, only shorter. */
const FAST = { timeoutMs: 300, backoffMs: 50, maxBackoffMs: 200, pollIntervalMs: 50, maxAttempts: 5 };

function eventsConfig(url: string, delivery: Record<string, number> = {}): ConfigInput {
  return {
    events: { webhooks: [{ id: 'ops', url, secret: SECRET }], delivery: { ...FAST, ...delivery } },
  } as ConfigInput;
}

function parsed(r: Receipt): { id: string; type: string; timestamp: string; data: Record<string, unknown> } {
  return JSON.parse(r.body) as ReturnType<typeof parsed>;
}

function assertSigned(r: Receipt): void {
  const check = verifyWebhook(r.headers, r.body, { secret: SECRET });
  assert.ok(check.ok, `signature: ${JSON.stringify(check)}`);
  assert.equal(check.id, parsed(r).id, 'webhook-id is the event id');
}

/** A counter's value in a gateway's registry (0 when the series does not exist). */
async function counter(t: TestGateway, name: string, labels: Record<string, string>): Promise<number> {
  const m = (await t.gw.metrics.registry.getMetricsAsJSON()).find((x) => x.name === name);
  const v = (m?.values ?? []).find((x) =>
    Object.entries(labels).every(([k, want]) => String((x.labels as Record<string, unknown>)[k]) === want),
  );
  return Number(v?.value ?? 0);
}

async function pendingDeliveries(t: TestGateway): Promise<number> {
  const r = await adminApi(t.adminPort)('GET', '/admin/v1/webhooks/deliveries?status=pending');
  assert.equal(r.status, 200, r.text);
  return r.list.length;
}

describe('webhooks: a receiver that fails, hangs, then succeeds (memory store)', () => {
  let receiver: Receiver;
  let t: TestGateway;
  before(async () => {
    receiver = await startReceiver();
    t = await startTestGateway({ store: { type: 'memory' }, ...eventsConfig(receiver.url) });
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });

  test('key.revoked arrives three times under one webhook-id, each signed; the third is delivered', async () => {
    const k = await createCompanyAndKey(t.gw.service, 'acme');
    receiver.script([500, 'hang'], 200);
    const admin = adminApi(t.adminPort);
    assert.equal((await admin('DELETE', `/admin/v1/keys/${k.id}`)).status, 200);
    const got = await receiver.waitFor(3);
    assert.deepEqual(
      got.map((r) => r.answer),
      [500, 'hang', 200],
    );
    const ids = new Set(got.map((r) => r.headers['webhook-id']));
    assert.equal(ids.size, 1, 'every attempt carries the same idempotency id');
    assert.equal(new Set(got.map((r) => r.body)).size, 1, 'the same body every time');
    for (const r of got) assertSigned(r);
    const e = parsed(got[0]!);
    assert.equal(e.type, 'key.revoked');
    assert.deepEqual(
      { companyId: e.data.companyId, keyId: e.data.keyId, reason: e.data.reason, actor: e.data.actor },
      { companyId: 'acme', keyId: k.id, reason: 'revoked', actor: 'admin' },
    );
    for (const r of got) {
      assert.ok(!r.body.includes(k.key) && !JSON.stringify(r.headers).includes(k.key), 'never the key');
    }
    // Settled as delivered, after 3 attempts; nothing left in the queue.
    const delivered = await until(async () => {
      const r = await admin('GET', '/admin/v1/webhooks/deliveries?status=delivered');
      return r.list.length === 1 ? r.list[0] : undefined;
    });
    assert.equal(delivered.attempts, 3);
    assert.equal(delivered.lastStatus, 200);
    assert.equal(await pendingDeliveries(t), 0);
    assert.equal(await counter(t, 'gateway_webhook_deliveries_total', { outcome: 'retry' }), 2);
    assert.equal(await counter(t, 'gateway_webhook_deliveries_total', { outcome: 'delivered' }), 1);
    assert.equal(receiver.received.length, 3, 'no fourth attempt');
    assert.ok(!t.logText().includes(SECRET.slice(6)), 'the secret is never logged');
  });
});

describe('webhooks: what the admin API does becomes events (memory store)', () => {
  let receiver: Receiver;
  let t: TestGateway;
  before(async () => {
    receiver = await startReceiver();
    // No key cap: three rotations in a row, each old key still counting until its grace ends.
    t = await startTestGateway({
      store: { type: 'memory' },
      keys: { maxActiveKeys: 0 },
      ...eventsConfig(receiver.url),
    });
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
  });

  test('a suspension, a rotation with a short grace period and one without each send their event', async () => {
    const admin = adminApi(t.adminPort);
    const k = await createCompanyAndKey(t.gw.service, 'acme');
    const rotated = await admin('POST', `/admin/v1/keys/${k.id}/rotate`, { gracePeriodSeconds: 600 });
    assert.equal(rotated.status, 201, rotated.text);
    const again = await admin('POST', `/admin/v1/keys/${String(rotated.body.id)}/rotate`, {
      gracePeriodSeconds: 0,
    });
    assert.equal(again.status, 201, again.text);
    // A long grace period is announced by the key scan a day before it ends, not now.
    const k3 = await admin('POST', `/admin/v1/keys/${String(again.body.id)}/rotate`, {
      gracePeriodSeconds: 3 * 86_400,
    });
    assert.equal(k3.status, 201);
    assert.equal((await admin('PATCH', '/admin/v1/companies/acme', { status: 'suspended' })).status, 200);
    assert.equal((await admin('PATCH', '/admin/v1/companies/acme', { status: 'suspended' })).status, 200);
    await receiver.waitFor(3);
    await until(async () => (await pendingDeliveries(t)) === 0);
    // Attempts run side by side: arrival order is not the order of the events.
    const byType = new Map(receiver.received.map((r) => [parsed(r).type, parsed(r).data]));
    assert.deepEqual([...byType.keys()].sort(), ['company.suspended', 'key.grace_ending', 'key.revoked']);
    assert.equal(receiver.received.length, 3, 'the second suspension changed nothing and sent nothing');
    assert.deepEqual(byType.get('key.grace_ending'), {
      companyId: 'acme',
      keyId: k.id,
      keyPrefix: k.prefix,
      revokesAt: rotated.body.oldKeyRevokesAt,
      replacedBy: rotated.body.id,
    });
    assert.equal(byType.get('key.revoked')!.keyId, rotated.body.id);
    assert.equal(byType.get('key.revoked')!.reason, 'rotated without a grace period');
    assert.deepEqual(byType.get('company.suspended'), {
      companyId: 'acme',
      previousStatus: 'active',
      actor: 'admin',
    });
    assert.equal(
      await counter(t, 'gateway_events_total', { type: 'key.grace_ending', result: 'not_yet' }),
      1,
    );
    for (const r of receiver.received) assertSigned(r);
  });
});

/** Starts a gateway on `redis` (Redis store) with the webhook config. */
function redisGateway(
  redis: TestRedis,
  upstream: RecordingUpstream,
  extra: ConfigInput,
): Promise<TestGateway> {
  return startTestGateway({
    store: { type: 'redis', redis: { url: redis.url } },
    routes: [{ prefix: '/notify/v1', target: upstream.url }],
    rateLimit: {
      tiers: [
        { name: 'standard', points: 600, duration: 60 },
        { name: 'daily', windows: [{ points: 10, duration: 86_400 }] },
      ],
      authFailures: { enabled: false },
    },
    ...extra,
  } as ConfigInput);
}

describe('webhooks: two gateways on one Redis produce one delivery per event', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let receiver: Receiver;
  let a: TestGateway;
  let b: TestGateway;
  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    receiver = await startReceiver();
    a = await redisGateway(redis, upstream, eventsConfig(receiver.url));
    b = await redisGateway(redis, upstream, eventsConfig(receiver.url));
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await receiver?.close();
    await upstream?.close();
    await redis?.stop();
  });

  test('exposure, expiry scan and quota seen by both, a revocation on one: each delivered exactly once', async () => {
    const k = await createCompanyAndKey(a.gw.service, 'acme', { tier: 'daily' });
    const soon = isoSeconds(Date.now() + 3 * 86_400_000);
    const exp = await adminApi(a.adminPort)('POST', '/admin/v1/companies/acme/keys', { expiresAt: soon });
    assert.equal(exp.status, 201, exp.text);
    // The same key in a URL on both instances: each flags it, each emits.
    for (const gw of [a, b]) {
      const r = await fetch(`http://127.0.0.1:${gw.port}/notify/v1/otps?api_key=${k.key}`);
      assert.equal(r.status, 401);
    }
    // Both instances scan the keys (no lock: the once-keys alone must hold).
    await Promise.all([a.gw.events!.scanner.scan(), b.gw.events!.scanner.scan()]);
    // 10 requests of a 10-per-day window, alternating instances: 80 % and 100 % once each.
    for (let i = 0; i < 10; i++) {
      const gw = i % 2 ? b : a;
      const r = await fetch(`http://127.0.0.1:${gw.port}/notify/v1/otps`, {
        headers: { 'X-API-Key': k.key },
      });
      assert.equal(r.status, 200, `request ${i}`);
    }
    assert.equal((await adminApi(b.adminPort)('DELETE', `/admin/v1/keys/${k.id}`)).status, 200);
    // Five events: exposed, expiring, two thresholds, revoked. Both dispatchers poll one queue.
    await receiver.waitFor(5);
    await until(async () => (await pendingDeliveries(a)) === 0, 20_000, 'an empty queue');
    const types = receiver.received.map((r) => parsed(r).type).sort();
    assert.deepEqual(types, [
      'key.expiring',
      'key.exposed',
      'key.revoked',
      'quota.threshold',
      'quota.threshold',
    ]);
    assert.deepEqual(
      receiver
        .ofType('quota.threshold')
        .map((r) => parsed(r).data.threshold)
        .sort(),
      [100, 80],
    );
    for (const r of receiver.received) assertSigned(r);
    const exposed = parsed(receiver.ofType('key.exposed')[0]!).data;
    assert.equal(exposed.route, '/notify/v1');
    assert.equal(exposed.clientIp, '127.0.0.1');
    assert.match(String(exposed.requestId), /\S/);
    // The attack happened: both instances observed exposure and expiry; the second was dropped.
    for (const type of ['key.exposed', 'key.expiring']) {
      const dup =
        (await counter(a, 'gateway_events_total', { type, result: 'duplicate' })) +
        (await counter(b, 'gateway_events_total', { type, result: 'duplicate' }));
      assert.ok(dup >= 1, `${type}: a second instance's report was deduplicated`);
    }
    assert.ok(!receiver.received.some((r) => r.body.includes(k.key)), 'never the key');
  });
});

/** A gateway in a child process (so it can be killed with SIGKILL), on the given config. */
async function spawnGateway(config: ConfigInput): Promise<{ proc: ChildProcess; adminPort: number }> {
  const src = (f: string) => JSON.stringify(pathToFileURL(join(import.meta.dirname, '../../src', f)).href);
  const code = `
    const { validateConfig } = await import(${src('config/load.ts')});
    const { startGateway } = await import(${src('server.ts')});
    const r = validateConfig(JSON.parse(process.env.GW_CONFIG));
    if (!r.ok) { console.error(r.problems.join('\\n')); process.exit(2); }
    const gw = await startGateway(r.config, { processMetrics: false });
    console.log('READY ' + JSON.stringify({ adminPort: gw.adminPort }));`;
  const proc = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
    env: { ...process.env, GW_CONFIG: JSON.stringify(config) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  process.once('exit', () => proc.kill('SIGKILL'));
  let out = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${out}`)), 20_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      const m = /READY (\{.*\})/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, adminPort: (JSON.parse(m[1]!) as { adminPort: number }).adminPort });
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    proc.once('exit', (c) => reject(new Error(`gateway exited (${c}):\n${out}`)));
  });
}

describe('webhooks: a restart mid-retry still delivers (Redis)', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let receiver: Receiver;
  const open: TestGateway[] = [];
  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    receiver = await startReceiver();
  });
  after(async () => {
    for (const t of open) await t.close();
    await receiver?.close();
    await upstream?.close();
    await redis?.stop();
  });

  test('SIGKILL while the receiver holds the delivery: another gateway sends it once the lease ends', async () => {
    const base = {
      server: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0, token: 'test-admin-token-0123456789abcdef' },
      log: { level: 'warn' },
      store: { type: 'redis', redis: { url: redis.url } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      ...eventsConfig(receiver.url, { timeoutMs: 1000 }),
    } as ConfigInput;
    const child = await spawnGateway(base);
    const admin = adminApi(child.adminPort);
    assert.equal((await admin('POST', '/admin/v1/companies', { id: 'acme', tier: 'standard' })).status, 201);
    const key = await admin('POST', '/admin/v1/companies/acme/keys', {});
    receiver.script(['hang'], 200);
    assert.equal((await admin('DELETE', `/admin/v1/keys/${String(key.body.id)}`)).status, 200);
    await receiver.waitFor(1);
    // The child holds the claim with the request in flight, and dies.
    const exited = new Promise((r) => child.proc.once('exit', r));
    child.proc.kill('SIGKILL');
    await exited;
    const b = await redisGateway(redis, upstream, eventsConfig(receiver.url, { timeoutMs: 1000 }));
    open.push(b);
    const got = await receiver.waitFor(2, 15_000);
    assert.equal(got[1]!.answer, 200);
    assert.equal(got[0]!.headers['webhook-id'], got[1]!.headers['webhook-id']);
    assertSigned(got[1]!);
    assert.equal(parsed(got[1]!).type, 'key.revoked');
    await until(async () => (await pendingDeliveries(b)) === 0);
    assert.equal(receiver.received.length, 2, 'delivered once more, not again');
  });

  test('a gateway closed while a retry is scheduled: the next one to start delivers it', async () => {
    receiver.received.length = 0;
    receiver.script([503], 200);
    const a = await redisGateway(
      redis,
      upstream,
      eventsConfig(receiver.url, { backoffMs: 1500, maxBackoffMs: 1500 }),
    );
    const k = await createCompanyAndKey(a.gw.service, 'globex');
    assert.equal((await adminApi(a.adminPort)('DELETE', `/admin/v1/keys/${k.id}`)).status, 200);
    await receiver.waitFor(1);
    await until(
      async () => (await counter(a, 'gateway_webhook_deliveries_total', { outcome: 'retry' })) === 1,
    );
    await a.close();
    const b = await redisGateway(redis, upstream, eventsConfig(receiver.url));
    open.push(b);
    const got = await receiver.waitFor(2);
    assert.equal(got[1]!.answer, 200);
    assert.equal(parsed(got[1]!).data.keyId, k.id);
    assert.equal(got[0]!.headers['webhook-id'], got[1]!.headers['webhook-id']);
    assertSigned(got[1]!);
  });
});

describe('webhooks: dead letters and the webhook routes (Redis)', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let receiver: Receiver;
  let other: Receiver;
  let t: TestGateway;
  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    receiver = await startReceiver();
    other = await startReceiver();
    t = await redisGateway(redis, upstream, eventsConfig(receiver.url, { maxAttempts: 2 }));
  });
  after(async () => {
    await t?.close();
    await receiver?.close();
    await other?.close();
    await upstream?.close();
    await redis?.stop();
  });

  test('after maxAttempts a delivery is a dead letter; one retry of two concurrent ones sends it again', async () => {
    receiver.script([], 500);
    const k = await createCompanyAndKey(t.gw.service, 'acme');
    const admin = adminApi(t.adminPort);
    await admin('DELETE', `/admin/v1/keys/${k.id}`);
    const dead = await until(async () => {
      const r = await admin('GET', '/admin/v1/webhooks/deliveries?status=dead');
      return r.list.length === 1 ? r.list[0] : undefined;
    });
    assert.equal(receiver.received.length, 2);
    assert.deepEqual(
      {
        attempts: dead.attempts,
        lastStatus: dead.lastStatus,
        lastError: dead.lastError,
        status: dead.status,
      },
      { attempts: 2, lastStatus: 500, lastError: 'HTTP 500', status: 'dead' },
    );
    assert.equal(await counter(t, 'gateway_webhook_deliveries_total', { outcome: 'dead' }), 1);
    // The depth gauge is the deployment's queue, read at each poll.
    await until(async () => (await counter(t, 'gateway_webhook_queue_depth', { state: 'dead' })) === 1);
    receiver.script([], 200);
    const path = `/admin/v1/webhooks/deliveries/${String(dead.id)}/retry`;
    const answers = await Promise.all([admin('POST', path), admin('POST', path)]);
    assert.deepEqual(answers.map((r) => r.status).sort(), [200, 404]);
    await receiver.waitFor(3);
    await until(async () => (await pendingDeliveries(t)) === 0);
    assert.equal(receiver.received.length, 3, 'the dead letter went out once more');
    assert.equal(receiver.received[2]!.answer, 200);
    assert.equal(receiver.received[2]!.headers['webhook-id'], receiver.received[0]!.headers['webhook-id']);
    assert.equal((await admin('GET', '/admin/v1/webhooks/deliveries?status=dead')).list.length, 0);
  });

  test("a company's endpoint: its secret shown once, its own events only, at most 10 under concurrency", async () => {
    const admin = adminApi(t.adminPort);
    await createCompanyAndKey(t.gw.service, 'initech');
    const kb = await createCompanyAndKey(t.gw.service, 'umbrella');
    const created = await admin('POST', '/admin/v1/companies/initech/webhooks', {
      url: other.url.replace('http://', 'http://hook:pa55word@'),
      events: ['key.*'],
    });
    assert.equal(created.status, 201, created.text);
    const secret = String(created.body.secret);
    assert.match(secret, /^whsec_/);
    assert.equal(created.body.url, other.url.replace('http://', 'http://[credentials]@'));
    const list = await admin('GET', '/admin/v1/companies/initech/webhooks');
    assert.ok(!list.text.includes(secret) && !list.text.includes('pa55word'), 'no secret, no password');
    // Another company's revocation does not reach initech's endpoint; initech's own does.
    await admin('DELETE', `/admin/v1/keys/${kb.id}`);
    const ki = await admin('POST', '/admin/v1/companies/initech/keys', {});
    await admin('DELETE', `/admin/v1/keys/${String(ki.body.id)}`);
    const got = await other.waitFor(1);
    await until(async () => (await pendingDeliveries(t)) === 0);
    assert.equal(other.received.length, 1);
    assert.equal(parsed(got[0]!).data.companyId, 'initech');
    assert.ok(
      verifyWebhook(got[0]!.headers, got[0]!.body, { secret }).ok,
      "signed with the company's secret",
    );
    assert.equal(got[0]!.headers.authorization, `Basic ${Buffer.from('hook:pa55word').toString('base64')}`);
    assert.ok(!t.logText().includes('pa55word') && !t.logText().includes(secret.slice(6)));
    // 12 creates at once: exactly 9 more fit (10 in all).
    const many = await Promise.all(
      Array.from({ length: 12 }, () =>
        admin('POST', '/admin/v1/companies/initech/webhooks', { url: other.url }),
      ),
    );
    assert.equal(many.filter((r) => r.status === 201).length, 9);
    assert.ok(many.filter((r) => r.status === 400).every((r) => /10 webhooks/.test(r.text)));
    assert.equal((await admin('GET', '/admin/v1/companies/initech/webhooks')).list.length, 10);
    const del = await admin('DELETE', `/admin/v1/companies/initech/webhooks/${String(created.body.id)}`);
    assert.equal(del.status, 200);
    assert.equal(
      (await admin('DELETE', `/admin/v1/companies/initech/webhooks/${String(created.body.id)}`)).status,
      404,
    );
    const bad = await admin('POST', '/admin/v1/companies/initech/webhooks', {
      url: 'ftp://x',
      events: ['key.nope'],
    });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /url: must be an http/);
    assert.match(bad.text, /events\.0: must be an event type/);
    assert.equal(
      (await admin('POST', '/admin/v1/companies/nobody/webhooks', { url: other.url })).status,
      404,
    );
    const gw = await admin('GET', '/admin/v1/webhooks');
    assert.deepEqual(
      gw.list.map((w) => [w.id, w.scope, w.url]),
      [['ops', 'gateway', receiver.url]],
    );
    assert.ok(!gw.text.includes(SECRET));
  });
});
