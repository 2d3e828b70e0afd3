import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RetryBudget } from '../../../src/upstream/retry-budget.js';

describe('RetryBudget', () => {
  test('retries are at most ratio × requests plus the floor over ten seconds', () => {
    let now = 1_000_000;
    const budget = new RetryBudget({ ratio: 0.2, minPerSecond: 1, now: () => now });
    for (let i = 0; i < 100; i++) budget.onRequest();
    let granted = 0;
    for (let i = 0; i < 100; i++) if (budget.tryRetry()) granted++;
    assert.equal(granted, 20 + 10);
    now += 5_000;
    assert.equal(budget.tryRetry(), false, 'still within the window');
    now += 6_000;
    let later = 0;
    for (let i = 0; i < 100; i++) if (budget.tryRetry()) later++;
    assert.equal(later, 10, 'the window passed: only the floor');
  });

  test('a zero budget refuses every retry', () => {
    const budget = new RetryBudget({ ratio: 0, minPerSecond: 0, now: () => 0 });
    budget.onRequest();
    assert.equal(budget.tryRetry(), false);
  });
});
