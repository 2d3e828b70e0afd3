import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AuthFailureLimiter } from '../../src/ratelimit/tier-limiter.js';

describe('AuthFailureLimiter (per process, per address)', () => {
  test('tryRecordFailure counts exactly `points` failures per window, then answers the seconds left', () => {
    const l = new AuthFailureLimiter({ points: 3, duration: 60 });
    const t0 = 1_000_000;
    assert.deepEqual(
      [0, 1, 2, 3, 4].map(() => l.tryRecordFailure('a', t0)),
      [0, 0, 0, 60, 60],
    );
    assert.equal(l.tryRecordFailure('a', t0 + 30_500), 30, 'rounded up');
    assert.equal(l.tryRecordFailure('b', t0), 0, 'another address has its own budget');
    assert.equal(l.tryRecordFailure('a', t0 + 60_000), 0, 'a new window starts from zero');
  });

  test('blockedFor reads without counting; refused attempts counted nothing', () => {
    const l = new AuthFailureLimiter({ points: 2, duration: 10 });
    assert.equal(l.blockedFor('a', 0), 0);
    assert.equal(l.tryRecordFailure('a', 0), 0);
    assert.equal(l.blockedFor('a', 0), 0);
    assert.equal(l.blockedFor('a', 0), 0, 'reading twice counts nothing');
    assert.equal(l.tryRecordFailure('a', 0), 0);
    assert.equal(l.blockedFor('a', 0), 10);
    for (let i = 0; i < 5; i++) assert.equal(l.tryRecordFailure('a', 1000), 9);
    assert.equal(l.blockedFor('a', 10_000), 0, 'the window is over');
    assert.equal(l.tryRecordFailure('a', 10_000), 0);
    assert.equal(l.tryRecordFailure('a', 10_000), 0, 'refused attempts did not carry over');
  });

  test('recordFailure counts whatever the budget', () => {
    const l = new AuthFailureLimiter({ points: 1, duration: 60 });
    l.recordFailure('a', 0);
    l.recordFailure('a', 0);
    assert.equal(l.blockedFor('a', 0), 60);
  });

  test('an address that keeps failing is not evicted by a flood of other addresses', () => {
    const l = new AuthFailureLimiter({ points: 1, duration: 60, maxAddresses: 100 });
    assert.equal(l.tryRecordFailure('attacker', 0), 0);
    for (let i = 0; i < 1000; i++) {
      l.tryRecordFailure(`other-${i}`, 0);
      assert.ok(l.tryRecordFailure('attacker', 0) > 0, `attacker unblocked after ${i} other addresses`);
    }
  });

  test('invalid options throw', () => {
    assert.throws(() => new AuthFailureLimiter({ points: 0, duration: 60 }), /points/);
    assert.throws(() => new AuthFailureLimiter({ points: 1, duration: 0 }), /duration/);
  });
});
