import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { findScopeProblems, isUnder, scopeListSchema, windowListSchema } from '../../../src/config/limits.js';
import { tierSchema } from '../../../src/config/schema.js';

describe('windows and tiers', () => {
  test('a tier is windows, or points + duration as the one-window shorthand; not both, not half', () => {
    assert.deepEqual(tierSchema.parse({ name: 'a', points: 5, duration: 60 }), {
      name: 'a',
      windows: [{ points: 5, duration: 60 }],
    });
    const three = [
      { points: 10, duration: 1 },
      { points: 600, duration: 60 },
      { points: 100_000, duration: 86_400 },
    ];
    assert.deepEqual(tierSchema.parse({ name: 'b', windows: three }).windows, three);
    assert.equal(tierSchema.safeParse({ name: 'c', points: 5, duration: 60, windows: three }).success, false);
    assert.equal(tierSchema.safeParse({ name: 'd', points: 5 }).success, false);
    assert.equal(tierSchema.safeParse({ name: 'e', windows: [] }).success, false);
  });
  test('windows: whole positive numbers, at most 31 days, no two of one length', () => {
    assert.equal(windowListSchema.safeParse([{ points: 0, duration: 1 }]).success, false);
    assert.equal(windowListSchema.safeParse([{ points: 1, duration: 31 * 86_400 + 1 }]).success, false);
    assert.equal(windowListSchema.safeParse([{ points: 1.5, duration: 1 }]).success, false);
    const dup = windowListSchema.safeParse([
      { points: 1, duration: 60 },
      { points: 2, duration: 60 },
    ]);
    assert.equal(dup.success, false);
  });
});

describe('scopes', () => {
  const routes = [{ prefix: '/notify/v1' }, { prefix: '/media', methods: ['GET', 'POST'] }];
  test('null is every route; shape errors are refused by the schema', () => {
    assert.equal(scopeListSchema.parse(null), null);
    assert.equal(scopeListSchema.safeParse([{ route: 'notify' }]).success, false);
    assert.equal(scopeListSchema.safeParse([{ route: '/notify/v1', methods: ['get'] }]).success, false);
    assert.equal(scopeListSchema.safeParse([{ route: '/notify/v1', methods: ['CONNECT'] }]).success, false);
    assert.equal(scopeListSchema.safeParse([{ route: '/notify/v1', extra: 1 }]).success, false);
    assert.deepEqual(scopeListSchema.parse([{ route: '/notify/v1/' }]), [{ route: '/notify/v1' }]);
  });
  test('against the routes: a configured prefix, a method it forwards (GET implies HEAD), a path under it', () => {
    assert.deepEqual(findScopeProblems([{ route: '/media', methods: ['HEAD', 'GET'] }], routes), []);
    assert.deepEqual(findScopeProblems([{ route: '/nope' }], routes), [
      '0.route: not a configured route prefix (/notify/v1, /media)',
    ]);
    assert.deepEqual(findScopeProblems([{ route: '/media', methods: ['PUT'] }], routes), [
      '0.methods.0: the route does not forward PUT',
    ]);
    assert.deepEqual(findScopeProblems([{ route: '/notify/v1', paths: ['/notify/v10'] }], routes), [
      '0.paths.0: must be /notify/v1 or a path under it',
    ]);
  });
  test('isUnder: on a segment boundary (/ or ;)', () => {
    assert.equal(isUnder('/a/b', '/a'), true);
    assert.equal(isUnder('/a;x', '/a'), true);
    assert.equal(isUnder('/ab', '/a'), false);
    assert.equal(isUnder('/anything', '/'), true);
  });
});
