import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Bulkhead } from '../../../src/upstream/bulkhead.js';

describe('Bulkhead', () => {
  test('caps a company, leaves others alone, and frees on release (once)', () => {
    const b = new Bulkhead({ perCompany: 2 });
    const r1 = b.tryAcquire('a', 'k1')!;
    const r2 = b.tryAcquire('a', 'k2')!;
    assert.equal(b.tryAcquire('a', 'k3'), null);
    assert.notEqual(b.tryAcquire('b', 'k4'), null);
    r1();
    r1();
    assert.equal(b.inFlight('a'), 1);
    assert.notEqual(b.tryAcquire('a', 'k1'), null);
    r2();
  });

  test('caps a key within its company', () => {
    const b = new Bulkhead({ perCompany: 10, perKey: 1 });
    const r = b.tryAcquire('a', 'k1')!;
    assert.equal(b.tryAcquire('a', 'k1'), null);
    assert.equal(b.inFlight('a'), 1, 'a refused key takes nothing');
    assert.notEqual(b.tryAcquire('a', 'k2'), null);
    r();
    assert.notEqual(b.tryAcquire('a', 'k1'), null);
  });
});
