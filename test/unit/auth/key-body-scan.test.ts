import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import zlib from 'node:zlib';
import fc from 'fast-check';
import { generateApiKey, parseApiKey } from '../../../src/auth/api-key.js';
import {
  BARE_BODY_ENVIRONMENTS,
  BareBodyScan,
  collectEncodedKeys,
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

describe('BareBodyScan and decodeLegacyEscapes: edges (mutation survivors at 7167e16)', () => {
  const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  /** A CRC-32 in 6 base62 digits, as api-key.ts writes a key's checksum. */
  const sumDigits = (crc: number) => {
    let out = '';
    for (let i = 0, n = crc; i < 6; i++, n = Math.floor(n / 62)) out = BASE62[n % 62]! + out;
    return out;
  };
  const scanAll = (text: string) => {
    const out: string[] = [];
    new BareBodyScan().feed(text, out);
    return out;
  };

  test('non-ASCII characters (also U+0080) are separators, not part of the stream', () => {
    const key = generateApiKey('live');
    const body = bodyOf(key);
    assert.deepEqual(scanAll(body.split('').join('é')), [key]);
    assert.deepEqual(scanAll(body.split('').join('\u0080')), [key]);
    assert.deepEqual(scanAll(`${body.slice(0, 19)}\u00ff\u0100${body.slice(19)}`), [key]);
  });

  test('a body whose checksum starts with the digit 4 (the largest a CRC-32 can have) is found', () => {
    let key = '';
    for (let i = 0; i < 2000 && key[key.length - 6] !== '4'; i++) key = generateApiKey('test');
    assert.equal(key[key.length - 6], '4');
    assert.deepEqual(scanAll(`-${bodyOf(key)}-`), [key]);
  });

  test('fewer than 38 characters are never a body, even when their last 6 match a zero-padded window', () => {
    // The checksum of `nk_live_` + 22 NUL + 10 characters: what a scan that checked before 38 characters
    // (its window still holding zeros) would compare the 6 characters after those 10 with.
    let text = '';
    for (let j = 0; j < 62 && !/^[0-4]/.test(text.slice(10)); j++) {
      const w = 'ABCDEFGHI' + BASE62[j]!;
      text = w + sumDigits(zlib.crc32(`nk_live_${'\0'.repeat(22)}${w}`));
    }
    assert.match(text.slice(10), /^[0-4]/);
    assert.deepEqual(scanAll(text), []);
    assert.deepEqual(scanAll(`x.${text}.y`), []);
  });

  test('a window whose checksum covers the 32 characters alone (no nk_<env>_ prefix) is not a key', () => {
    // zlib.crc32(w, 0xffffffff) starts from a zero register: the checksum of no environment at all.
    let text = '';
    for (let j = 0; j < 62 && !/^[0-4]/.test(text.slice(32)); j++) {
      const w = 'abcdefghijklmnopqrstuvwxyzABCDE' + BASE62[j]!;
      text = w + sumDigits(zlib.crc32(w, 0xffffffff));
    }
    assert.match(text.slice(32), /^[0-4]/);
    assert.deepEqual(scanAll(text), []);
  });

  test('legacy escapes: exact bounds of the continuation bytes and zero code points', () => {
    assert.equal(decodeLegacyEscapes('%c1%bf'), '\x7f');
    assert.equal(decodeLegacyEscapes('%e0%9f%bf'), '\u07ff');
    assert.equal(decodeLegacyEscapes('%f0%8f%bf%bf'), '\uffff');
    assert.equal(decodeLegacyEscapes('%u0000'), '\0');
    assert.equal(decodeLegacyEscapes('%c0%80'), '\0');
    assert.equal(decodeLegacyEscapes('%e0%80%80'), '\0');
    assert.equal(decodeLegacyEscapes('%f0%80%80%80'), '\0');
  });

  test('legacy escapes: only %-escapes count, hex digits are ASCII only, a broken sequence stays literal', () => {
    for (const s of [
      'xu0041', // no `%`: nothing to decode
      'a u006e',
      '%c1xae', // the continuation must be an escape, not bare hex
      '%e0%80xae',
      '%cé%ae', // a non-ASCII character is no hex digit, in a byte escape...
      '%c\u0080%ae',
      '%é1%ae',
      '%u\u00e9\u00e96e', // ...or in %uXXXX
      '%u\u0080\u00806e',
      '%e0%41%ae', // a bad first continuation is not skipped over
      '%f0%41%80%ae',
      '%41%80%80%80', // only %c0 %c1 %e0 %f0 lead an overlong sequence
      '%zz%80%80%80',
      '%e1%80%80',
    ])
      assert.equal(decodeLegacyEscapes(s), s, JSON.stringify(s));
  });
});

describe('URL key guard: edges (mutation survivors at 7167e16)', () => {
  test('a leading `]` is dropped before a method-override name, as Rack drops it', () => {
    assert.deepEqual(check('/x?]_method=DELETE'), { found: false, methodOverride: true });
    assert.deepEqual(check('/x?%5D_method=DELETE'), { found: false, methodOverride: true });
  });

  test('no method-override names configured: no parameter is reported as one', () => {
    const plain = createUrlKeyGuard(['api_key'], { maxParams: 16, maxPathSegments: 16 });
    for (const q of ['stryker_was_here', '_method', ''])
      assert.deepEqual(plain(`/x?${q}=1`), { found: false }, q);
  });

  test('a key shape split over parameter values is found even when its checksum is wrong', () => {
    const shape = `nk_live_${'A'.repeat(38)}`;
    assert.deepEqual(check(`/x?a=${shape.slice(0, 27)}&b=${shape.slice(27)}`), {
      found: true,
      candidates: [shape],
    });
  });

  test('matrix parameters past the cap: the query is still searched for bare bodies', () => {
    const key = generateApiKey('live');
    const small = createUrlKeyGuard(['api_key'], { maxParams: 4, maxPathSegments: 16 });
    assert.deepEqual(small(`/x;a;b;c;d;e?q=${bodyOf(key)}`), {
      found: true,
      candidates: [key],
      overLimit: true,
    });
  });
});

/**
 * Final attack report F2: a valid key (or its bare body) in base64 (standard or url-safe, padded or
 * not, at any byte offset of a longer blob), or hex (either case), %-encoded or not, in any part of
 * the URL, is a key in the URL before authentication; the checksum decides, so digests, UUIDs and
 * tokens that are not keys pass.
 */
describe('URL key guard: base64 and hex keys (final attack report F2)', () => {
  const live = generateApiKey('live');
  const testKey = generateApiKey('test');
  const staging = generateApiKey('staging');
  const pct = (s: string) => [...s].map((c) => '%' + c.charCodeAt(0).toString(16).padStart(2, '0')).join('');
  const encodings: [string, (b: Buffer) => string][] = [
    ['base64', (b) => b.toString('base64')],
    ['base64, no padding', (b) => b.toString('base64').replace(/=+$/, '')],
    ['base64url', (b) => b.toString('base64url')],
    ['base64url, padded', (b) => b.toString('base64').replaceAll('+', '-').replaceAll('/', '_')],
    ['base64, +/= %-encoded', (b) => encodeURIComponent(b.toString('base64'))],
    ['base64, every character %-encoded', (b) => pct(b.toString('base64'))],
    ['base64, %-encoded twice', (b) => encodeURIComponent(encodeURIComponent(b.toString('base64')))],
    ['hex', (b) => b.toString('hex')],
    ['HEX', (b) => b.toString('hex').toUpperCase()],
    ['hex, %-encoded', (b) => pct(b.toString('hex'))],
  ];
  /** `material` inside a longer blob: `lead` bytes before it (0-2: the three byte alignments of base64). */
  const blob = (material: string, lead: number) =>
    Buffer.concat([
      Buffer.from('\x00\xffQ'.slice(0, lead), 'latin1'),
      Buffer.from(material),
      Buffer.from('\x01~'),
    ]);
  const places: [string, (e: string) => string][] = [
    ['path segment', (e) => `/notify/v1/otps/${e}`],
    ['path, glued to a word', (e) => `/notify/v1/otps/id-${e}`],
    ['query value', (e) => `/notify/v1/otps?cursor=${e}&to=1`],
    ['query name', (e) => `/notify/v1/otps?${e}=1`],
    ['matrix parameter', (e) => `/notify/v1/otps;state=${e}/x`],
    ['unrouted path', (e) => `/unrouted/${e}`],
  ];

  test('every encoding, every byte alignment, every place: found, as the full key', () => {
    for (const [key, material] of [
      [live, live],
      [live, bodyOf(live)],
      [testKey, bodyOf(testKey)],
      [staging, staging],
    ] as const)
      for (const [enc, encode] of encodings)
        for (let lead = 0; lead < 3; lead++)
          for (const [place, at] of places) {
            const url = at(encode(blob(material, lead)));
            assert.ok(candidatesOf(url).includes(key), `${enc}, ${lead} bytes before, ${place}: ${url}`);
          }
  });

  test('the encoded key alone (no blob): base64 at each character alignment of a run, hex at each nibble', () => {
    const b = Buffer.from(bodyOf(live));
    for (let o = 0; o < 4; o++) {
      // `o` base64 characters before the blob shift it inside the run: each of the 4 alignments.
      assert.deepEqual(check(`/x/${'AAA'.slice(0, o)}${b.toString('base64url')}`), {
        found: true,
        candidates: [live],
      });
      const out: string[] = [];
      collectEncodedKeys('AAA'.slice(0, o) + b.toString('base64url'), out);
      assert.deepEqual(out, [live], `base64 alignment ${o}`);
    }
    for (const lead of ['', 'a']) {
      const out: string[] = [];
      collectEncodedKeys(lead + b.toString('hex'), out);
      assert.ok(out.includes(live), `hex after ${JSON.stringify(lead)}`);
    }
  });

  test('the shortest encodings: 51 base64 characters and 76 hex digits of a bare body are read', () => {
    const b = Buffer.from(bodyOf(testKey));
    const b64 = b.toString('base64url');
    assert.equal(b64.length, 51);
    for (const text of [b64, b.toString('hex'), b.toString('hex').toUpperCase()]) {
      const out: string[] = [];
      collectEncodedKeys(text, out);
      assert.deepEqual(out, [testKey], text);
    }
    // A run starts after any other character, not only at the start of the text.
    for (const text of [`.${b64}`, `/x?${b64}`, `é${b64}`]) {
      const out: string[] = [];
      collectEncodedKeys(text, out);
      assert.deepEqual(out, [testKey], text);
    }
    const none: string[] = [];
    collectEncodedKeys(b64.slice(0, 50), none);
    collectEncodedKeys(b.toString('hex').slice(0, 75), none);
    assert.deepEqual(none, []);
  });

  test('a key shape of any environment needs its checksum; its prefix may be in any case', () => {
    const enc = (s: string) => Buffer.from(s).toString('base64url');
    const wrong = staging.slice(0, -1) + (staging.endsWith('a') ? 'b' : 'a');
    assert.deepEqual(check(`/x/${enc(wrong)}`), { found: false });
    assert.deepEqual(check(`/x/${enc(`nk_live_${'A'.repeat(38)}`)}`), { found: false });
    assert.deepEqual(check(`/x/${enc('NK_STAGING_' + staging.slice(11))}`), {
      found: true,
      candidates: [staging],
    });
    assert.deepEqual(check(`/x/${enc('Nk_Staging_' + staging.slice(11))}`), {
      found: true,
      candidates: [staging],
    });
    const two: string[] = [];
    collectEncodedKeys(enc(`${staging} ${live}`), two);
    assert.deepEqual([...new Set(two)].sort(), [live, staging].sort());
  });

  test('base64 runs and hex runs end at other characters: two runs are decoded apart', () => {
    const b = Buffer.from(live);
    // `=` (padding) ends a run: what follows is a run of its own, read at its own alignments.
    assert.ok(
      candidatesOf(`/x/${Buffer.from('ab').toString('base64')}${b.toString('base64')}`).includes(live),
    );
    assert.ok(candidatesOf(`/x/Zm9v.${b.toString('hex')}`).includes(live));
    assert.ok(candidatesOf(`/x?a=${'Q'.repeat(60)}&b=${b.toString('base64url')}`).includes(live));
  });

  test('no false positives: UUIDs, digests, tokens and text of the alphabets that are not keys', () => {
    for (const url of [
      '/notify/v1/messages/123e4567-e89b-12d3-a456-426614174000',
      `/notify/v1/blobs/${'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'}`,
      `/notify/v1/blobs/${'E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855'}`,
      `/notify/v1/x?cursor=${Buffer.from('{"page":2,"after":"2024-01-01T00:00:00Z","sort":"desc"}').toString('base64url')}`,
      `/notify/v1/x?sig=${'z4DNiu1ILV0VJ9fccvouRhEv2YHM0evqDzqLUWfTqP0rMt3f3Wn0i7DWsomeB/lPuSMMuUa2cVyd5kyVvoZGgw=='}`,
      `/notify/v1/${'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(4)}`,
      `/notify/v1/${Buffer.from(`nk_live_${'A'.repeat(38)}`).toString('hex')}`,
    ])
      assert.deepEqual(check(url), { found: false }, url);
  });

  test('property: random bytes in base64 or hex are not keys; a key anywhere in them is found', () => {
    const encode = fc.constantFrom(...encodings);
    const place = fc.constantFrom(...places);
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 200 }),
        fc.uint8Array({ minLength: 0, maxLength: 60 }),
        encode,
        place,
        fc.constantFrom(live, bodyOf(live), bodyOf(testKey), staging),
        (before, after, [, enc], [, at], material) => {
          const noise = Buffer.concat([Buffer.from(before), Buffer.from(after)]);
          // Noise alone: the odds of a checksum-valid 38-byte base62 run in random bytes are nil.
          assert.deepEqual(check(at(enc(noise))), { found: false });
          const withKey = at(
            enc(Buffer.concat([Buffer.from(before), Buffer.from(material), Buffer.from(after)])),
          );
          const expected = material === bodyOf(testKey) ? testKey : material === staging ? staging : live;
          assert.ok(candidatesOf(withKey).includes(expected), withKey);
        },
      ),
      { numRuns: 300 },
    );
  });

  test('past the caps, a base64 key in the rest of the URL (read as sent) is still found', () => {
    const small = createUrlKeyGuard(['api_key'], { maxParams: 4, maxPathSegments: 16 });
    assert.deepEqual(small(`/x?a&b&c&d&e&q=${Buffer.from(live).toString('base64url')}`), {
      found: true,
      candidates: [live],
      overLimit: true,
    });
    assert.deepEqual(small(`/x;a;b;c;d;e?q=${Buffer.from(live).toString('hex')}`), {
      found: true,
      candidates: [live],
      overLimit: true,
    });
  });
});
