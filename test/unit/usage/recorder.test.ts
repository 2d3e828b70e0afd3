import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emptyCounts } from '../../../src/usage/counts.js';
import { UsageRecorder } from '../../../src/usage/recorder.js';
import { MemoryUsageStore, type UsageDelta } from '../../../src/usage/usage-store.js';

const HOUR = Date.parse('2026-11-26T09:00:00Z');

test('one store call per flush with every company-hour; nothing when idle', async () => {
  const calls: UsageDelta[][] = [];
  let now = HOUR + 10;
  const r = new UsageRecorder({
    store: { kind: 'memory', add: async (d) => void calls.push(d), readHours: async () => new Map() },
    flushIntervalMs: 0,
    now: () => now,
  });
  r.record('a', undefined, 200);
  r.record('a', 'RATE_LIMITED', 429);
  r.record('b', undefined, 500);
  now += 3_600_000;
  r.record('a', undefined, 204);
  await r.flush();
  assert.equal(calls.length, 1);
  assert.equal(calls[0]!.length, 3);
  assert.deepEqual(calls[0]![0], {
    companyId: 'a',
    hour: HOUR,
    counts: { ...emptyCounts(), allowed: 1, rateLimited: 1, upstream2xx: 1 },
  });
  await r.flush();
  assert.equal(calls.length, 1, 'an idle flush writes nothing');
  await r.close();
});

test('a failed flush keeps its counts for the next one; close() flushes', async () => {
  let fail = true;
  const store = new MemoryUsageStore(35, () => HOUR);
  const results: boolean[] = [];
  const r = new UsageRecorder({
    store: {
      kind: 'memory',
      add: async (d) => {
        if (fail) throw new Error('Connection is closed.');
        await store.add(d);
      },
      readHours: (c, h) => store.readHours(c, h),
    },
    flushIntervalMs: 0,
    onFlush: (x) => results.push(x.ok),
    now: () => HOUR,
  });
  r.record('a', undefined, 200);
  await r.flush();
  r.record('a', undefined, 200);
  fail = false;
  await r.close();
  assert.deepEqual(results, [false, true]);
  const got = await store.readHours('a', [HOUR]);
  assert.deepEqual(got.get(HOUR), { ...emptyCounts(), allowed: 2, upstream2xx: 2 });
});

test('MemoryUsageStore drops hours older than the retention', async () => {
  const store = new MemoryUsageStore(1, () => HOUR);
  const old = HOUR - 3 * 86_400_000;
  await store.add([{ companyId: 'a', hour: old, counts: { ...emptyCounts(), allowed: 1 } }]);
  assert.equal((await store.readHours('a', [old])).size, 0);
});

test("each key's share is counted beside its company's, and survives a failed flush", async () => {
  let fail = true;
  const store = new MemoryUsageStore(35, () => HOUR);
  const r = new UsageRecorder({
    store: {
      kind: 'memory',
      add: async (d) => {
        if (fail) throw new Error('Connection is closed.');
        await store.add(d);
      },
      readHours: (c, h, k) => store.readHours(c, h, k),
    },
    flushIntervalMs: 0,
    now: () => HOUR,
  });
  r.record('a', undefined, 200, 'k1');
  r.record('a', 'RATE_LIMITED', 429, 'k1');
  await r.flush();
  r.record('a', undefined, 500, 'k2');
  r.record('a', 'COMPANY_INACTIVE', 403);
  fail = false;
  await r.close();
  assert.deepEqual((await store.readHours('a', [HOUR])).get(HOUR), {
    ...emptyCounts(),
    allowed: 2,
    rateLimited: 1,
    refused: 1,
    upstream2xx: 1,
    upstream5xx: 1,
  });
  assert.deepEqual((await store.readHours('a', [HOUR], 'k1')).get(HOUR), {
    ...emptyCounts(),
    allowed: 1,
    rateLimited: 1,
    upstream2xx: 1,
  });
  assert.deepEqual((await store.readHours('a', [HOUR], 'k2')).get(HOUR), {
    ...emptyCounts(),
    allowed: 1,
    upstream5xx: 1,
  });
  assert.equal((await store.readHours('a', [HOUR], 'k3')).size, 0);
});
