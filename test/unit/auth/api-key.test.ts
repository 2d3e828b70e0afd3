import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  displayPrefixOf,
  generateApiKey,
  hashApiKey,
  KEY_LIKE_PATTERN,
  parseApiKey,
} from '../../../src/auth/api-key.js';

const strict = { maxLength: 256, acceptLegacy: false };

describe('api key format', () => {
  test('generated keys: nk_<env>_ + 32 base62 + 6 checksum, parse back, all distinct', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const k = generateApiKey('live');
      assert.match(k, /^nk_live_[0-9A-Za-z]{38}$/);
      assert.deepEqual(parseApiKey(k, strict), { ok: true, environment: 'live' });
      seen.add(k);
    }
    assert.equal(seen.size, 2000);
    assert.match(generateApiKey('test'), /^nk_test_/);
    assert.throws(() => generateApiKey('Bad Env'), /invalid key environment/);
  });

  test('random characters are spread evenly over the base62 alphabet (no modulo bias)', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 3000; i++)
      for (const c of generateApiKey('live').slice(8, 40)) counts.set(c, (counts.get(c) ?? 0) + 1);
    assert.equal(counts.size, 62);
    const expected = (3000 * 32) / 62;
    for (const [c, n] of counts)
      assert.ok(Math.abs(n - expected) < expected * 0.2, `${c}: ${n} vs ${expected}`);
  });

  test('any single-character change is caught by the checksum (no store lookup needed)', () => {
    const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
    for (let n = 0; n < 5; n++) {
      const k = generateApiKey('live');
      let tried = 0;
      // Every position after `nk_live_` (random part and checksum), every other base62 character:
      // a case flip, a digit swap or a changed checksum character all fail the checksum.
      for (let i = 'nk_live_'.length; i < k.length; i++) {
        for (const c of alphabet) {
          if (k[i] === c) continue;
          const typo = k.slice(0, i) + c + k.slice(i + 1);
          assert.deepEqual(parseApiKey(typo, strict), { ok: false, reason: 'checksum' }, `${c} at ${i}`);
          tried++;
        }
      }
      assert.equal(tried, 38 * 61, 'every substitution was tried');
    }
  });

  test('rejects over-long, malformed, joined duplicates; legacy keys only when enabled', () => {
    assert.deepEqual(parseApiKey('x'.repeat(300), strict), { ok: false, reason: 'too_long' });
    assert.deepEqual(parseApiKey('hello', strict), { ok: false, reason: 'malformed' });
    const k = generateApiKey('live');
    assert.equal(parseApiKey(`${k}, ${k}`, strict).ok, false);
    const legacy = 'sk_legacy_0123456789abcdefABCDEF';
    assert.equal(parseApiKey(legacy, strict).ok, false);
    assert.deepEqual(parseApiKey(legacy, { maxLength: 256, acceptLegacy: true }), {
      ok: true,
      environment: null,
    });
    assert.equal(parseApiKey('short', { maxLength: 256, acceptLegacy: true }).ok, false);
    assert.equal(
      parseApiKey(`${legacy},${legacy}`, { maxLength: 256, acceptLegacy: true }).ok,
      false,
      'a comma means two header lines',
    );
    assert.equal(
      parseApiKey('has space in the middle of it', { maxLength: 256, acceptLegacy: true }).ok,
      false,
    );
  });

  test('KEY_LIKE_PATTERN: every generated key, in text; not shorter bodies or other shapes', () => {
    for (const env of ['live', 'test', 'ab', 'staging2024']) {
      const key = generateApiKey(env);
      assert.ok(KEY_LIKE_PATTERN.test(`x ${key} y`), key);
    }
    for (const s of [
      'nk_live_abc',
      `nk_1ive_${'a'.repeat(38)}`,
      `nk_l_${'a'.repeat(38)}`,
      `nk_live_${'a'.repeat(37)}-`,
    ])
      assert.equal(KEY_LIKE_PATTERN.test(s), false, s);
    assert.equal(KEY_LIKE_PATTERN.test(`nk_live!_${'a'.repeat(38)}`), false);
  });

  test('property: random strings never parse as our keys unless checksummed', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        const r = parseApiKey(s, strict);
        if (r.ok) assert.ok(KEY_LIKE_PATTERN.test(s));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.stringMatching(/^nk_live_[0-9A-Za-z]{38}$/), (s) => {
        // A random well-shaped string passes the 32-bit checksum about once in 4 billion.
        assert.equal(parseApiKey(s, strict).ok, false);
      }),
      { numRuns: 2000 },
    );
  });

  test('hash is SHA-256 hex of the whole key; display prefix shows 6 random characters only', () => {
    assert.equal(hashApiKey('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const k = generateApiKey('live');
    assert.equal(displayPrefixOf(k), k.slice(0, 14));
    assert.equal(displayPrefixOf(k).length, 'nk_live_'.length + 6);
  });
});

describe('api key format: edges', () => {
  const legacy = { maxLength: 256, acceptLegacy: true };

  test('a key at exactly maxLength passes; one character less of room is too long', () => {
    const k = generateApiKey('live');
    assert.deepEqual(parseApiKey(k, { maxLength: k.length, acceptLegacy: false }), {
      ok: true,
      environment: 'live',
    });
    assert.deepEqual(parseApiKey(k, { maxLength: k.length - 1, acceptLegacy: false }), {
      ok: false,
      reason: 'too_long',
    });
  });

  test('anything before or after a well-formed key makes it malformed (not a checksum failure)', () => {
    const k = generateApiKey('live');
    for (const s of [`${k}x`, `x${k}`, ` ${k}`, `${k}\n`, `${k},${k}`])
      assert.deepEqual(parseApiKey(s, strict), { ok: false, reason: 'malformed' }, JSON.stringify(s));
  });

  test('legacy keys: at least 20 characters, and never starting with nk_', () => {
    assert.deepEqual(parseApiKey('a'.repeat(20), legacy), { ok: true, environment: null });
    assert.deepEqual(parseApiKey('a'.repeat(19), legacy), { ok: false, reason: 'malformed' });
    assert.deepEqual(parseApiKey(`nk_${'a'.repeat(30)}`, legacy), { ok: false, reason: 'malformed' });
    assert.deepEqual(parseApiKey(`legacy-key-ending-in-nk_`, legacy), { ok: true, environment: null });
  });

  test('environments: a lowercase letter then 1 to 15 letters or digits, nothing else', () => {
    assert.match(generateApiKey('a'.repeat(16)), /^nk_a{16}_/);
    for (const env of ['a'.repeat(17), 'live_x', 'live-x', 'Live', 'l', '1live', 'live\n'])
      assert.throws(() => generateApiKey(env), /invalid key environment/, JSON.stringify(env));
  });

  test('display prefix of a legacy key: its first 4 characters', () => {
    assert.equal(displayPrefixOf('sk_legacy_0123456789abcdef'), 'sk_l');
    assert.equal(displayPrefixOf(`legacy-${generateApiKey('live')}`), 'lega');
  });
});
