// Memory cost of the key cache: a KeyVerifier over a MemoryKeyStore holding 100k keys of one
// company, each key verified once so all are cached. Run by `npm run bench`, or alone:
//
//   node --expose-gc bench/memory.mjs [--json-out FILE]
//
// Built modules are imported directly from dist/ (KeyVerifier is not part of the package API).
// Every figure is taken after forced full GCs. The store is filled and measured first, so the
// cache's own cost is the growth from verifying, not the records the store already holds.
// BENCH_MEMORY_KEYS changes the key count.
import { writeFileSync } from 'node:fs';
import process from 'node:process';
import { generateApiKey, hashApiKey } from '../dist/auth/api-key.js';
import { configSchema } from '../dist/config/schema.js';
import { KeyVerifier } from '../dist/auth/verify.js';
import { MemoryKeyStore } from '../dist/store/memory-store.js';

const gc = globalThis.gc;
if (typeof gc !== 'function') {
  process.stderr.write('bench/memory.mjs needs --expose-gc: node --expose-gc bench/memory.mjs\n');
  process.exit(2);
}
const N = Number(process.env.BENCH_MEMORY_KEYS ?? 100_000);
const jsonOut = process.argv.includes('--json-out')
  ? process.argv[process.argv.indexOf('--json-out') + 1]
  : null;

function snapshot() {
  // Several passes: weak references and finalisers can free more on a second collection.
  for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, rss: m.rss, external: m.external };
}
const perKey = (a, b) => ({
  heapPerKeyB: (b.heapUsed - a.heapUsed) / N,
  rssPerKeyB: (b.rss - a.rss) / N,
});
const mib = (s) => ({ rssMiB: s.rss / 2 ** 20, heapUsedMiB: s.heapUsed / 2 ** 20 });

// The gateway's own defaults (cache.maxEntries = 100k, TTLs, key rules), not numbers made up here.
const defaults = configSchema.parse({});
const baseline = snapshot();

// The plaintext keys are the clients' side: held by this script only to call verify().
const keys = Array.from({ length: N }, () => generateApiKey('live'));
const afterKeys = snapshot();

const store = new MemoryKeyStore();
const now = new Date().toISOString().slice(0, 19) + 'Z';
await store.createCompany({
  id: 'bench',
  name: 'bench',
  tier: 'standard',
  status: 'active',
  apiAccess: true,
  createdAt: now,
  updatedAt: now,
});
for (let i = 0; i < N; i++) {
  const key = keys[i];
  // maxActiveKeys 0: no cap (the cap scan over 100k keys per insert would make this quadratic).
  await store.createKey(
    {
      id: `key-${i}`,
      companyId: 'bench',
      hash: hashApiKey(key),
      prefix: key.slice(0, 14),
      label: null,
      environment: 'live',
      createdAt: now,
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: null,
      exposedAt: null,
      rotatedTo: null,
    },
    0,
    now,
  );
}
const afterStore = snapshot();

const verifier = new KeyVerifier({
  store,
  maxEntries: Math.max(defaults.cache.maxEntries, N),
  positiveTtlMs: defaults.cache.positiveTtlMs,
  negativeTtlMs: defaults.cache.negativeTtlMs,
  staleIfErrorMs: defaults.cache.staleIfErrorMs,
  maxKeyLength: defaults.keys.maxLength,
  acceptLegacyFormat: defaults.keys.acceptLegacyFormat,
  lastUsedIntervalMs: defaults.keys.lastUsedIntervalMs,
});
// Kept reachable on purpose: V8 may collect a local that is never read again, which would make the
// later snapshots measure a freed store and cache.
globalThis.benchRetained = { store, verifier };
const afterEmpty = snapshot();

const t0 = process.hrtime.bigint();
for (const key of keys) {
  const r = await verifier.verify(key);
  if (!r.ok) throw new Error(`verify failed: ${r.reason}`);
}
const fillMs = Number(process.hrtime.bigint() - t0) / 1e6;
if (verifier.cachedKeys !== N) throw new Error(`expected ${N} cached keys, got ${verifier.cachedKeys}`);
const afterFill = snapshot();

// A second pass is all cache hits: it should not grow anything (steady state).
const t1 = process.hrtime.bigint();
for (const key of keys) await verifier.verify(key);
const hitMs = Number(process.hrtime.bigint() - t1) / 1e6;
const afterHits = snapshot();

// Drop the clients' plaintext keys: what remains is what a gateway with 100k cached keys holds.
keys.length = 0;
const final = snapshot();
if (globalThis.benchRetained.verifier.cachedKeys !== N) throw new Error('the cache lost entries');

const result = {
  keys: N,
  cacheMaxEntries: Math.max(defaults.cache.maxEntries, N),
  node: process.version,
  store: perKey(afterKeys, afterStore),
  cacheEmpty: perKey(afterStore, afterEmpty),
  cache: perKey(afterStore, afterFill),
  cacheFillOnly: perKey(afterEmpty, afterFill),
  hitPassGrowth: perKey(afterFill, afterHits),
  verifyMissUs: (fillMs * 1000) / N,
  verifyHitUs: (hitMs * 1000) / N,
  baseline: mib(baseline),
  withCache: mib(afterFill),
  final: mib(final),
  raw: { baseline, afterKeys, afterStore, afterEmpty, afterFill, afterHits, final },
};

const f = (v, d = 0) => v.toFixed(d);
process.stdout.write(
  `KeyVerifier cache memory, ${N.toLocaleString('en')} keys of one company (Node ${process.version})\n` +
    `  store alone (MemoryKeyStore records):   ${f(result.store.heapPerKeyB)} B heap/key, ${f(result.store.rssPerKeyB)} B RSS/key\n` +
    `  verifier, empty (LRU preallocation):    ${f(result.cacheEmpty.heapPerKeyB)} B heap/key\n` +
    `  verifier, all ${N.toLocaleString('en')} keys cached:      ${f(result.cache.heapPerKeyB)} B heap/key, ${f(result.cache.rssPerKeyB)} B RSS/key (incl. preallocation)\n` +
    `  second pass, all hits: growth           ${f(result.hitPassGrowth.heapPerKeyB, 1)} B heap/key\n` +
    `  verify: ${f(result.verifyMissUs, 2)} µs/key on a miss (store lookup), ${f(result.verifyHitUs, 2)} µs/key on a hit\n` +
    `  RSS: bare process ${f(result.baseline.rssMiB, 1)} MiB -> with ${N.toLocaleString('en')} cached keys ${f(result.final.rssMiB, 1)} MiB ` +
    `(heap used ${f(result.final.heapUsedMiB, 1)} MiB)\n`,
);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(result, null, 2) + '\n');
