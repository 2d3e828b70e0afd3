import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryWindowLimiter } from '../../../src/ratelimit/memory-windows.js';

describe('MemoryWindowLimiter', () => {
  const ws = [
    { key: 'a:1', points: 2, duration: 1 },
    { key: 'a:60', points: 3, duration: 60 },
  ];
  test('every window counts; a refusal by one consumes none of the others', () => {
    const m = new MemoryWindowLimiter();
    const t = 1_000_000;
    assert.deepEqual([m.consume(ws, t).allowed, m.consume(ws, t).allowed], [true, true]);
    const third = m.consume(ws, t + 10);
    assert.deepEqual([third.allowed, third.refusedBy], [false, 0]);
    assert.equal(third.windows[1]!.remaining, 1, 'the 60 s window still has 1: the refusal took none');
    const next = m.consume(ws, t + 1000); // the 1 s window starts again
    assert.equal(next.allowed, true);
    const full = m.consume(ws, t + 1001);
    assert.deepEqual([full.allowed, full.refusedBy], [false, 1]);
    assert.equal(full.windows[1]!.msBeforeReset, 60_000 - 1001);
  });
  test('when several windows are full, the one that resets last refuses', () => {
    const m = new MemoryWindowLimiter();
    const one = [
      { key: 'b:1', points: 1, duration: 1 },
      { key: 'b:60', points: 1, duration: 60 },
    ];
    m.consume(one, 0);
    assert.equal(m.consume(one, 1).refusedBy, 1);
  });
  test('ended windows are swept when the table is full', () => {
    const m = new MemoryWindowLimiter(2);
    m.consume([{ key: 'x', points: 1, duration: 1 }], 0);
    m.consume([{ key: 'y', points: 1, duration: 1 }], 0);
    // Both ended: swept, and counted afresh.
    assert.equal(m.consume([{ key: 'x', points: 1, duration: 1 }], 5000).allowed, true);
  });
});

describe('MemoryWindowLimiter: which window refuses, and the sweep', () => {
  test('of several full windows the one that resets last refuses, wherever it is in the list', () => {
    const m = new MemoryWindowLimiter();
    const longFirst = [
      { key: 'c:60', points: 1, duration: 60 },
      { key: 'c:1', points: 1, duration: 1 },
    ];
    assert.equal(m.consume(longFirst, 0).allowed, true);
    const d = m.consume(longFirst, 10);
    assert.deepEqual([d.allowed, d.refusedBy], [false, 0]);
    assert.deepEqual(
      d.windows.map((w) => [w.remaining, w.msBeforeReset]),
      [
        [0, 59_990],
        [0, 990],
      ],
    );
  });

  test('of full windows ending at the same time the first in the list refuses', () => {
    const m = new MemoryWindowLimiter();
    const same = [
      { key: 'd:company:60', points: 1, duration: 60 },
      { key: 'd:key:60', points: 1, duration: 60 },
    ];
    m.consume(same, 0);
    assert.equal(m.consume(same, 5).refusedBy, 0);
  });

  test('a window with room never refuses, even when it resets later than the full one', () => {
    const m = new MemoryWindowLimiter();
    const ws = [
      { key: 'e:1', points: 1, duration: 1 },
      { key: 'e:60', points: 5, duration: 60 },
    ];
    m.consume(ws, 0);
    const d = m.consume(ws, 1);
    assert.deepEqual([d.allowed, d.refusedBy], [false, 0]);
    assert.equal(d.windows[1]!.remaining, 4, 'the refusal took nothing from the 60 s window');
  });

  // The table is swept only once it holds `maxCounters` entries; a sweep drops the ended counters
  // (an end equal to now has ended) and keeps every live one.
  test('no sweep below maxCounters; at maxCounters ended counters go, live ones stay', () => {
    const m = new MemoryWindowLimiter(3);
    const count = (key: string, duration: number, now: number) =>
      void m.consume([{ key, points: 1, duration }], now);
    count('x', 1, 0); // ends at 1000
    count('y', 2, 0); // ends at 2000
    assert.equal(m.size, 2);
    count('z', 60, 1000); // 2 < 3 held: x has ended but is not swept yet
    assert.equal(m.size, 3);
    count('w', 60, 1000); // 3 held: x (ended exactly now) is swept, y and z are live
    assert.equal(m.size, 3);
    // y survived the sweep with its count: still full until 2000.
    assert.equal(m.consume([{ key: 'y', points: 1, duration: 2 }], 1999).allowed, false);
    assert.equal(m.consume([{ key: 'y', points: 1, duration: 2 }], 2000).allowed, true);
  });
});

describe('MemoryWindowLimiter: a table full of live windows', () => {
  test('is swept at most once a second, so a request never pays a pass over it each time', () => {
    const m = new MemoryWindowLimiter(2);
    const count = (key: string, duration: number, now: number) =>
      void m.consume([{ key, points: 5, duration }], now);
    count('e', 1, 0); // ends at 1000
    count('f', 60, 0);
    count('g', 60, 500); // full: swept at 500, nothing had ended
    assert.equal(m.size, 3);
    count('h', 60, 1100); // e has ended, but the last sweep was 600 ms ago: kept
    assert.equal(m.size, 4);
    count('i', 60, 1500); // a second after the last sweep: e goes
    assert.equal(m.size, 4);
    // The live windows kept their counts through both sweeps.
    for (let i = 0; i < 4; i++) count('f', 60, 1500);
    assert.equal(m.consume([{ key: 'f', points: 5, duration: 60 }], 1500).allowed, false);
  });
});
