import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { generateApiKey } from '../../../src/auth/api-key.js';
import { DEFAULT_METHOD_OVERRIDE_PARAMS, DEFAULT_URL_KEY_PARAMS } from '../../../src/config/schema.js';
import type { GuardLevel } from '../../../src/guards/key-material.js';
import { createUrlKeyGuard } from '../../../src/guards/url-key-guard.js';
import { propertyRuns, underMutation } from '../../helpers/mutation.js';

const guardAt = (level: GuardLevel, maxParams = 256, maxPathSegments = 128) =>
  createUrlKeyGuard({
    paramNames: DEFAULT_URL_KEY_PARAMS,
    overrideNames: DEFAULT_METHOD_OVERRIDE_PARAMS,
    maxParams,
    maxPathSegments,
    level,
  });
const check = guardAt('default');
const strict = guardAt('strict');
const k = generateApiKey('live');
const body = k.slice(8);
const pct = (s: string) => [...s].map((c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join('');

describe('URL key guard, both levels: key-named parameters, key shapes, overrides', () => {
  for (const [level, guard] of [
    ['default', check],
    ['strict', strict],
  ] as const) {
    test(`${level}: key-like names in any case, separator or %-encoding (also twice), query or matrix`, () => {
      for (const url of [
        '/a?api_key=1',
        '/a?API_KEY=1',
        '/a?Api-Key=1',
        '/a?apikey=1',
        '/a?api%5Fkey=1',
        '/a?%2561pi_key=1',
        '/a?x-api-key=1',
        '/a?key',
        '/a?token=',
        '/a?x=1;api_key=2',
        '/a?api.key=1',
        '/a;api_key=1',
        '/a;v=1;API-KEY=1/b',
        '/a%3Bapi_key=1',
        '/a?api_%E2%84%AAey=1', // the Kelvin sign lowercases to k
      ])
        assert.equal(guard(url).found, true, url);
    });

    test(`${level}: key shapes anywhere, any case, %-encoded once or twice; the value is the candidate`, () => {
      for (const url of [`/a?q=${k}`, `/a/${k}`, `/a?${k}`, `/a?q=${pct(pct(k))}`, `/a?q=x${k}y`]) {
        const r = guard(url);
        assert.ok(r.found && r.candidates.includes(k), url);
      }
      assert.deepEqual(guard(`/a?q=NK_LIVE_${body}`).candidates, [k], 'prefix lowercased');
      assert.deepEqual(guard('/a?api_key=a+b').candidates, ['a b'], '+ is a space in a key-named value');
    });

    test(`${level}: ordinary URLs pass`, () => {
      for (const url of [
        '/notify/v1/otps',
        '/notify/v1/otps?page=2&sort=desc',
        '/a?monkey=1',
        '/a?keys=1',
        '/a?identifier=nk_live_short',
        '/a?to=%2B4915112345678&text=%u0048i',
        `/a?q=nk_1abc_${'A1b2C3d4E5'.repeat(3)}abcdefgh`,
      ])
        assert.equal(guard(url).found, false, url);
    });

    test(`${level}: method overrides as PHP, Rack and qs read query names; "method" is not one`, () => {
      for (const q of [
        '_method',
        '%20_method',
        '+_method',
        '.method',
        '_method[]',
        '[_method]',
        '%09_method',
        '+_METHOD',
        'X-HTTP-Method-Override',
      ])
        assert.equal(guard(`/a?${q}=DELETE`).methodOverride, true, q);
      for (const q of ['method', '+method', '%20method', '_page', 'x_method'])
        assert.equal(guard(`/a?${q}=DELETE`).methodOverride, false, q);
      assert.equal(guard('/a;_method=PUT').methodOverride, true, 'a matrix parameter');
    });

    test(`${level}: escapes past 8 rounds, or past the budget, are undecided and count as found`, () => {
      let deep = 'a';
      for (let i = 0; i < 9; i++) deep = `%${'25'.repeat(i)}61`;
      const r = guard(`/a?q=${deep}`);
      assert.equal(r.found && r.undecided, true);
      // 2 characters decoded per URL character, plus 2048.
      assert.equal(guard(`/a?q=%252541${'x'.repeat(2033)}`).found, false);
      assert.equal(guard(`/a?q=%252541${'x'.repeat(2034)}`).undecided, true);
    });
  }
});

describe('URL key guard: the caps (invariant 8)', () => {
  const small = createUrlKeyGuard({
    paramNames: DEFAULT_URL_KEY_PARAMS,
    overrideNames: [],
    maxParams: 4,
    maxPathSegments: 3,
    level: 'default',
  });
  test('past maxParams or maxPathSegments: overLimit; a key shape is still found, as sent', () => {
    assert.equal(small('/a?p=1&p=2&p=3&p=4').overLimit, false);
    assert.equal(small('/a?p=1&p=2&p=3&p=4&p=5').overLimit, true);
    assert.equal(small('/a?&&&&&').overLimit, true, 'empty pieces count');
    assert.equal(small('/a;x;y;z/b;c;d?q=1').overLimit, true);
    const past = small('/a?p&p&p&p&api_key=legacy-key-value');
    assert.deepEqual([past.found, past.overLimit], [false, true], 'a key name past the cap is not read');
    const shape = small(`/a?p&p&p&p&q=${k}`);
    assert.deepEqual([shape.found, shape.overLimit, shape.candidates], [true, true, [k]]);
    assert.equal(small('/a/b/c').overLimit, false);
    assert.equal(small('/a/b/c/d').overLimit, true);
    assert.deepEqual(small(`/a/b/c/${k}`).candidates, [k]);
  });
  test('the default caps: 256 parameters, 128 segments', () => {
    assert.equal(check('/a?' + 'p=1&'.repeat(255) + 'p=1').overLimit, false);
    assert.equal(check('/a?' + 'p=1&'.repeat(256) + 'p=1').overLimit, true);
    assert.equal(check('/a'.repeat(128)).overLimit, false);
    assert.equal(check('/a'.repeat(129)).overLimit, true);
  });

  test('property: never throws, at either level, on hostile input', () => {
    const piece = fc.constantFrom(
      'api_key',
      '%2561pi_key',
      k,
      pct(k),
      'nk_',
      '%',
      '%25',
      '%zz',
      '=',
      '&',
      ';',
      '/',
      '+',
      '%FF',
      'é',
      '?',
    );
    fc.assert(
      fc.property(
        fc.array(fc.oneof(piece, fc.string({ unit: 'binary', maxLength: 4 })), { maxLength: 200 }),
        (ps) => {
          check('/' + ps.join(''));
          strict('/a?' + ps.join(''));
        },
      ),
      { numRuns: propertyRuns(1000) },
    );
  });

  test(
    '16 KB of the worst shapes cost about as much as a benign URL of the same size, at both levels',
    { skip: underMutation && 'CPU time of instrumented code' },
    () => {
      const fill = (prefix: string, unit: string) =>
        prefix + unit.repeat(Math.floor((16_000 - prefix.length) / unit.length));
      for (const guard of [check, strict]) {
        const cost = (u: string) => {
          for (let i = 0; i < 5; i++) guard(u);
          const t = process.cpuUsage();
          for (let i = 0; i < 20; i++) guard(u);
          const d = process.cpuUsage(t);
          return d.user + d.system;
        };
        const base = Math.max(cost(fill('/a?q=', 'a')), cost(fill('/a/', 'a')), 1000);
        for (const unit of ['%', '%&', '%25', '%25252541&', ';', '&', '=', 'nk_live_&', '%C3%A9', 'é'])
          for (const prefix of ['/a?', '/a;', '/a/']) {
            const u = fill(prefix, unit);
            // Generous: a shared machine; test/scale/pre-auth-cost.test.ts holds the 3× line.
            assert.ok(cost(u) < 40 * base, `${prefix}${unit}…`);
          }
      }
    },
  );
});

describe('URL key guard, strict level: what only it reads', () => {
  const other = generateApiKey('test');
  const CASES: [string, string][] = [
    ['a bare body', `/a/${body}`],
    ['a bare body with separators', `/a/${body.split('').join('.')}`],
    ['a bare body over two segments', `/a/${body.slice(0, 19)}/${body.slice(19)}`],
    ['a key with - between characters', `/a/${k.split('').join('-')}`],
    ['base64url', `/a/${Buffer.from(k).toString('base64url')}`],
    ['base64, %-encoded', `/a?c=${encodeURIComponent(Buffer.from(`u:${k}`).toString('base64'))}`],
    ['hex', `/a?h=${Buffer.from(k).toString('hex')}`],
    [
      '%u escapes',
      `/a?q=${[...k].map((c) => '%u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join('')}`,
    ],
    ['a key shape split over two parameters', `/a?a=${other.slice(0, 20)}&b=${other.slice(20)}`],
    ['a body split over parameters', `/a?${[...other.slice(8)].map((c, i) => `p${i}=${c}`).join('&')}`],
  ];
  for (const [label, url] of CASES)
    test(label, () => {
      assert.equal(check(url).found, false, `default: ${label} is left to the strict level`);
      const r = strict(url);
      assert.ok(r.found && r.candidates.length > 0, label);
    });
  test('no false positives: UUIDs, digests, long tokens', () => {
    const token = Buffer.from(Array.from({ length: 96 }, (_, i) => (i * 37 + 11) & 0xff)).toString(
      'base64url',
    );
    for (const url of [
      '/a/123e4567-e89b-12d3-a456-426614174000',
      '/a/e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      `/a?cursor=${token}`,
    ])
      assert.equal(strict(url).found, false, url);
  });
});
