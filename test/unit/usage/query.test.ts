import assert from 'node:assert/strict';
import { test } from 'node:test';
import { emptyCounts } from '../../../src/usage/counts.js';
import { parseUsageRange, readUsage } from '../../../src/usage/query.js';

const NOW = Date.parse('2026-11-26T09:30:00Z');

test('defaults: the last 24 hours up to the end of the current hour; 7 days by day', () => {
  const h = parseUsageRange({}, NOW);
  assert.ok(h.ok);
  assert.equal(h.range.toMs, Date.parse('2026-11-26T10:00:00Z'));
  assert.equal(h.range.fromMs, Date.parse('2026-11-25T10:00:00Z'));
  const d = parseUsageRange({ granularity: 'day' }, NOW);
  assert.ok(d.ok);
  assert.equal(d.range.toMs, Date.parse('2026-11-27T00:00:00Z'));
  assert.equal(d.range.fromMs, Date.parse('2026-11-20T00:00:00Z'));
});

test('from rounds down and to up; dates are midnight UTC', () => {
  const r = parseUsageRange({ from: '2026-11-26T07:10:00Z', to: '2026-11-26T08:10:00Z' }, NOW);
  assert.ok(r.ok);
  assert.equal(r.range.fromMs, Date.parse('2026-11-26T07:00:00Z'));
  assert.equal(r.range.toMs, Date.parse('2026-11-26T09:00:00Z'));
  const d = parseUsageRange({ from: '2026-11-01', to: '2026-11-03', granularity: 'day' }, NOW);
  assert.ok(d.ok);
  assert.equal((d.range.toMs - d.range.fromMs) / 86_400_000, 2);
});

test('every problem names its parameter and never echoes the input', () => {
  const bad: [Record<string, unknown>, RegExp][] = [
    [{ granularity: 'minute' }, /^granularity:/],
    [{ from: 'nk_live_secret' }, /^from:/],
    [{ to: '2026-02-30T00:00:00Z' }, /^to:/],
    [{ from: ['a'] }, /^from:/],
    [{ from: '2026-11-26', to: '2026-11-26' }, /^from: must be before to/],
    [{ from: '2026-01-01', to: '2026-03-01', granularity: 'hour' }, /^to: .*744 hours/],
    [{ from: '2020-01-01', to: '2026-01-01', granularity: 'day' }, /^to: .*400 days/],
  ];
  for (const [q, re] of bad) {
    const r = parseUsageRange(q, NOW);
    assert.ok(!r.ok, JSON.stringify(q));
    assert.match(r.details, re);
    assert.doesNotMatch(r.details, /nk_live/);
  }
});

test('readUsage: dense buckets, hours summed into days, nothing read beyond the retention', async () => {
  const asked: number[][] = [];
  const h1 = Date.parse('2026-11-25T23:00:00Z');
  const h2 = Date.parse('2026-11-26T01:00:00Z');
  const reader = {
    async readHours(_id: string, hours: number[]) {
      asked.push(hours);
      return new Map([
        [h1, { ...emptyCounts(), allowed: 2 }],
        [h2, { ...emptyCounts(), allowed: 3, upstream2xx: 3 }],
      ]);
    },
  };
  const r = parseUsageRange({ from: '2026-11-25', to: '2026-11-27', granularity: 'day' }, NOW);
  assert.ok(r.ok);
  const report = await readUsage(reader, 'acme', r.range, { now: NOW, retentionDays: 35 });
  assert.deepEqual(
    report.buckets.map((b) => [b.start, b.allowed, b.upstream2xx]),
    [
      ['2026-11-25T00:00:00Z', 2, 0],
      ['2026-11-26T00:00:00Z', 3, 3],
    ],
  );
  // Hours after now are not read.
  assert.equal(asked[0]!.at(-1), Date.parse('2026-11-26T09:00:00Z'));
  const old = parseUsageRange({ from: '2025-01-01', to: '2025-01-02', granularity: 'day' }, NOW);
  assert.ok(old.ok);
  await readUsage(reader, 'acme', old.range, { now: NOW, retentionDays: 35 });
  assert.equal(asked.length, 1, 'a range older than the retention reads nothing');
});
