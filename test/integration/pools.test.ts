import assert from 'node:assert/strict';
import { Agent, request as httpRequest, type ServerResponse } from 'node:http';
import { after, afterEach, describe, test } from 'node:test';
import type { ConfigInput } from '../../src/config/schema.js';
import { adminApi, createCompanyAndKey } from '../helpers/admin.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/redis.js';
import { startUpstream } from '../helpers/upstream.js';
import { startUpstreamProcess, type UpstreamProcess } from '../helpers/upstream-process.js';

// Upstream pools against real upstream processes that the tests kill, restart, pause and slow
// down, under bounded load loops. Counts are taken at the upstreams (each reports every request
// it received before answering it).

const closers: (() => Promise<void>)[] = [];
const agent = new Agent({ keepAlive: true, maxSockets: 16 });
afterEach(async () => {
  agent.destroy(); // the client's idle keep-alive sockets, so the gateway's drain has nothing to wait for
  while (closers.length) await closers.pop()!();
});
after(() => agent.destroy());

async function upstreams(n: number): Promise<UpstreamProcess[]> {
  const list = await Promise.all(Array.from({ length: n }, () => startUpstreamProcess()));
  for (const u of list) closers.push(() => u.close());
  return list;
}

/** A gateway with one route (`route` merged in) and `companies` companies with a key each. */
async function gateway(route: Record<string, unknown>, companies = ['acme']) {
  const config: ConfigInput = {
    store: { type: 'memory' },
    rateLimit: {
      tiers: [{ name: 'standard', points: 1_000_000, duration: 60 }],
      authFailures: { enabled: false },
    },
    routes: [{ prefix: '/notify/v1', ...route } as never],
  };
  const t = await startTestGateway(config);
  closers.push(() => t.close());
  const keys = new Map<string, string>();
  for (const c of companies) keys.set(c, (await createCompanyAndKey(t.gw.service, c)).key);
  return { t, keys, key: keys.get(companies[0]!)! };
}

interface Hit {
  status: number;
  body: string;
}

function hit(
  t: TestGateway,
  key: string,
  opts: { method?: string; id?: string; body?: string } = {},
): Promise<Hit> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: t.port,
        path: '/notify/v1/x',
        method: opts.method ?? 'GET',
        agent,
        headers: { 'X-API-Key': key, 'X-Test-Id': opts.id ?? '' },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Runs `count` calls of `fn(i)`, `concurrency` at a time; the loop is bounded by its count. */
async function load<T>(count: number, concurrency: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array<T>(count);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < count; i = next++) out[i] = await fn(i);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return out;
}

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`not in time: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const targetsOf = (us: UpstreamProcess[], weights?: number[]) =>
  us.map((u, i) => ({ url: u.url, weight: weights?.[i] ?? 1 }));
const stateOf = (t: TestGateway, u: UpstreamProcess) =>
  t.gw.upstreams.view()[0]!.targets.find((x) => x.url === `${u.url}/`)!;

describe('upstream pools', () => {
  test('weighted round-robin over 3,000 requests lands within ±5 % of the weights', async (tc) => {
    const us = await upstreams(3);
    const { t, key } = await gateway({ targets: targetsOf(us, [1, 2, 3]) });
    const results = await load(3000, 8, () => hit(t, key));
    assert.ok(results.every((r) => r.status === 200));
    const counts = us.map((u) => u.arrivals.length);
    tc.diagnostic(`arrivals ${counts.join(', ')} for weights 1, 2, 3`);
    [500, 1000, 1500].forEach((want, i) =>
      assert.ok(Math.abs(counts[i]! - want) <= want * 0.05, `target ${i}: ${counts[i]} of ${want}`),
    );
  });

  test('3 targets, one killed mid-run: no GET fails, no POST arrives twice, ejected, back after restart', async (tc) => {
    const us = await upstreams(3);
    const { t, key } = await gateway({
      targets: targetsOf(us),
      retries: { attempts: 3 },
      outlier: { consecutiveFailures: 3, baseEjectionMs: 60_000 },
      healthCheck: { path: '/health', intervalMs: 100, healthyThreshold: 2, unhealthyThreshold: 2 },
    });
    const victim = us[1]!;
    // Slow, so that it holds requests (POSTs among them) when it is killed.
    await victim.set({ delayMs: 30 });
    let done = 0;
    const results = await load(900, 6, async (i) => {
      if (++done === 300) await victim.kill();
      const method = i % 2 === 0 ? 'GET' : 'POST';
      const r = await hit(t, key, { method, id: `r${i}`, body: method === 'POST' ? `b${i}` : undefined });
      return { method, id: `r${i}`, status: r.status };
    });
    const gets = results.filter((r) => r.method === 'GET');
    assert.deepEqual(
      gets.filter((r) => r.status !== 200),
      [],
      'every GET answered 200',
    );
    const arrivals = us.flatMap((u) => u.arrivals).filter((a) => a.method === 'POST');
    const seen = new Map<string, number>();
    for (const a of arrivals) seen.set(a.id, (seen.get(a.id) ?? 0) + 1);
    assert.deepEqual(
      [...seen].filter(([, n]) => n > 1),
      [],
      'no POST arrived twice',
    );
    const posts = results.filter((r) => r.method === 'POST');
    for (const p of posts.filter((x) => x.status === 200)) assert.equal(seen.get(p.id), 1, p.id);
    // A POST the killed process held when it died is the only kind that may fail (at most one per
    // client connection in flight), and it arrived at most once.
    const failed = posts.filter((p) => p.status !== 200);
    tc.diagnostic(
      `POSTs: ${posts.length}, failed ${failed.length} (held by the killed process), arrivals ${arrivals.length}`,
    );
    assert.ok(failed.length <= 6);
    assert.notEqual(stateOf(t, victim).state, 'healthy', 'the dead target is out');
    const before = victim.arrivals.length;
    await victim.restart();
    await until(() => stateOf(t, victim).state === 'healthy', 'the restarted target is healthy again');
    await load(60, 3, () => hit(t, key));
    assert.ok(victim.arrivals.length > before, 'traffic reaches it again');
  });

  test('least-requests sends fewer requests to a slowed target', async (tc) => {
    const us = await upstreams(2);
    await us[0]!.set({ delayMs: 100 });
    const { t, key } = await gateway({ targets: targetsOf(us), balancing: 'least-requests' });
    const results = await load(200, 8, () => hit(t, key));
    assert.ok(results.every((r) => r.status === 200));
    const [slow, fast] = us.map((u) => u.arrivals.length);
    tc.diagnostic(`slow ${slow}, fast ${fast}`);
    assert.ok(slow! * 3 < fast!, `slow ${slow}, fast ${fast}`);
  });

  test('company-hash keeps each company on one target; when one leaves only its companies move', async (tc) => {
    const us = await upstreams(3);
    const companies = Array.from({ length: 30 }, (_, i) => `co-${i}`);
    const { t, keys } = await gateway(
      { targets: targetsOf(us), balancing: 'company-hash', retries: { attempts: 3 } },
      companies,
    );
    const home = async () => {
      const where = new Map<string, number>();
      for (const c of companies)
        for (let n = 0; n < 3; n++) {
          assert.equal((await hit(t, keys.get(c)!, { id: c })).status, 200);
          const i = us.findIndex((u) => u.arrivals.at(-1)?.id === c);
          assert.ok(where.get(c) === undefined || where.get(c) === i, `${c} stays on one target`);
          where.set(c, i);
        }
      return where;
    };
    const before = await home();
    assert.ok(new Set(before.values()).size === 3, 'companies spread over every target');
    await us[2]!.kill();
    for (const u of us) u.arrivals.length = 0;
    const afterKill = await home();
    const moved = companies.filter((c) => afterKill.get(c) !== before.get(c));
    assert.deepEqual(
      moved.filter((c) => before.get(c) !== 2),
      [],
      'only the companies of the target that left move',
    );
    tc.diagnostic(`${moved.length} of 30 companies moved`);
    assert.ok(moved.length <= companies.length / 2, `${moved.length} of 30 moved`);
  });

  test('every target failing: panic tries each once; refuse answers 503 and sends nothing', async () => {
    const us = await upstreams(3);
    for (const u of us) await u.set({ status: 503 });
    const panic = await gateway({
      targets: targetsOf(us),
      retries: { attempts: 3 },
      outlier: { consecutiveFailures: 1, maxEjectedPercent: 100 },
      whenNoneHealthy: 'panic',
    });
    // The first requests eject every target.
    await load(6, 1, () => hit(panic.t, panic.key));
    for (const u of us) u.arrivals.length = 0;
    const r = await hit(panic.t, panic.key);
    assert.equal(r.status, 503);
    assert.equal(
      us.reduce((n, u) => n + u.arrivals.length, 0),
      3,
      'one attempt on each target',
    );
    for (const u of us) assert.equal(u.arrivals.length, 1);

    const refuse = await gateway({
      targets: targetsOf(us),
      outlier: { consecutiveFailures: 1, maxEjectedPercent: 100 },
      whenNoneHealthy: 'refuse',
    });
    await load(3, 1, () => hit(refuse.t, refuse.key));
    for (const u of us) u.arrivals.length = 0;
    const refused = await hit(refuse.t, refuse.key);
    assert.equal(refused.status, 503);
    assert.equal(
      (JSON.parse(refused.body) as { details: string }).details,
      'No healthy upstream target for this route; retry shortly',
    );
    assert.equal(
      us.reduce((n, u) => n + u.arrivals.length, 0),
      0,
    );
  });

  test('the retry budget holds the extra requests to its share (counted at the upstreams)', async (tc) => {
    const us = await upstreams(3);
    for (const u of us) await u.set({ status: 503 });
    const { t, key } = await gateway({
      targets: targetsOf(us),
      retries: { attempts: 3, budget: { ratio: 0.2, minPerSecond: 0 } },
      outlier: { maxEjectedPercent: 0 },
    });
    const results = await load(200, 4, () => hit(t, key));
    assert.ok(results.every((r) => r.status === 503));
    const arrived = us.reduce((n, u) => n + u.arrivals.length, 0);
    tc.diagnostic(`200 requests, ${arrived} arrivals`);
    assert.ok(arrived >= 200 && arrived <= 200 + 0.2 * 200, `${arrived} arrivals for 200 requests`);
    assert.ok(arrived > 200, 'some retries were allowed');
  });

  test("bulkhead: company A's slow requests do not hold B; A's maxInFlight + 1 gets 503 and never arrives", async () => {
    const u = await startUpstream();
    closers.push(() => u.close());
    const held: ServerResponse[] = [];
    u.handle((req, res) => {
      if (req.headers['x-company-id'] === 'a') held.push(res);
      else res.end('fast');
    });
    const { t, keys } = await gateway({ target: u.url, maxInFlight: { perCompany: 5 } }, ['a', 'b']);
    const slow = Array.from({ length: 5 }, () => hit(t, keys.get('a')!));
    await until(() => held.length === 5, 'five of A held');
    const over = await hit(t, keys.get('a')!);
    assert.equal(over.status, 503);
    assert.equal((JSON.parse(over.body) as { error: string }).error, 'Service Unavailable');
    assert.equal(
      u.received.filter((r) => r.headers['x-company-id'] === 'a').length,
      5,
      'the sixth never arrived',
    );
    const bs = await load(20, 4, () => hit(t, keys.get('b')!));
    assert.ok(
      bs.every((r) => r.status === 200),
      'B is served while A is held',
    );
    assert.equal(held.length, 5, 'A still held while B was served');
    for (const res of held) res.end('slow');
    assert.ok((await Promise.all(slow)).every((r) => r.status === 200));
  });

  test('seen from outside: GET /admin/v1/upstreams, metrics, readiness degraded (not unready)', async () => {
    const [u] = await upstreams(1);
    const dead = `http://user:secret-pw@127.0.0.1:${await freePort()}`;
    const { t, key } = await gateway({
      targets: [{ url: dead }, { url: u!.url }],
      retries: { attempts: 2 },
      outlier: { consecutiveFailures: 1, maxEjectedPercent: 100 },
    });
    const results = await load(6, 1, () => hit(t, key));
    assert.ok(results.every((r) => r.status === 200));
    const admin = adminApi(t.adminPort);
    const view = await admin('GET', '/admin/v1/upstreams');
    assert.equal(view.status, 200);
    const route = view.list[0] as {
      route: string;
      targets: { url: string; state: string; lastError: string }[];
    };
    assert.equal(route.route, '/notify/v1');
    assert.ok(!view.text.includes('secret-pw'), 'credentials masked');
    assert.equal(route.targets[0]!.state, 'ejected');
    assert.equal(route.targets[0]!.lastError, 'connect');
    assert.equal(route.targets[1]!.state, 'healthy');
    const metrics = await (
      await fetch(`http://127.0.0.1:${t.adminPort}/metrics`, {
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
      })
    ).text();
    assert.match(
      metrics,
      /gateway_upstream_ejections_total\{route="\/notify\/v1",target="http:\/\/[^"]*127\.0\.0\.1:\d+\/"\} 1/,
    );
    assert.match(metrics, /gateway_upstream_target_healthy\{route="\/notify\/v1",target="[^"]+"\} 0/);
    assert.ok(!metrics.includes('secret-pw'));
    const ready = await fetch(`http://127.0.0.1:${t.adminPort}/readyz`, {
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(ready.status, 200);
    await u!.kill();
    await load(2, 1, () => hit(t, key));
    const degraded = await fetch(`http://127.0.0.1:${t.adminPort}/readyz`, {
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(degraded.status, 200, 'degraded, still ready');
    const body = (await degraded.json()) as { status: string; degraded: string[] };
    assert.equal(body.status, 'degraded');
    assert.deepEqual(body.degraded, ['upstreams']);
    const read = adminApi(t.adminPort, null);
    assert.equal((await read('GET', '/admin/v1/upstreams')).status, 401);
  });
});
