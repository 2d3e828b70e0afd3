import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  decodeRepeatedly,
  foldUnicode,
  hexAt,
  isBase62,
  percentDecode,
  squash,
} from '../../../src/guards/decode.js';
import { propertyRuns } from '../../helpers/mutation.js';

/** decodeURIComponent, or null where it throws. */
function reference(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/** Strings made of the pieces that stress a decoder: escapes of every UTF-8 byte class, broken ones, surrogates. */
const hostile = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        '%',
        '%2',
        '%25',
        '%41',
        '%4',
        '%G1',
        '%C2',
        '%C3',
        '%A9',
        '%BF',
        '%80',
        '%E0',
        '%ED',
        '%A0',
        '%9F',
        '%EF%BB%BF',
        '%E2%82',
        '%AC',
        '%F0',
        '%F4',
        '%90',
        '%8F',
        '%9F%98%80',
        '%FF',
        '%C0%AF',
        'x',
        '+',
        'é',
        '😀',
        '\uD800',
        '\uDC00',
      ),
      fc.string({ maxLength: 3 }),
      fc.string({ unit: 'grapheme', maxLength: 4 }).map(encodeURIComponent),
    ),
    { maxLength: 24 },
  )
  .map((parts) => parts.join(''));

describe('percentDecode', () => {
  test('decodes escapes as UTF-8; broken escapes stay literal; invalid UTF-8 becomes U+FFFD', () => {
    const cases: [string, string][] = [
      ['plain', 'plain'],
      ['a%20b', 'a b'],
      ['%', '%'],
      ['%2', '%2'],
      ['%%41', '%A'],
      ['%G1', '%G1'],
      ['%25', '%'],
      ['%2541', '%41'],
      ['%C3%A9', 'é'],
      ['%c3%a9', 'é'],
      ['%F0%9F%98%80', '😀'],
      ['%EF%BB%BFx', '\uFEFFx'],
      ['%FF', '\uFFFD'],
      ['%C3', '\uFFFD'],
      ['%C3x', '\uFFFDx'],
      ['%C3xA9', '\uFFFDxA9'], // only a `%` starts an escape, also inside a sequence
      ['%C3%C3%A9', '\uFFFDé'],
      ['%E2%82', '\uFFFD'],
      ['%ED%A0%80', '\uFFFD\uFFFD\uFFFD'],
      ['%C0%AF', '\uFFFD\uFFFD'],
      ['a+b', 'a+b'],
    ];
    for (const [input, want] of cases) {
      assert.equal(percentDecode(input), want, input);
      const pad = 'p'.repeat(100);
      assert.equal(percentDecode(pad + input + pad), pad + want + pad, `${input} (inside a text)`);
    }
  });

  test('property: never throws, and equals decodeURIComponent wherever that succeeds', () => {
    fc.assert(
      fc.property(fc.oneof(hostile, fc.string({ unit: 'binary', maxLength: 80 })), (s) => {
        const got = percentDecode(s);
        const ref = reference(s);
        if (ref !== null) assert.equal(got, ref);
      }),
      { numRuns: propertyRuns(20_000) },
    );
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 60 }), (s) => {
        assert.equal(percentDecode(encodeURIComponent(s)), s);
        assert.equal(percentDecode(encodeURIComponent(encodeURIComponent(s))), encodeURIComponent(s));
      }),
      { numRuns: propertyRuns(5_000) },
    );
  });

  test('a lone surrogate stays as it is, as with decodeURIComponent', () => {
    for (const pad of ['', 'p'.repeat(70)]) {
      assert.equal(percentDecode(pad + '%41\uD800'), pad + 'A\uD800');
      assert.equal(percentDecode(pad + '\uDC00%41\uD83D\uDE00'), pad + '\uDC00A😀');
    }
  });

  test('linear: 16 KB of the worst shapes decode in bounded time', () => {
    for (const unit of ['%', '%25', '%C3', '%FF', '%C3%A9', '%4', '%%41']) {
      const s = unit.repeat(Math.floor(16_384 / unit.length));
      const out = percentDecode(s);
      assert.ok(out.length <= s.length, unit);
    }
  });
});

describe('percentDecode: edges', () => {
  test('%00 and %7F are ASCII; %F4%8F%BF%BF is U+10FFFF (the last code point), on both paths', () => {
    const cases: [string, string][] = [
      ['%00', '\0'],
      ['a%00b', 'a\0b'],
      ['%7F', '\x7f'],
      ['%7f%7E', '\x7f~'],
      ['%F4%8F%BF%BF', '\u{10FFFF}'],
      ['%F4%90%80%80', '\uFFFD\uFFFD\uFFFD\uFFFD'],
    ];
    for (const [input, want] of cases) {
      assert.equal(percentDecode(input), want, input);
      if (reference(input) !== null) assert.equal(want, reference(input), `${input}: as decodeURIComponent`);
      const pad = 'p'.repeat(100);
      assert.equal(percentDecode(pad + input), pad + want, `${input} (long)`);
    }
  });

  test('hex digits are 0-9, A-F, a-f only; 4-byte sequences from F0 start at U+10000', () => {
    // ':' and '@' sit right after '9' and before 'A'; 'G' and 'g' right after 'F' and 'f'.
    for (const s of ['%:0', '%0:', '%@0', '%G0', '%g0', '%/0']) {
      assert.equal(percentDecode(s), s, s);
      assert.equal(percentDecode('p'.repeat(100) + s), 'p'.repeat(100) + s, `${s} (long)`);
    }
    // Overlong forms of a code point below U+10000 are invalid: one U+FFFD per byte.
    for (const s of ['%F0%80%80%80', '%F0%8F%BF%BF']) {
      assert.equal(percentDecode(s), '\uFFFD'.repeat(4), s);
      assert.equal(percentDecode('p'.repeat(100) + s), 'p'.repeat(100) + '\uFFFD'.repeat(4), `${s} (long)`);
    }
    assert.equal(percentDecode('%F0%90%80%80'), '\u{10000}');
  });

  test('a character above U+00FF after % is not a hex digit', () => {
    // Such characters only reach the decoder from direct callers (Node reads targets as Latin-1).
    for (const s of ['%\u0100A', '%A\u0100', '%\u0130A', '%A\u0141', '%\u0100\u0100'])
      assert.equal(percentDecode(s), s, JSON.stringify(s));
  });

  test('a long string that starts with an escaped BOM keeps it (as decodeURIComponent does)', () => {
    const s = '%EF%BB%BF' + 'x'.repeat(100);
    assert.equal(percentDecode(s), '\uFEFF' + 'x'.repeat(100));
    assert.equal(percentDecode(s), decodeURIComponent(s));
  });

  test('long strings of every UTF-8 width decode in full, each longer than the last', () => {
    // The scratch buffer of escaped bytes must grow with the longest run.
    for (const unit of ['a', 'é', '€', '😀', '%41', '%E2%82%AC'])
      for (const n of [500, 3000, 9000]) {
        const s = unit.repeat(n) + '%41';
        assert.equal(percentDecode(s), decodeURIComponent(s), `${unit} × ${n}`);
      }
  });
});

describe('decodeRepeatedly', () => {
  const budget = (rounds = 8, left = 1e6) => ({ rounds, left, undecided: false });
  test('until stable, at most `rounds` rounds; one more change is undecided', () => {
    const b = budget();
    assert.equal(decodeRepeatedly('%2561pi_key', b), 'api_key');
    assert.equal(b.undecided, false);
    let deep = 'a';
    for (let i = 0; i < 8; i++) deep = encodeURIComponent(deep).replace(/a/, '%61');
    const ok = budget();
    assert.equal(decodeRepeatedly(deep, ok), 'a');
    assert.equal(ok.undecided, false, '8 rounds are read');
    const tooDeep = budget();
    decodeRepeatedly(encodeURIComponent(deep), tooDeep);
    assert.equal(tooDeep.undecided, true, 'a 9th round is undecided');
    const literal = budget();
    assert.equal(decodeRepeatedly('100%', literal), '100%');
    assert.equal(literal.undecided, false, 'a literal % is no escape');
  });
  test('each round is charged its length; past the budget the string is undecided', () => {
    const b = budget(8, 20);
    decodeRepeatedly('%2525252541', b);
    assert.equal(b.undecided, true);
  });
});

describe('foldUnicode', () => {
  test('UTF-8 bytes as latin1 (overlong ones too) made characters, then NFKC', () => {
    assert.equal(foldUnicode('\xef\xbd\x8e\xc1\xae'), 'nn');
    assert.equal(foldUnicode('ｎｋ＿'), 'nk_');
    assert.equal(foldUnicode('plain ascii'), 'plain ascii');
    assert.equal(foldUnicode('\xf7\xbf\xbf\xbf'), '\xf7\xbf\xbf\xbf', 'past U+10FFFF stays as it is');
  });
});

test('hexAt: n hex digits in bytes or code units, any case; -1 for a non-digit or past the end', () => {
  const bytes = Buffer.from('%u005F%2e');
  assert.equal(hexAt(bytes, 2, 4, bytes.length), 0x5f);
  assert.equal(hexAt(bytes, 7, 2, bytes.length), 0x2e);
  assert.equal(hexAt(bytes, 7, 2, 8), -1, 'the second digit lies at the end');
  assert.equal(hexAt(new Uint16Array([0x41, 0x66, 0xff10]), 0, 2, 3), 0xaf);
  assert.equal(hexAt(new Uint16Array([0x41, 0xff10]), 0, 2, 2), -1, 'a full-width digit is no digit');
  assert.equal(hexAt(Buffer.from('0g'), 0, 2, 2), -1);
});

test('isBase62 and squash: ASCII letters and digits only; squash lowercases and drops the rest', () => {
  assert.deepEqual(
    [...'09azAZ_-é '].map((c) => isBase62(c.charCodeAt(0))),
    [true, true, true, true, true, true, false, false, false, false],
  );
  assert.equal(squash('X-API_Key 2'), 'xapikey2');
  assert.equal(squash('\u212a'), 'k', 'the Kelvin sign lowercases to k');
});
