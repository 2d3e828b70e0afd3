import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  findScopeProblems,
  isReachablePathPrefix,
  isUnder,
  pathPrefixSchema,
  scopeListSchema,
  windowListSchema,
} from '../../../src/config/limits.js';
import { configSchema, tierSchema } from '../../../src/config/schema.js';
import { isSafeRequestPath } from '../../../src/proxy/routes.js';

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
  test('paths and routes no request path can reach are refused: empty and dot segments, escapes, backslash', () => {
    const unreachable = [
      '/notify/v1/../media',
      '/notify/v1/./otps',
      '/notify/v1/..',
      '/notify/v1/.',
      '/notify/v1/...',
      '/./notify',
      '/..',
      '/notify/v1//otps',
      '//notify',
      '//',
      '/notify/v1/otps//',
      '/notify/v1/%2e%2e/media',
      '/notify/v1/%2E',
      '/notify/v1/otps%2fx',
      '/notify/v1/%252e%252e',
      '/notify/v1\\..\\media',
      '/notify/v1;x',
      '/notify/v1/ｏtps',
      '/notify/v1/\u2025',
      'notify/v1',
      '',
    ];
    for (const p of unreachable) {
      const r = pathPrefixSchema.safeParse(p);
      assert.equal(r.success, false, p);
      assert.equal(scopeListSchema.safeParse([{ route: '/notify/v1', paths: [p] }]).success, false, p);
      assert.equal(scopeListSchema.safeParse([{ route: p }]).success, false, p);
      const config = configSchema.safeParse({ routes: [{ prefix: p, target: 'http://x:1' }] });
      assert.equal(config.success, false, p);
      assert.deepEqual(config.error?.issues[0]?.path, ['routes', 0, 'prefix'], p);
    }
    const reachable = [
      '/',
      '/notify/v1',
      '/notify/v1/',
      '/notify/v1/otps.v2',
      '/.well-known',
      '/a..b',
      '/a/..b',
      '/a/b.',
      '/~x',
    ];
    for (const p of reachable) assert.equal(pathPrefixSchema.safeParse(p).success, true, p);
    // The same rule as the gateway's request check, for every path the schema's characters can spell.
    for (const p of [...unreachable, ...reachable]) {
      const plain = /^\/[A-Za-z0-9._~\-/]*$/.test(p);
      const stored = p.length > 1 ? p.replace(/\/$/, '') : p;
      assert.equal(
        plain && isReachablePathPrefix(p),
        plain && isSafeRequestPath(p) && isSafeRequestPath(stored),
        p,
      );
    }
    const alphabet = ['/', '.', 'a'];
    const spell = (n: number): string[] =>
      n === 0 ? [''] : spell(n - 1).flatMap((s) => alphabet.map((c) => s + c));
    for (let n = 1; n <= 6; n++)
      for (const tail of spell(n)) {
        const p = `/${tail}`;
        assert.equal(isReachablePathPrefix(p), isSafeRequestPath(p), p);
      }
  });
  test('isUnder: on a segment boundary (/ or ;)', () => {
    assert.equal(isUnder('/a/b', '/a'), true);
    assert.equal(isUnder('/a;x', '/a'), true);
    assert.equal(isUnder('/ab', '/a'), false);
    assert.equal(isUnder('/anything', '/'), true);
  });
});
