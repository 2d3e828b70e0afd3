/**
 * Redis memory taken by the store's records, for docs/scaling.md. Not a test (the scale suite runs
 * `*.test.ts` only); run it alone:
 *
 *   node --import tsx test/scale/measure-memory.ts [companies] [keysPerCompany]
 *
 * Starts a private redis-server, writes through the real AdminService (so the audit stream grows as
 * in production), and reports `used_memory` growth per phase plus `MEMORY USAGE` of sample keys.
 */
import { AdminService } from '../../src/admin/service.js';
import { DEFAULT_TIERS } from '../../src/config/schema.js';
import { TierRateLimiter } from '../../src/ratelimit/tier-limiter.js';
import { createRedisClient, waitForReady } from '../../src/redis/connection.js';
import { RedisKeyStore } from '../../src/store/redis-store.js';
import { isoSeconds } from '../../src/time.js';
import { startRedis } from '../helpers/redis.js';
import { redisCmd } from '../helpers/topologies.js';

const COMPANIES = Number(process.argv[2] ?? 1000);
const KEYS_PER_COMPANY = Number(process.argv[3] ?? 10);

const redis = await startRedis();
try {
  const cfg = {
    url: redis.url,
    keyPrefix: 'ng:',
    commandTimeoutMs: 5000,
    connectTimeoutMs: 2000,
  };
  const client = createRedisClient(cfg);
  if (!(await waitForReady(client, 3000))) throw new Error('redis not ready');
  const store = new RedisKeyStore(client, createRedisClient(cfg, 'sub'), 'ng:');
  const service = new AdminService({
    store,
    tiers: new Set(DEFAULT_TIERS.map((t) => t.name)),
    maxActiveKeys: 0,
    rotationAgeDays: 90,
  });
  const limiter = new TierRateLimiter({
    tiers: DEFAULT_TIERS,
    redis: client,
    keyPrefix: 'ng:',
    failurePolicy: 'insurance',
  });
  const used = async () => {
    const info = String(await redisCmd(redis.port, 'INFO', 'memory'));
    return Number(/used_memory:(\d+)/.exec(info)![1]);
  };
  const usage = async (key: string) =>
    Number(await redisCmd(redis.port, 'MEMORY', 'USAGE', key, 'SAMPLES', '0'));
  const auditLen = async () => Number(await redisCmd(redis.port, 'XLEN', 'ng:audit'));
  const inBatches = async (n: number, fn: (i: number) => Promise<unknown>) => {
    for (let i = 0; i < n; i += 200)
      await Promise.all(Array.from({ length: Math.min(200, n - i) }, (_, j) => fn(i + j)));
  };
  const rows: string[] = [];
  const report = (what: string, bytes: number, per: number, unit: string) =>
    rows.push(
      `${what.padEnd(58)} ${String(bytes).padStart(11)} B  ${(bytes / per).toFixed(0).padStart(6)} B per ${unit}`,
    );

  const m0 = await used();
  await inBatches(COMPANIES, async (i) => {
    const r = await service.createCompany({ id: `company-${String(i).padStart(6, '0')}`, tier: 'standard' });
    if (!r.ok) throw new Error(JSON.stringify(r));
  });
  const m1 = await used();
  report(`${COMPANIES} companies (incl. ${await auditLen()} audit entries)`, m1 - m0, COMPANIES, 'company');

  // Keys without their audit entries first: create via the store directly is not the product path,
  // so measure the audit stream separately and subtract it.
  const audit1 = await usage('ng:audit');
  const ids: { id: string; hash: string }[] = [];
  await inBatches(COMPANIES * KEYS_PER_COMPANY, async (i) => {
    const company = `company-${String(Math.floor(i / KEYS_PER_COMPANY)).padStart(6, '0')}`;
    const r = await service.createKey(company, { label: `key ${i}` });
    if (!r.ok) throw new Error(JSON.stringify(r));
    ids.push({ id: r.value.id, hash: '' });
  });
  const m2 = await used();
  const audit2 = await usage('ng:audit');
  const nKeys = COMPANIES * KEYS_PER_COMPANY;
  report(`${nKeys} keys, everything (records + audit growth)`, m2 - m1, nKeys, 'key');
  report(`${nKeys} keys, without the audit stream's growth`, m2 - m1 - (audit2 - audit1), nKeys, 'key');

  // lastUsedAt written on every key (as traffic does, once a minute per key).
  const recs = await Promise.all(ids.slice(0, 1).map((k) => store.getKey(k.id)));
  const sample = recs[0]!;
  await inBatches(nKeys, async (i) => {
    const rec = await store.getKey(ids[i]!.id);
    await store.touchKey(rec!, isoSeconds());
  });
  const m3 = await used();
  report(`lastUsedAt set on ${nKeys} keys`, m3 - m2, nKeys, 'key');

  // One rate-limit window open per company.
  await inBatches(COMPANIES, (i) => limiter.consume(`company-${String(i).padStart(6, '0')}`, 'standard'));
  const m4 = await used();
  report(`rate-limit counters, one per company`, m4 - m3, COMPANIES, 'company');

  const c0 = 'company-000000';
  rows.push('');
  rows.push('MEMORY USAGE of single keys (bytes):');
  for (const key of [
    `ng:kh:${sample.hash}`,
    `ng:k:${sample.id}`,
    `ng:c:${c0}`,
    `ng:ck:${c0}`,
    `ng:ca:${c0}`,
    `ng:rl:standard:${c0}`,
    'ng:companies',
    'ng:audit',
  ])
    rows.push(
      `  ${key.replace(sample.hash, '<sha256>').replace(sample.id, '<keyId>').padEnd(40)} ${await usage(key)}`,
    );
  rows.push(`  audit entries: ${await auditLen()} (capped at ~10,000)`);
  rows.push(`  used_memory total: ${m4} B (empty server: ${m0} B)`);
  process.stdout.write(rows.join('\n') + '\n');
  await store.close();
} finally {
  await redis.stop();
}
