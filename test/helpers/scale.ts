import assert from 'node:assert/strict';
import { generateApiKey } from '../../src/auth/api-key.js';
import { DEFAULT_TIERS, type ConfigInput } from '../../src/config/schema.js';
import { isoSeconds } from '../../src/time.js';
import { adminApi, createCompanyAndKey } from './admin.js';
import { startTestGateway, type TestGateway } from './gateway.js';
import { eventually, send, type Reply } from './http.js';
import type { RecordingUpstream } from './upstream.js';

/**
 * Scenarios shared by the scale-out suite (test/scale/redis-topologies.test.ts): the same proofs run
 * against every Redis topology, only the `store.redis` block differs.
 */

export const SCALE_TIERS = [
  ...DEFAULT_TIERS,
  { name: 'trio', points: 30, duration: 60 },
  { name: 'bulk', points: 1_000_000, duration: 60 },
];

/** Starts `n` gateway instances on one Redis topology, all proxying to `upstream`. */
export async function startGateways(
  n: number,
  redis: NonNullable<NonNullable<ConfigInput['store']>['redis']>,
  upstream: RecordingUpstream,
): Promise<TestGateway[]> {
  const cfg: ConfigInput = {
    store: { type: 'redis', redis },
    routes: [{ prefix: '/notify/v1', target: upstream.url }],
    rateLimit: { tiers: SCALE_TIERS, authFailures: { enabled: false } },
    // A long positive TTL: only an invalidation can make an instance refuse a revoked key in time.
    // The load test's unknown keys are fresh each time, so they still cost a store lookup each.
    cache: { positiveTtlMs: 60_000, negativeTtlMs: 500 },
    log: { level: 'warn' },
  };
  const out: TestGateway[] = [];
  try {
    for (let i = 0; i < n; i++) out.push(await startTestGateway(cfg));
  } catch (err) {
    await Promise.all(out.map((g) => g.close()));
    throw err;
  }
  return out;
}

/** A company of `tier` and a key for it, created on instance `gw`. */
const companyAndKey = (gw: TestGateway, id: string, tier: string) =>
  createCompanyAndKey(gw.gw.service, id, { tier, label: 'scale' });

const get = (gw: TestGateway, key: string) =>
  send(gw.port, '/notify/v1/health', { headers: { 'X-API-Key': key } });

/** A key created through instance 0's admin HTTP API authenticates on every instance. */
export async function keyCreatedOnOneWorksOnAll(gws: TestGateway[], companyId: string): Promise<void> {
  const api = adminApi(gws[0]!.adminPort);
  const c = await api('POST', '/admin/v1/companies', { id: companyId, tier: 'standard' });
  assert.equal(c.status, 201, c.text);
  const k = await api('POST', `/admin/v1/companies/${companyId}/keys`, { label: 'everywhere' });
  assert.equal(k.status, 201);
  const created = k.body as unknown as { id: string; key: string };
  for (const [i, gw] of gws.entries()) {
    const r = await get(gw, created.key);
    assert.equal(r.status, 200, `instance ${i}: ${r.body}`);
    assert.equal(r.headers['ratelimit-limit'], '600');
  }
  // And a company created on instance 0 is listed by every other instance.
  for (const gw of gws.slice(1)) {
    const listed = await gw.gw.service.listKeys(companyId);
    assert.ok(listed.ok);
    assert.deepEqual(
      listed.value.map((v) => v.id),
      [created.id],
    );
  }
}

/** 3N concurrent requests spread over the instances: exactly N reach the upstream, the rest 429. */
export async function exactLimitAcross(
  gws: TestGateway[],
  upstream: RecordingUpstream,
  companyId: string,
  n = 30,
): Promise<void> {
  const k = await companyAndKey(gws[0]!, companyId, 'trio');
  const before = upstream.received.length;
  const all = await Promise.all(
    Array.from({ length: gws.length * n }, (_, i) => get(gws[i % gws.length]!, k.key)),
  );
  const count = (s: number) => all.filter((r) => r.status === s).length;
  assert.equal(count(200), n, `statuses: ${JSON.stringify(all.map((r) => r.status))}`);
  assert.equal(count(429), all.length - n);
  assert.equal(upstream.received.length - before, n);
  for (const r of all.filter((x) => x.status === 429)) assert.ok(Number(r.headers['retry-after']) > 0);
}

/**
 * Each window is exact across the instances (3N concurrent → exactly N), also on Cluster, where
 * every counter of a company shares one slot: the company gets its own windows (a 60 s one that
 * binds, and a 1 s one with room), one key a stricter 30 s window of its own, another key none.
 * Key k1 gets exactly its own window; k2 then exactly what is left of the company's.
 */
export async function exactWindowsAcross(
  gws: TestGateway[],
  upstream: RecordingUpstream,
  companyId: string,
): Promise<void> {
  const k1 = await companyAndKey(gws[0]!, companyId, 'trio');
  const k2 = await gws[0]!.gw.service.createKey(companyId, {});
  assert.ok(k2.ok);
  const svc = gws[0]!.gw.service;
  const limits = [
    { points: 1000, duration: 1 },
    { points: 18, duration: 60 },
  ];
  assert.ok((await svc.updateCompany(companyId, { limits })).ok);
  assert.ok((await svc.updateKey(k1.id, { limits: [{ points: 6, duration: 30 }] })).ok);
  const before = upstream.received.length;
  const burst = (key: string, n: number) =>
    Promise.all(Array.from({ length: gws.length * n }, (_, i) => get(gws[i % gws.length]!, key)));
  const first = await burst(k1.key, 6);
  assert.equal(first.filter((r) => r.status === 200).length, 6, JSON.stringify(first.map((r) => r.status)));
  const second = await burst(k2.value.key, 12);
  assert.equal(
    second.filter((r) => r.status === 200).length,
    12,
    JSON.stringify(second.map((r) => r.status)),
  );
  for (const r of second.filter((x) => x.status === 429)) {
    assert.equal(r.headers['ratelimit-policy'], '1000;w=1, 18;w=60');
    assert.ok(Number(r.headers['retry-after']) > 30);
  }
  assert.equal(upstream.received.length - before, 18);
}

/**
 * Revoking on instance 0 is refused by every instance within `withinMs` (default 1 s): each was
 * serving the key from its cache (60 s TTL), so only the invalidation can make it refuse in time.
 * `between` runs after the caches are warm and before the revocation (e.g. to break a subscriber).
 */
export async function revocationReachesAll(
  gws: TestGateway[],
  companyId: string,
  opts: { withinMs?: number; between?: () => Promise<void> | void } = {},
): Promise<number[]> {
  const withinMs = opts.withinMs ?? 1000;
  const k = await companyAndKey(gws[0]!, companyId, 'standard');
  for (const gw of gws) assert.equal((await get(gw, k.key)).status, 200);
  await opts.between?.();
  const revoked = await gws[0]!.gw.service.revokeKey(k.id);
  assert.ok(revoked.ok);
  const took: number[] = [];
  const start = Date.now();
  await Promise.all(
    gws.map(async (gw, i) => {
      await eventually(async () => (await get(gw, k.key)).status === 401, withinMs, 5);
      took[i] = Date.now() - start;
    }),
  );
  for (const t of took) assert.ok(t < withinMs, `revocation took ${t} ms`);
  return took;
}

/** The audit stream and lastUsedAt, written on one instance and read on another. */
export async function auditAndLastUsed(gws: TestGateway[], companyId: string): Promise<void> {
  const [a, b, c] = gws as [TestGateway, TestGateway, TestGateway];
  const k = await companyAndKey(a, companyId, 'standard');
  assert.ok((await a.gw.service.revokeKey(k.id)).ok);
  const audit = await b.gw.service.readAudit({ companyId });
  assert.ok(audit.ok);
  assert.deepEqual(
    audit.value.map((e) => e.event),
    ['key.revoked', 'key.created', 'company.created'],
    'newest first, only this company',
  );
  for (const e of audit.value) {
    assert.match(String(e.id), /^\d+-\d+$/, 'stream ids');
    assert.equal(e.companyId, companyId);
  }

  // lastUsedAt: a request on instance b writes it (asynchronously); instance c reads it.
  const live = await a.gw.service.createKey(companyId, {});
  assert.ok(live.ok);
  const before = Date.now();
  assert.equal((await get(b, live.value.key)).status, 200);
  await eventually(async () => {
    const rec = await c.gw.store.getKey(live.value.id);
    return rec?.lastUsedAt != null && Date.parse(rec.lastUsedAt) >= Math.floor(before / 1000) * 1000;
  }, 2000);
  // touchKey directly, then read back through the admin service of another instance.
  const rec = await a.gw.store.getKey(live.value.id);
  assert.ok(rec);
  const at = isoSeconds(Date.now() + 3_600_000);
  await a.gw.store.touchKey(rec, at);
  const listed = await c.gw.service.listKeys(companyId);
  assert.ok(listed.ok);
  assert.equal(listed.value.find((v) => v.id === live.value.id)?.lastUsedAt, at);
}

export interface FailoverFigures {
  label: string;
  requests: number;
  /** ms from the start of the load to the failover trigger. */
  triggerAt: number;
  /** ms the topology took (trigger → helper saw the promotion complete). */
  topologyMs: number;
  /** The longest time any request waited for its answer. */
  maxLatencyMs: number;
  p99LatencyMs: number;
  /** Answers by key kind and status. */
  valid: Record<string, number>;
  unknown: Record<string, number>;
  /** Requests that got no answer within the bound. */
  unanswered: number;
  /** First and last abnormal answer (valid ≠ 200, unknown ≠ 401), ms after the trigger; null if none. */
  firstErrorMs: number | null;
  lastErrorMs: number | null;
  /** Trigger → the last abnormal answer ended (0 when nothing abnormal was seen). */
  recoveredAfterMs: number;
  /** Normal answers only, from the last abnormal answer to the end of the load (ms). */
  normalTailMs: number;
  /** Error lines (level ≥ 50) the gateways logged during the load. */
  errorLogs: number;
  /** Abnormal answers per 250 ms after the trigger ("+0.5s:valid503=3,unknown503=12 ..."). */
  timeline: string;
}

interface Sample {
  kind: 'valid' | 'unknown';
  start: number;
  end: number;
  status: number;
}

/**
 * Steady load on every instance while `trigger` forces a failover: `workers` loops, each alternating
 * a valid key and a fresh unknown (well-formed) key, so every unknown-key request costs a store
 * lookup. Runs `beforeMs` of load, the trigger, then load until `afterMs` past the trigger's end.
 * Each request is bounded by `boundMs` (recorded as status 0 when exceeded).
 */
export async function loadThroughFailover(
  gws: TestGateway[],
  validKey: string,
  trigger: () => Promise<unknown>,
  opts: { label: string; beforeMs?: number; afterMs?: number; workers?: number; boundMs?: number },
): Promise<FailoverFigures> {
  const beforeMs = opts.beforeMs ?? 1500;
  const afterMs = opts.afterMs ?? 4000;
  const workers = opts.workers ?? 6;
  const boundMs = opts.boundMs ?? 10_000;
  const logMarks = gws.map((g) => g.logs().length);
  const samples: Sample[] = [];
  const t0 = Date.now();
  let stopAt = Number.POSITIVE_INFINITY;
  const hardStop = t0 + 60_000;
  const timed = async (gw: TestGateway, key: string): Promise<number> => {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<number>((r) => {
      timer = setTimeout(() => r(0), boundMs);
    });
    try {
      return await Promise.race([
        get(gw, key).then(
          (r: Reply) => r.status,
          () => -1,
        ),
        bound,
      ]);
    } finally {
      clearTimeout(timer);
    }
  };
  const worker = async (w: number) => {
    for (let i = 0; Date.now() < stopAt && Date.now() < hardStop; i++) {
      const kind = (i + w) % 2 === 0 ? 'valid' : 'unknown';
      const gw = gws[(i + w) % gws.length]!;
      const start = Date.now();
      const status = await timed(gw, kind === 'valid' ? validKey : generateApiKey('live'));
      samples.push({ kind, start: start - t0, end: Date.now() - t0, status });
    }
  };
  const running = Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
  await new Promise((r) => setTimeout(r, beforeMs));
  const triggerAt = Date.now() - t0;
  await trigger();
  const topologyMs = Date.now() - t0 - triggerAt;
  stopAt = Date.now() + afterMs;
  await running;

  const tally = (kind: Sample['kind']) => {
    const out: Record<string, number> = {};
    for (const s of samples.filter((x) => x.kind === kind)) out[s.status] = (out[s.status] ?? 0) + 1;
    return out;
  };
  const abnormal = samples.filter((s) => (s.kind === 'valid' ? s.status !== 200 : s.status !== 401));
  const endAt = Math.max(...samples.map((s) => s.end));
  const lastAbnormal = abnormal.length ? Math.max(...abnormal.map((s) => s.end)) : triggerAt;
  const latencies = samples.map((s) => s.end - s.start).sort((a, b) => a - b);
  const errorLogs = gws.reduce(
    (n, g, i) =>
      n +
      g
        .logs()
        .slice(logMarks[i])
        .filter((l) => Number(l.level) >= 50).length,
    0,
  );
  const buckets = new Map<number, Record<string, number>>();
  for (const a of abnormal) {
    const b = Math.floor((a.start - triggerAt) / 250) * 250;
    const row = buckets.get(b) ?? {};
    row[`${a.kind}${a.status}`] = (row[`${a.kind}${a.status}`] ?? 0) + 1;
    buckets.set(b, row);
  }
  const timeline = [...buckets.entries()]
    .sort((x, y) => x[0] - y[0])
    .map(
      ([b, row]) =>
        `${b >= 0 ? '+' : ''}${(b / 1000).toFixed(2)}s:${Object.entries(row)
          .map(([k, v]) => `${k}=${v}`)
          .join(',')}`,
    )
    .join(' ');
  return {
    label: opts.label,
    requests: samples.length,
    triggerAt,
    topologyMs,
    maxLatencyMs: latencies[latencies.length - 1] ?? 0,
    p99LatencyMs: latencies[Math.floor(latencies.length * 0.99)] ?? 0,
    valid: tally('valid'),
    unknown: tally('unknown'),
    unanswered: samples.filter((s) => s.status <= 0).length,
    firstErrorMs: abnormal.length ? Math.min(...abnormal.map((s) => s.start)) - triggerAt : null,
    lastErrorMs: abnormal.length ? lastAbnormal - triggerAt : null,
    recoveredAfterMs: Math.max(0, lastAbnormal - triggerAt),
    normalTailMs: endAt - lastAbnormal,
    errorLogs,
    timeline,
  };
}

/** The assertions every failover run must pass, and the figures printed into the test output. */
export function assertFailoverFigures(f: FailoverFigures, maxLatencyMs: number): void {
  process.stdout.write(`# ${f.label}: ${JSON.stringify(f)}\n`);
  assert.equal(f.unknown['200'] ?? 0, 0, 'an unknown key is never admitted');
  for (const [kind, by] of [
    ['valid', f.valid],
    ['unknown', f.unknown],
  ] as const) {
    for (const status of Object.keys(by)) {
      const ok = kind === 'valid' ? ['200', '503'] : ['401', '503'];
      assert.ok(ok.includes(status), `${kind} key got status ${status} (${JSON.stringify(by)})`);
    }
  }
  assert.equal(f.unanswered, 0, 'every request is answered');
  assert.ok(f.maxLatencyMs < maxLatencyMs, `longest answer ${f.maxLatencyMs} ms (bound ${maxLatencyMs} ms)`);
  assert.equal(f.errorLogs, 0, 'no error-level log lines (a 500 logs one)');
  assert.ok((f.valid['200'] ?? 0) > 0 && (f.unknown['401'] ?? 0) > 0, 'load actually ran');
  assert.ok(f.normalTailMs >= 1500, `service back to normal for the last ${f.normalTailMs} ms of the load`);
}
