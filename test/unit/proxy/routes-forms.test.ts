import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { isSafeRequestPath } from '../../../src/proxy/routes.js';

/**
 * Attack report F6: segments that an upstream trimming trailing spaces, dots or tabs (Windows,
 * IIS) or applying NFKC resolves to `.` or `..`, and NFKC forms of `/` and `\`.
 */

const scoped = '/notify/v1/health/';
const pctUtf8 = (s: string) => [...Buffer.from(s, 'utf8')].map((b) => '%' + b.toString(16)).join('');
/** Raw bytes of a UTF-8 string as Node hands a request target over: one latin1 character per byte. */
const rawUtf8 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');

/** Every spelling the report found forwarded, and siblings. */
const REPORTED = [
  '..%20',
  '..%09',
  '.%20.',
  '...',
  '%2e%2e%2e',
  '%ef%bc%8e%ef%bc%8e',
  '%e2%80%a4%e2%80%a4',
  '..%ef%bc%8f',
  '..%ef%bc%bc',
];
const SIBLINGS = [
  '.%20',
  '%20..',
  '..%20%20%09.',
  '....',
  '..%0b',
  '..%0c',
  '..%c2%a0', // NBSP: NFKC makes it a space
  '..%e3%80%80', // ideographic space
  '%e2%80%a5', // two-dot leader: `..`
  '%e2%80%a6', // ellipsis: `...`
  '%ef%b9%92%ef%b9%92', // small full stop
  '%EF%BC%8E%EF%BC%8E',
  '%ef%bc%8e.',
  '..%ef%b9%a8', // small reverse solidus
  '%2e%2e%2520', // decoded twice: `.. `
  '%2e%2e%25ef%25bc%258f', // full-width `/` behind double encoding
  '%25ef%25bc%258e%25ef%25bc%258e',
  '..%2509',
];

describe('dot-like segments and Unicode separators (F6)', () => {
  for (const seg of [...REPORTED, ...SIBLINGS])
    test(`${seg} is refused, inside the path and at its end`, () => {
      assert.equal(isSafeRequestPath(`${scoped}${seg}/otps`), false);
      assert.equal(isSafeRequestPath(`${scoped}${seg}`), false);
      assert.equal(isSafeRequestPath(`${scoped}${seg};x/otps`), false);
    });

  test('the same as raw bytes (UTF-8 in the target, as Node hands it over)', () => {
    for (const s of ['．．', '‥', '…', '..／otps', '..＼otps', '\u2024\u2024'])
      assert.equal(isSafeRequestPath(`${scoped}${rawUtf8(s)}/otps`), false, s);
  });

  test('ordinary segments with dots, spaces and non-ASCII still pass', () => {
    for (const p of [
      '/notify/v1/a%20b',
      '/notify/v1/a.b%2ec',
      '/notify/v1/%2e%2ejson',
      '/notify/v1/.well-known/x',
      '/notify/v1/file.v2.json',
      '/notify/v1/..a',
      '/notify/v1/a..',
      '/notify/v1/a%20.',
      '/notify/v1/%20a',
      '/notify/v1/caf%c3%a9',
      '/notify/v1/caf%25C3%25A9',
      `/notify/v1/${pctUtf8('ｆｕｌｌ')}`,
      `/notify/v1/${pctUtf8('日本語')}/x`,
      `/notify/v1/${rawUtf8('naïve')}`,
      '/notify/v1/a%2520b',
      '/notify/v1/%20',
    ])
      assert.equal(isSafeRequestPath(p), true, p);
  });

  test('property: dots mixed with trailing spaces, tabs, dot look-alikes, in any escape, are refused', () => {
    const dot = fc.constantFrom('.', '%2e', '%2E', '%ef%bc%8e', '%e2%80%a4', '%ef%b9%92', '%252e');
    const trail = fc.constantFrom('%20', '%09', '.', '%2e', '%c2%a0', '%2520', '%e3%80%80');
    const end = fc.constantFrom('/otps', '', ';x', '%ef%bc%8fotps', '%ef%bc%bcotps', '/');
    fc.assert(
      fc.property(
        fc.array(dot, { minLength: 1, maxLength: 3 }),
        fc.array(trail, { maxLength: 3 }),
        end,
        (d, t, e) => {
          return !isSafeRequestPath(`${scoped}${d.join('')}${t.join('')}${e}`);
        },
      ),
      { numRuns: 2000 },
    );
  });

  test('property: a segment with a letter or digit among dots and spaces passes', () => {
    const piece = fc.constantFrom('.', '%20', '%2e', '%09', '%ef%bc%8e');
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 4 }),
        fc.stringMatching(/^[a-z0-9]{1,4}$/),
        fc.array(piece, { maxLength: 4 }),
        (before, name, after) =>
          isSafeRequestPath(`${scoped}${before.join('')}${name}${after.join('')}/otps`),
      ),
      { numRuns: 1000 },
    );
  });

  test('the cost stays linear: 16 KB of dots, spaces and full-width dots decide quickly', () => {
    for (const s of [
      '.'.repeat(16_000) + 'x',
      '.%20'.repeat(4000) + 'x',
      '%ef%bc%8e'.repeat(1800) + 'x',
      '/.'.repeat(8000) + 'x',
    ]) {
      const t0 = process.hrtime.bigint();
      isSafeRequestPath(`/notify/v1/${s}`);
      // A generous bound against quadratic blow-up (16 K² steps take seconds), not a timing test.
      assert.ok(process.hrtime.bigint() - t0 < 500_000_000n, s.slice(0, 12));
    }
  });
});
