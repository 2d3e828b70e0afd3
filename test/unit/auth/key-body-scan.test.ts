import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { generateApiKey, parseApiKey } from '../../../src/auth/api-key.js';
import {
  BARE_BODY_ENVIRONMENTS,
  BareBodyScan,
  decodeLegacyEscapes,
} from '../../../src/auth/key-body-scan.js';
import { createUrlKeyGuard } from '../../../src/auth/url-key-guard.js';
import {
  DEFAULT_METHOD_OVERRIDE_PARAMS,
  DEFAULT_URL_GUARD_LIMITS,
  DEFAULT_URL_KEY_PARAMS,
} from '../../../src/config/schema.js';

/**
 * Attack report F2/F3/F5 (query string): bare key bodies (checksum-valid, separators anywhere, split
 * over segments and parameters), `%uXXXX` and overlong UTF-8, PHP-style method-override names.
 */
const check = createUrlKeyGuard(DEFAULT_URL_KEY_PARAMS, {
  ...DEFAULT_URL_GUARD_LIMITS,
  methodOverrideParams: DEFAULT_METHOD_OVERRIDE_PARAMS,
});
const bodyOf = (key: string) => key.slice(key.indexOf('_', 3) + 1);
const candidatesOf = (url: string) => {
  const r = check(url);
  return r.found ? r.candidates : [];
};
const pctU = (s: string) => [...s].map((c) => '%u' + c.charCodeAt(0).toString(16).padStart(4, '0')).join('');
const overlong = (s: string, bytes: 2 | 3 | 4) =>
  [...s]
    .map((ch) => {
      const c = ch.charCodeAt(0);
      const lo = `%${(0x80 | (c & 63)).toString(16)}`;
      if (bytes === 2) return `%${(0xc0 | (c >> 6)).toString(16)}${lo}`;
      if (bytes === 3) return `%e0%${(0x80 | (c >> 6)).toString(16)}${lo}`;
      return `%f0%80%${(0x80 | (c >> 6)).toString(16)}${lo}`;
    })
    .join('');

describe('URL key guard: bare key bodies', () => {
  const live = generateApiKey('live');
  const testKey = generateApiKey('test');

  test('a checksum-valid body without its prefix is found, as the full key (for the exposure check)', () => {
    assert.deepEqual(check(`/notify/v1/otps/${bodyOf(live)}`), { found: true, candidates: [live] });
    assert.deepEqual(check(`/x?q=${bodyOf(testKey)}`), { found: true, candidates: [testKey] });
    assert.deepEqual(check(`/x;k=${bodyOf(live)}`), { found: true, candidates: [live] });
    assert.deepEqual(check(`/x/abc${bodyOf(live)}def`), { found: true, candidates: [live] });
    assert.deepEqual(BARE_BODY_ENVIRONMENTS, ['live', 'test']);
  });

  test('separators anywhere, segments and parameters: the base62 characters read as one stream', () => {
    const body = bodyOf(live);
    for (const url of [
      `/x/${live.split('').join('-')}`,
      `/x/${body.split('').join('.')}`,
      `/x/${body.split('').join('_')}`,
      `/x?q=${body.split('').join('%20')}`,
      `/x/${body.slice(0, 19)}/${body.slice(19)}`,
      `/x?${[...body].map((c, i) => `${'xy'[i % 2]}=${c}`).join('&')}`,
      `/x?${[...body].map((c, i) => `p${i}=${c}`).join('&')}`,
      `/x?a=${live.slice(0, 20)}&b=${live.slice(20)}`,
    ])
      assert.ok(candidatesOf(url).includes(live), url.slice(0, 60));
  });

  test('a body with a wrong checksum, or in another case, is not a key (no false positive)', () => {
    const body = bodyOf(live);
    const flipped = body.slice(0, 10) + (body[10] === 'a' ? 'b' : 'a') + body.slice(11);
    assert.deepEqual(check(`/x/${flipped}`), { found: false });
    // The checksum is case-sensitive: an upper-cased body is found only if it happens to stay valid
    // (the presented key in any case is refused after authentication, by the key-material matcher).
    const upper = body.toUpperCase();
    const valid = parseApiKey(`nk_live_${upper}`, { maxLength: 256, acceptLegacy: false }).ok;
    assert.equal(check(`/x/${upper}`).found, valid);
    assert.deepEqual(check(`/notify/v1/messages/${'0123456789abcdef'.repeat(4)}?cursor=${'A'.repeat(60)}`), {
      found: false,
    });
  });

  test('property: found exactly where a 38-character window of the base62 stream is a valid live or test body', () => {
    const base62 = fc.constantFrom(
      ...'0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'.split(''),
    );
    const sep = fc.constantFrom('-', '.', '/', '~', '!', "'");
    const piece = fc.oneof(
      { weight: 6, arbitrary: base62 },
      { weight: 1, arbitrary: sep },
      { weight: 1, arbitrary: fc.constant(bodyOf(live)) },
      { weight: 1, arbitrary: fc.constant(bodyOf(testKey)) },
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 60 }), (ps) => {
        const text = ps.join('');
        const stream = text.replace(/[^0-9A-Za-z]/g, '');
        const expected = new Set<string>();
        for (let i = 0; i + 38 <= stream.length; i++)
          for (const env of BARE_BODY_ENVIRONMENTS) {
            const k = `nk_${env}_${stream.slice(i, i + 38)}`;
            if (parseApiKey(k, { maxLength: 256, acceptLegacy: false }).ok) expected.add(k);
          }
        const got = new Set(
          candidatesOf(`/-/${text}`).filter((c) => !c.startsWith('nk_') || c.length === 46),
        );
        assert.deepEqual(got, expected, text);
      }),
      { numRuns: 300 },
    );
  });
});

describe('URL key guard: %uXXXX and overlong UTF-8 in the query', () => {
  const key = generateApiKey('live');

  test('decoded to their characters before the key-shape search', () => {
    for (const [label, q] of [
      ['%u', pctU(key)],
      ['%U upper', pctU(key).toUpperCase()],
      ['overlong 2 bytes', overlong(key, 2)],
      ['overlong 3 bytes', overlong(key, 3)],
      ['overlong 4 bytes', overlong(key, 4)],
      ['%u, body only', pctU(bodyOf(key))],
      ['%25u: %u encoded once more', pctU(key).replaceAll('%', '%25')],
    ])
      assert.ok(candidatesOf(`/x?q=${q}`).includes(key), label);
    assert.deepEqual(check('/x?%u0061pi_key=1'), { found: true, candidates: ['1'] });
    assert.deepEqual(check('/x?%c1%a1pi_key=1'), { found: true, candidates: ['1'] });
  });

  test('text without a key passes; a malformed %u stays literal', () => {
    assert.deepEqual(check('/x?text=%u0048%u0069&to=%2B49151'), { found: false });
    assert.deepEqual(check('/x?text=%u00&b=%uzzzz&c=%c1'), { found: false });
  });
});

describe('URL key guard: method-override names read as PHP and Rack read them', () => {
  test('leading spaces or + dropped, " " "." "[" as "_", leading brackets dropped', () => {
    for (const q of [
      '%20_method',
      '+_method',
      '%20%20_method',
      '+%20_method',
      '%09_method',
      '.method',
      '%2Emethod',
      '_method[]',
      '_method%5B%5D',
      '[_method]',
      '%5B_method%5D',
      '+_METHOD',
      '%20.method',
      '+X-HTTP-Method-Override',
    ])
      assert.deepEqual(check(`/x?${q}=DELETE`), { found: false, methodOverride: true }, q);
  });

  test('plain `method` (notification APIs: ?method=sms) stays allowed, however spaced', () => {
    for (const q of ['method', '%20method', '+method', '[method]', 'my_method', 'methods'])
      assert.deepEqual(check(`/x?${q}=sms`), { found: false }, q);
  });
});

describe('BareBodyScan and decodeLegacyEscapes, directly', () => {
  test('the stream carries over between feeds; each find is the full key', () => {
    const key = generateApiKey('test');
    const body = bodyOf(key);
    const scan = new BareBodyScan();
    const out: string[] = [];
    scan.feed(`a/${body.slice(0, 10)}`, out);
    assert.deepEqual(out, []);
    scan.feed(`-${body.slice(10)}`, out);
    assert.deepEqual(out, [key]);
    const fresh: string[] = [];
    new BareBodyScan().feed(body.slice(10), fresh);
    assert.deepEqual(fresh, []);
  });

  test('legacy escapes: %u, overlong 2/3/4 bytes; anything else left as is', () => {
    assert.equal(decodeLegacyEscapes('%u006e%U006B'), 'nk');
    assert.equal(decodeLegacyEscapes('%c1%ae%e0%81%ae%f0%80%81%ae'), 'nnn');
    assert.equal(
      decodeLegacyEscapes('a%u00zz%c1%41%e0%a0%80%f0%90%80%80%'),
      'a%u00zz%c1%41%e0%a0%80%f0%90%80%80%',
    );
    assert.equal(decodeLegacyEscapes('%u0025%u0032%u0035'), '%25');
  });
});
