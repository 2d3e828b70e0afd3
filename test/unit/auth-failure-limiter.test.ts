import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AuthFailureLimiter } from '../../src/ratelimit/tier-limiter.js';

describe('AuthFailureLimiter (per process, per address)', () => {
  test('reserve takes exactly `points` slots per window, then answers the seconds left', () => {
    const l = new AuthFailureLimiter({ points: 3, duration: 60 });
    const t0 = 1_000_000;
    assert.deepEqual(
      [0, 1, 2, 3, 4].map(() => l.reserve('a', t0)),
      [0, 0, 0, 60, 60],
    );
    assert.equal(l.reserve('a', t0 + 30_500), 30, 'rounded up');
    assert.equal(l.reserve('b', t0), 0, 'another address has its own budget');
    assert.equal(l.reserve('a', t0 + 60_000), 0, 'a new window starts from zero');
  });

  test('release gives a reserved slot back; refused reservations took nothing', () => {
    const l = new AuthFailureLimiter({ points: 2, duration: 60 });
    const t0 = 5_000;
    assert.equal(l.reserve('a', t0), 0);
    assert.equal(l.reserve('a', t0), 0);
    for (let i = 0; i < 10; i++) assert.ok(l.reserve('a', t0) > 0);
    l.release('a', t0);
    assert.equal(l.reserve('a', t0), 0, 'one slot again, however many were refused');
    assert.ok(l.reserve('a', t0) > 0);
    l.release('nobody', t0);
    l.release('a', t0 + 60_000);
    assert.equal(l.reserve('nobody', t0), 0);
  });

  test('blockedFor reads without taking; recordFailure counts without a reservation', async () => {
    const l = new AuthFailureLimiter({ points: 2, duration: 10 });
    assert.equal(await l.blockedFor('a', 0), 0);
    await l.recordFailure('a', 0);
    assert.equal(await l.blockedFor('a', 0), 0);
    await l.recordFailure('a', 0);
    assert.equal(await l.blockedFor('a', 0), 10);
    assert.equal(await l.blockedFor('a', 10_000), 0, 'the window is over');
  });

  test('an address that keeps failing is not evicted by a flood of other addresses', () => {
    const l = new AuthFailureLimiter({ points: 1, duration: 60, maxAddresses: 100 });
    assert.equal(l.reserve('attacker', 0), 0);
    for (let i = 0; i < 1000; i++) {
      l.reserve(`other-${i}`, 0);
      assert.ok(l.reserve('attacker', 0) > 0, `attacker unblocked after ${i} other addresses`);
    }
  });

  test('invalid options throw', () => {
    assert.throws(() => new AuthFailureLimiter({ points: 0, duration: 60 }), /points/);
    assert.throws(() => new AuthFailureLimiter({ points: 1, duration: 0 }), /duration/);
  });
});
