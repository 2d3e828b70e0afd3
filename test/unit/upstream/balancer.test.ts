import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createBalancer, type Balanced } from '../../../src/upstream/balancer.js';

const targets = (...weights: number[]): Balanced[] =>
  weights.map((weight, i) => ({ id: `http://10.0.0.${i + 1}:80/`, weight, inFlight: 0, current: 0 }));

describe('createBalancer', () => {
  test('round-robin is smooth and exact to the weights', () => {
    const ts = targets(5, 1, 1);
    const pick = createBalancer('round-robin');
    const seq = Array.from({ length: 7 }, () => ts.indexOf(pick(ts, 'c')));
    assert.deepEqual(seq, [0, 0, 1, 0, 2, 0, 0]);
    const counts = [0, 0, 0];
    for (let i = 0; i < 700; i++) counts[ts.indexOf(pick(ts, 'c'))]!++;
    assert.deepEqual(counts, [500, 100, 100]);
  });

  test('round-robin over a subset (a target excluded) keeps going', () => {
    const ts = targets(1, 1, 1);
    const pick = createBalancer('round-robin');
    const sub = [ts[0]!, ts[2]!];
    const seq = Array.from({ length: 4 }, () => ts.indexOf(pick(sub, 'c')));
    assert.deepEqual(seq.sort(), [0, 0, 2, 2]);
  });

  test('least-requests takes the fewest in flight, ties at random', () => {
    const ts = targets(1, 1, 1);
    ts[0]!.inFlight = 3;
    ts[1]!.inFlight = 1;
    ts[2]!.inFlight = 1;
    let r = 0.9;
    const pick = createBalancer('least-requests', () => r);
    assert.equal(pick(ts, 'c'), ts[1]);
    r = 0.1;
    assert.equal(pick(ts, 'c'), ts[2]);
    ts[2]!.inFlight = 5;
    assert.equal(pick(ts, 'c'), ts[1]);
  });

  test('company-hash keeps a company on one target and moves about 1/N when one leaves', () => {
    const ts = targets(1, 1, 1, 1);
    const pick = createBalancer('company-hash');
    const companies = Array.from({ length: 4000 }, (_, i) => `company-${i}`);
    const before = new Map(companies.map((c) => [c, pick(ts, c)]));
    for (const c of companies.slice(0, 50)) assert.equal(pick(ts, c), before.get(c));
    const counts = ts.map((t) => companies.filter((c) => before.get(c) === t).length);
    for (const n of counts) assert.ok(n > 800 && n < 1200, `spread ${counts.join(',')}`);
    const left = ts.slice(1);
    const moved = companies.filter((c) => pick(left, c) !== before.get(c));
    // Exactly the companies of the target that left move, none other.
    assert.equal(moved.length, counts[0]);
    assert.ok(moved.every((c) => before.get(c) === ts[0]));
  });

  test('company-hash follows the weights', () => {
    const ts = targets(3, 1);
    const pick = createBalancer('company-hash');
    let first = 0;
    for (let i = 0; i < 4000; i++) if (pick(ts, `c${i}`) === ts[0]) first++;
    assert.ok(first > 2800 && first < 3200, String(first));
  });
});
