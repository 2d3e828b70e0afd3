import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CAP_MS, Insurance, insurancePoints } from '../../../src/ratelimit/insurance.js';
import type { LeaseDecision } from '../../../src/ratelimit/lease-limiter.js';

// The insurance's bookkeeping on an explicit clock (ms): which counts survive the move between
// Redis and the insurance (invariant 18), with no Redis and no waiting. The Redis side (settle,
// two processes, an outage) is in test/unit/ratelimit/tier-limiter.test.ts and
// test/integration/outage-limits.test.ts.

const T = 1_000_000;
/** A company's 1 s and 60 s windows (two instances: shares 5 and 20). */
const WS = [
  { key: 'rl:{acme}:c1', points: 10, duration: 1 },
  { key: 'rl:{acme}:c60', points: 40, duration: 60 },
];
/** What Redis answers for an admitted request: its windows end in `ms`. */
const redisAdmitted = (...ms: number[]): LeaseDecision => ({
  allowed: true,
  refusedBy: -1,
  windows: ms.map((m, i) => ({
    points: WS[i]!.points,
    duration: WS[i]!.duration,
    remaining: 1,
    msBeforeReset: m,
  })),
});

/** `n` requests admitted through Redis at `now`, their windows ending at `ends`. */
function throughRedis(ins: Insurance, n: number, now: number, ends: [number, number]): void {
  for (let i = 0; i < n; i++) {
    assert.equal(ins.reserve(WS, now), null);
    ins.align(WS, redisAdmitted(ends[0] - now, ends[1] - now), now);
  }
}

const allowedOf = (ds: LeaseDecision[]) => ds.filter((d) => d.allowed).length;

describe('Insurance: Redis → insurance', () => {
  test('what Redis admitted in a window counts against the share; only the rest is admitted', () => {
    const ins = new Insurance(2);
    throughRedis(ins, 3, T, [T + 800, T + 50_000]);
    const ds = Array.from({ length: 5 }, () => ins.admit('acme', WS, T + 100));
    // The 1 s share is 5: 3 through Redis, 2 on the insurance.
    assert.equal(allowedOf(ds), 2);
    const refused = ds[2]!;
    assert.deepEqual(
      [refused.refusedBy, refused.windows[0]!.remaining, refused.windows[0]!.points],
      [0, 0, 5],
    );
    // The window is Redis's: it ends when Redis's does (800 ms after T), not 1 s after the fallback.
    assert.equal(refused.windows[0]!.msBeforeReset, 700);
    assert.equal(refused.windows[1]!.msBeforeReset, 49_900);
    // The 60 s window counted all five: 20 − 5 left.
    assert.equal(refused.windows[1]!.remaining, 15);
  });

  test('a request Redis refused, or that failed, is released and takes nothing from the share', () => {
    const ins = new Insurance(2);
    for (let i = 0; i < 10; i++) {
      assert.equal(ins.reserve(WS, T), null);
      ins.release(WS);
    }
    const ds = Array.from({ length: 6 }, () => ins.admit('acme', WS, T));
    assert.equal(allowedOf(ds), 5);
  });

  test('a new Redis window replaces the count only once the old one has ended', () => {
    const ins = new Insurance(2);
    throughRedis(ins, 5, T, [T + 1000, T + 60_000]);
    // Next second: the 1 s window is new (5 left of the share), the 60 s one still holds 5 of 20.
    throughRedis(ins, 5, T + 1000, [T + 2000, T + 60_000]);
    const d = ins.admit('acme', WS, T + 1500);
    assert.equal(d.allowed, false);
    assert.equal(d.windows[1]!.remaining, 10);
  });
});

describe('Insurance: insurance → Redis', () => {
  test('what the insurance admitted is owed per window, as a total, until acknowledged', () => {
    const ins = new Insurance(2);
    throughRedis(ins, 1, T, [T + 1000, T + 60_000]);
    for (let i = 0; i < 4; i++) assert.equal(ins.admit('acme', WS, T + 10).allowed, true);
    const owed = ins.owed(WS, T + 20)!;
    assert.deepEqual(
      owed.map((d) => [d.key, d.msLeft, d.total]),
      [
        [WS[0]!.key, 980, 4],
        [WS[1]!.key, 59_980, 4],
      ],
    );
    // Grouped by hash tag for the settle loop: one Redis call for the company.
    assert.deepEqual([...ins.owedByTag(T + 20).keys()], ['{acme}']);
    ins.acknowledge(owed, T + 30);
    assert.equal(ins.owed(WS, T + 30), null);
    // One more on the insurance, in the next second: the 60 s total goes on from 4 (Redis adds only
    // the difference to what it has); the new 1 s window starts from 0.
    assert.equal(ins.admit('acme', WS, T + 1010).allowed, true);
    assert.deepEqual(
      ins.owed(WS, T + 1010)!.map((d) => d.total),
      [1, 5],
    );
  });

  test("a debt dies with its window: an ended window's admissions are owed to nobody", () => {
    const ins = new Insurance(2);
    assert.equal(ins.admit('acme', WS, T).allowed, true);
    assert.deepEqual(
      ins.owed(WS, T + 999)!.map((d) => d.key),
      [WS[0]!.key, WS[1]!.key],
    );
    assert.deepEqual(
      ins.owed(WS, T + 1000)!.map((d) => d.key),
      [WS[1]!.key],
    );
    assert.equal(ins.owed(WS, T + 60_000), null);
    assert.equal(ins.owedByTag(T + 60_000).size, 0);
  });

  test('acknowledging a counter that has since been replaced does not hide the new debts', () => {
    const ins = new Insurance(2);
    ins.admit('acme', WS, T);
    const old = ins.owed(WS, T)!;
    // The 1 s window ends and a new one admits 1; the late acknowledgement of the old total (1) must
    // not mark the new window's 1 as written.
    ins.admit('acme', WS, T + 1000);
    ins.acknowledge(old, T + 1001);
    assert.deepEqual(
      ins.owed(WS, T + 1001)!.map((d) => [d.key, d.total]),
      [
        [WS[0]!.key, 1],
        [WS[1]!.key, 2],
      ],
    );
  });
});

describe('Insurance: stays and caps', () => {
  test('a stay lasts until the shortest window ends, or until Redis acknowledged a debt of it', () => {
    const ins = new Insurance(2);
    ins.admit('acme', WS, T);
    assert.equal(ins.onStay('acme', WS, T + 999), true);
    assert.equal(ins.onStay('acme', WS, T + 1000), false, 'the 1 s window has ended');
    ins.admit('acme', WS, T + 2000);
    assert.equal(ins.onStay('acme', WS, T + 2100), true);
    ins.acknowledge(ins.owed(WS, T + 2100)!, T + 2100);
    assert.equal(ins.onStay('acme', WS, T + 2100), false, 'Redis answered');
    assert.equal(ins.onStay('other', WS, T + 2100), false, 'never fell back');
  });

  test('for CAP_MS after a stay, requests through Redis must fit the share; then only Redis decides', () => {
    const ins = new Insurance(2);
    const long = [WS[1]!];
    for (let i = 0; i < 20; i++) assert.equal(ins.admit('acme', long, T).allowed, true);
    ins.acknowledge(ins.owed(long, T + 10)!, T + 10);
    assert.equal(ins.onStay('acme', long, T + 10), false);
    // The share (20) is used: Redis is not even asked.
    const refused = ins.reserve(long, T + 10);
    assert.deepEqual([refused?.allowed, refused?.refusedBy, refused?.windows[0]!.remaining], [false, 0, 0]);
    assert.notEqual(ins.reserve(long, T + 10 + CAP_MS - 1), null);
    assert.equal(ins.reserve(long, T + 10 + CAP_MS), null, 'caps over: Redis alone decides');
  });

  test('a stay that is never looked at again still caps its windows for CAP_MS after it ends', () => {
    const ins = new Insurance(2);
    const long = [WS[1]!];
    for (let i = 0; i < 20; i++) ins.admit('acme', long, T);
    // The stay ends with its window (60 s): no request came to end it.
    assert.notEqual(ins.reserve(long, T + 59_999), null);
  });

  test("caps apply to another subject sharing the company's counters", () => {
    const ins = new Insurance(2);
    const keyOwn = [WS[1]!, { key: 'rl:{acme}:k:k1:60', points: 100, duration: 60 }];
    for (let i = 0; i < 20; i++) ins.admit('acme\nk1', keyOwn, T);
    // 'acme' (another key, no own limits) never fell back, but the company's window is capped.
    assert.equal(ins.onStay('acme', [WS[1]!], T + 10), false);
    assert.notEqual(ins.reserve([WS[1]!], T + 10), null);
  });

  test('caps refuse while the share is used and count nothing; a capped request that fits is counted', () => {
    const ins = new Insurance(2);
    const long = [WS[1]!];
    for (let i = 0; i < 19; i++) ins.admit('acme', long, T);
    ins.onStay('acme', long, T + 60_000 - 1); // still on its stay
    ins.acknowledge(ins.owed(long, T + 1)!, T + 1);
    assert.equal(ins.onStay('acme', long, T + 2), false);
    assert.equal(ins.reserve(long, T + 2), null, 'the 20th');
    assert.notEqual(ins.reserve(long, T + 2), null, 'the 21st');
    ins.release(long); // Redis refused the 20th
    assert.equal(ins.reserve(long, T + 2), null);
  });
});

describe('Insurance: sizing and memory', () => {
  test('insurancePoints: floor of the share, never more than the limit in all, 0 past one per instance', () => {
    assert.equal(insurancePoints(600, 1), 600);
    assert.equal(insurancePoints(600, 2), 300);
    assert.equal(insurancePoints(600, 7), 85);
    assert.ok(7 * insurancePoints(600, 7) <= 600);
    assert.equal(insurancePoints(3, 4), 0);
    assert.equal(insurancePoints(10, 0), 10, 'instances below 1 count as 1');
    assert.equal(insurancePoints(10, 2.9), 5, 'a fractional count is floored');
    const ins = new Insurance(4);
    assert.equal(ins.admit('tiny', [{ key: 'rl:{tiny}:c60', points: 3, duration: 60 }], T).allowed, false);
  });

  test('a full table of stays is swept of ended ones only: a flood of others never ends a live stay', () => {
    const ins = new Insurance(2, 100_000, 3);
    const w = (key: string, duration: number) => [{ key, points: 4, duration }];
    ins.admit('long', w('long', 60), T);
    for (let i = 0; i < 50; i++) ins.admit(`short-${i}`, w(`short-${i}`, 1), T + i * 1000);
    // Sweeps ran (three stays held, a second apart): every ended stay went, the live one stayed.
    assert.equal(ins.onStay('long', w('long', 60), T + 50_000), true);
    assert.equal(ins.onStay('short-49', w('short-49', 1), T + 49_500), true);
    assert.equal(ins.onStay('long', w('long', 60), T + 60_000), false);
  });

  test('a full table is swept of ended windows at most once a second; live ones keep their counts', () => {
    const ins = new Insurance(2, 2);
    const w = (key: string, duration: number) => [{ key, points: 4, duration }];
    ins.admit('a', w('a', 1), T); // ends at T + 1000, capped until T + 3000
    ins.admit('b', w('b', 60), T);
    ins.admit('c', w('c', 60), T + 2500); // full: swept at T + 2500, a is still capped
    assert.equal(ins.size, 3);
    ins.admit('d', w('d', 60), T + 3100);
    assert.equal(ins.size, 4, 'a is over, but the last sweep was 600 ms ago');
    ins.admit('e', w('e', 60), T + 3500);
    assert.equal(ins.size, 4, 'a is swept');
    // b kept its count (share 2): one more, then full.
    assert.deepEqual(
      [ins.admit('b', w('b', 60), T + 3500).allowed, ins.admit('b', w('b', 60), T + 3500).allowed],
      [true, false],
    );
  });
});
