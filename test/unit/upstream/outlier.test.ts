import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { OutlierDetector, type OutlierState } from '../../../src/upstream/outlier.js';

const state = (): OutlierState => ({ consecutiveFailures: 0, ejectedUntil: 0, ejections: 0 });
const opts = { consecutiveFailures: 3, baseEjectionMs: 1000, maxEjectionMs: 3000, maxEjectedPercent: 50 };

describe('OutlierDetector', () => {
  test('ejects after N failures in a row, for a time that grows up to the cap', () => {
    const d = new OutlierDetector(opts);
    const t = state();
    const all = [t, state(), state()];
    let now = 10_000;
    assert.equal(d.onFailure(t, all, now), false);
    d.onSuccess(t);
    assert.equal(d.onFailure(t, all, now), false);
    assert.equal(d.onFailure(t, all, now), false);
    assert.equal(d.onFailure(t, all, now), true);
    assert.equal(t.ejectedUntil, now + 1000);
    now += 1000;
    for (let i = 0; i < 2; i++) d.onFailure(t, all, now);
    assert.equal(d.onFailure(t, all, now), true);
    assert.equal(t.ejectedUntil, now + 2000);
    now += 2000;
    for (let i = 0; i < 2; i++) d.onFailure(t, all, now);
    d.onFailure(t, all, now);
    assert.equal(t.ejectedUntil, now + 3000, 'capped');
    now += 3000 + 3001;
    for (let i = 0; i < 3; i++) d.onFailure(t, all, now);
    assert.equal(t.ejectedUntil, now + 1000, 'well for longer than the cap: from the base again');
  });

  test('never ejects more than the share allowed (but one when none is out)', () => {
    const d = new OutlierDetector(opts);
    const all = [state(), state(), state()];
    const now = 5000;
    for (const t of all) for (let i = 0; i < 3; i++) d.onFailure(t, all, now);
    assert.equal(all.filter((t) => t.ejectedUntil > now).length, 1, '50 % of 3: one');
    const none = new OutlierDetector({ ...opts, maxEjectedPercent: 0 });
    const t = state();
    for (let i = 0; i < 5; i++) none.onFailure(t, [t], now);
    assert.equal(t.ejectedUntil, 0);
  });
});
