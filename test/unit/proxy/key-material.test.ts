import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { generateApiKey } from '../../../src/auth/api-key.js';
import { createKeyMaterialMatcher, mayHoldKey } from '../../../src/proxy/key-material.js';

const pct = (s: string) => [...s].map((c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join('');
const b64 = (s: string, enc: 'base64' | 'base64url' = 'base64') => Buffer.from(s, 'latin1').toString(enc);

/** Every encoding the matcher promises to see through. */
const ENCODINGS: [string, (k: string) => string][] = [
  ['raw', (k) => k],
  ['lowercase', (k) => k.toLowerCase()],
  ['uppercase', (k) => k.toUpperCase()],
  ['spaces inside', (k) => `${k.slice(0, 5)} ${k.slice(5, 17)}\t${k.slice(17)}`],
  ['%-encoded', pct],
  ['%-encoded, upper hex', (k) => pct(k).toUpperCase()],
  ['%-encoded twice', (k) => pct(pct(k))],
  ['%-encoded in part', (k) => k.slice(0, 10) + pct(k.slice(10, 20)) + k.slice(20)],
  ['base64', (k) => b64(k)],
  ['base64url', (k) => b64(k, 'base64url')],
  ['base64, %-encoded', (k) => encodeURIComponent(b64(`u:${k}`))],
  ['base64 of the lowercase key', (k) => b64(k.toLowerCase())],
  ['hex', (k) => Buffer.from(k).toString('hex')],
  ['HEX', (k) => Buffer.from(k).toString('hex').toUpperCase()],
];

describe('key material matcher', () => {
  const key = generateApiKey('live');
  const m = createKeyMaterialMatcher(key);

  test('finds the key in every encoding, anywhere in a longer value (property)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...ENCODINGS),
        fc.string({ maxLength: 40 }),
        fc.string({ maxLength: 40 }),
        ([, encode], before, after) => m.holds(before + encode(key) + after),
      ),
      { numRuns: 500 },
    );
  });

  test('values shorter than the key are skipped, yet every encoding of any key is still found (property)', () => {
    // holds() answers false for a value shorter than the key without looking at it: every encoding
    // must therefore be at least as long as the key, also for short (legacy) keys.
    fc.assert(
      fc.property(fc.stringMatching(/^[!-~]{1,12}$/), fc.constantFrom(...ENCODINGS), (k, [, encode]) => {
        const km = createKeyMaterialMatcher(k);
        return km.holds(encode(k)) && !km.holds(k.slice(1));
      }),
      { numRuns: 500 },
    );
  });

  test('base64 at any alignment inside a longer encoded token (Basic, JWT payloads)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), fc.string({ maxLength: 20 }), (before, after) => {
        return (
          m.holds(`Basic ${b64(before + key + after)}`) &&
          m.holds(b64(JSON.stringify({ before, key }), 'base64url'))
        );
      }),
      { numRuns: 300 },
    );
  });

  test('does not find it in unrelated values, another key, or a truncated copy', () => {
    for (const v of [
      '',
      'Bearer abc',
      'a=1; b=2',
      generateApiKey('live'),
      key.slice(0, -1),
      b64(key.slice(1, -1)),
    ])
      assert.equal(m.holds(v), false, v);
  });

  test('malformed escapes do not throw', () => {
    for (const v of ['%', '%%', '%zz', '%2', `%${key}`, '%25%25%']) assert.doesNotThrow(() => m.holds(v));
    assert.equal(m.holds(`%zz${key}%`), true);
  });

  test('mayHoldKey: no key → false; over-long or repeated header → true without scanning', () => {
    assert.equal(mayHoldKey('abc', undefined, 256), false);
    assert.equal(mayHoldKey('abc', '', 256), false);
    assert.equal(mayHoldKey('abc', 'x'.repeat(257), 256), true);
    assert.equal(mayHoldKey('abc', [key, key], 256), true);
    assert.equal(mayHoldKey(`req-${key}`, key, 256), true);
    assert.equal(mayHoldKey('req-1', key, 256), false);
  });
});
