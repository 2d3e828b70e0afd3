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
