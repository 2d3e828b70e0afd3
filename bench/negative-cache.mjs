// Memory cost of the verifier's negative cache: unknown keys (well-formed, valid checksum, in no
// store), each verified once so each is remembered as unknown. Run alone:
//
//   npm run build && node --expose-gc bench/negative-cache.mjs
//
// BENCH_UNKNOWN_KEYS changes the key count (default 100,000, the default cache.maxEntries). Every
// figure is taken after forced full GCs; the clients' plaintext keys are generated and measured
// first, so the growth is the cache's own cost.
import process from 'node:process';
import { generateApiKey } from '../dist/auth/api-key.js';
import { configSchema } from '../dist/config/schema.js';
import { KeyVerifier } from '../dist/auth/verify.js';
import { MemoryKeyStore } from '../dist/store/memory-store.js';

const gc = globalThis.gc;
if (typeof gc !== 'function') {
  process.stderr.write('needs --expose-gc: node --expose-gc bench/negative-cache.mjs\n');
  process.exit(2);
}
const N = Number(process.env.BENCH_UNKNOWN_KEYS ?? 100_000);
function snapshot() {
  for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, rss: m.rss };
}
const defaults = configSchema.parse({});
const keys = Array.from({ length: N }, () => generateApiKey('live'));
const empty = snapshot();
const verifier = new KeyVerifier({
  store: new MemoryKeyStore(),
  ...defaults.cache,
  maxKeyLength: defaults.keys.maxLength,
  acceptLegacyFormat: defaults.keys.acceptLegacyFormat,
  lastUsedIntervalMs: defaults.keys.lastUsedIntervalMs,
  tiers: new Set(defaults.rateLimit.tiers.map((t) => t.name)),
});
globalThis.benchRetained = verifier;
const before = snapshot();
for (const key of keys) {
  const r = await verifier.verify(key);
  if (r.ok || r.reason !== 'unknown') throw new Error(`expected unknown, got ${JSON.stringify(r)}`);
}
const after = snapshot();
// Every key again: all must be answered from the negative cache (no growth).
const cached = keys.filter((k) => verifier.verifyCached(k) !== undefined).length;
const per = (f) => ((after[f] - before[f]) / N).toFixed(0);
const prealloc = ((before.heapUsed - empty.heapUsed) / 2 ** 20).toFixed(1);
process.stdout.write(
  `negative cache, ${N.toLocaleString('en')} unknown keys (Node ${process.version}, cache.maxEntries ${defaults.cache.maxEntries}):\n` +
    `  ${per('heapUsed')} B heap/entry, ${per('rss')} B RSS/entry; ` +
    `${((after.heapUsed - before.heapUsed) / 2 ** 20).toFixed(1)} MiB heap in all ` +
    `(+ ${prealloc} MiB for the empty verifier's caches); ` +
    `${cached.toLocaleString('en')} of them still answered from the cache\n`,
);
