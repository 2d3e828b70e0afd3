import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { boundedLru } from '../../../src/auth/lru.js';

describe('boundedLru', () => {
  test('holds at most max entries and evicts the least recently used', () => {
    const c = boundedLru<string, number>(3);
    for (const k of ['a', 'b', 'c']) c.set(k, 1);
    assert.equal(c.get('a'), 1); // a is now the most recently used
    c.set('d', 1);
    assert.equal(c.size, 3);
    assert.equal(c.has('b'), false, 'b was the least recently used');
    assert.deepEqual([...c.keys()].sort(), ['a', 'c', 'd']);
    for (let i = 0; i < 1000; i++) c.set(`k${i}`, i);
    assert.equal(c.size, 3);
    assert.deepEqual([...c.keys()], ['k999', 'k998', 'k997']);
  });

  test('replacing an entry does not count it twice', () => {
    const c = boundedLru<string, number>(2);
    c.set('a', 1);
    c.set('a', 2);
    c.set('b', 1);
    assert.equal(c.size, 2);
    assert.equal(c.get('a'), 2);
  });
});
