import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EventBus } from '../../../src/events/bus.js';
import { createQuotaWatcher, type WindowCount } from '../../../src/events/quota.js';

type Published = Parameters<EventBus['publish']>;

function watcher() {
  const calls: Published[] = [];
  const publish = ((...args: Published) => {
    calls.push(args);
    return Promise.resolve('queued' as const);
  }) as EventBus['publish'];
  return { calls, watch: createQuotaWatcher({ publish }) };
}

const DAY = 86_400;
const base: WindowCount = {
  companyId: 'acme',
  keyId: null,
  points: 10,
  duration: DAY,
  usedBefore: 0,
  used: 1,
  endsAt: Date.UTC(2030, 0, 2),
};

describe('quota.threshold watcher', () => {
  test('one request at a time: 80 % at the 8th of 10, 100 % at the 10th, nothing else', () => {
    const { calls, watch } = watcher();
    for (let used = 1; used <= 12; used++) watch({ ...base, usedBefore: used - 1, used });
    assert.deepEqual(
      calls.map(([type, data]) => [
        type,
        (data as { threshold: number }).threshold,
        (data as { used: number }).used,
      ]),
      [
        ['quota.threshold', 80, 8],
        ['quota.threshold', 100, 10],
      ],
    );
    const [, data, once] = calls[0]!;
    assert.deepEqual(data, {
      companyId: 'acme',
      keyId: null,
      threshold: 80,
      limit: 10,
      windowSeconds: DAY,
      used: 8,
      resetsAt: '2030-01-02T00:00:00Z',
    });
    // Deduplicated for the deployment until the window ends (the limiter's clock).
    assert.deepEqual(once, { key: 'quota:acme:-:86400:80', untilMs: base.endsAt });
  });

  test('a lease that jumps over both marks reports both; marks round up (80 % of 7 is the 6th)', () => {
    const { calls, watch } = watcher();
    watch({ ...base, points: 7, usedBefore: 2, used: 7 });
    assert.deepEqual(
      calls.map(([, d]) => (d as { threshold: number }).threshold),
      [80, 100],
    );
    const w = watcher();
    w.watch({ ...base, points: 7, usedBefore: 4, used: 5 });
    assert.equal(w.calls.length, 0, '5 of 7 is under 80 %');
    w.watch({ ...base, points: 7, usedBefore: 5, used: 6 });
    assert.equal(w.calls.length, 1);
  });

  test("a key's own window is keyed by the key; windows shorter than a day never report", () => {
    const { calls, watch } = watcher();
    watch({ ...base, keyId: 'key_1', usedBefore: 7, used: 8 });
    assert.equal(calls[0]![2]!.key, 'quota:acme:key_1:86400:80');
    watch({ ...base, duration: DAY - 1, usedBefore: 7, used: 10 });
    watch({ ...base, duration: 60, usedBefore: 0, used: 10 });
    assert.equal(calls.length, 1);
  });
});
