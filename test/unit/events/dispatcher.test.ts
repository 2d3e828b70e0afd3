import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { backoffDelay } from '../../../src/events/dispatcher.js';

describe('backoffDelay', () => {
  const d = { backoffMs: 10_000, maxBackoffMs: 7_200_000 };

  test('doubles per failure in its upper half (equal jitter), capped at maxBackoffMs', () => {
    assert.equal(backoffDelay(1, d, 0), 5000);
    assert.equal(backoffDelay(1, d, 0.999999), 10_000);
    assert.equal(backoffDelay(2, d, 0), 10_000);
    assert.equal(backoffDelay(4, d, 0.5), 60_000);
    assert.equal(backoffDelay(30, d, 1), 7_200_000);
    assert.equal(backoffDelay(1000, d, 0), 3_600_000);
  });

  test('for any attempt and draw: within [full/2, full] and never over the cap; Retry-After honoured up to the cap', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (n, r) => {
          const full = Math.min(d.maxBackoffMs, d.backoffMs * 2 ** (n - 1));
          const v = backoffDelay(n, d, r);
          return v >= Math.floor(full / 2) && v <= full && v <= d.maxBackoffMs;
        },
      ),
    );
    assert.equal(backoffDelay(1, d, 0, 120_000), 120_000);
    assert.equal(backoffDelay(1, d, 0, 86_400_000), 7_200_000);
    assert.equal(backoffDelay(5, d, 1 - 1e-9, 1000), 160_000);
  });
});
