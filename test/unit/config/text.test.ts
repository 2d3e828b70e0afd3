import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { escapeRefusedText, isDisplayText } from '../../../src/config/text.js';

describe('isDisplayText', () => {
  test('controls, bidi and other format characters, line separators and unpaired surrogates are refused', () => {
    const refused = [
      'a\nb',
      'a\rb',
      'a\tb',
      'a\u0000b',
      'a\u001b[31mb',
      'a\u007fb',
      'a\u0085b',
      'a\u009bb',
      'a\u200bb',
      'a\u200eb',
      'a\u200fb',
      'a\u202ab',
      'a\u202bb',
      'a\u202cb',
      'a\u202db',
      'a\u202eb',
      'a\u2060b',
      'a\u2066b',
      'a\u2067b',
      'a\u2068b',
      'a\u2069b',
      'a\u061cb',
      'a\u00adb',
      'a\ufeffb',
      'a\u2028b',
      'a\u2029b',
      'a\u{e0041}b',
      'a\u3164b', // Hangul filler
      'a\u115fb',
      'a\uffa0b',
      'a\u034fb', // combining grapheme joiner
      'a\u17b4b',
      'a\u180eb',
      'a\ue000b', // private use
      'a\u{f0000}b',
      '\ud800',
      'a\udc00',
      '\udc00\ud800',
      // Unassigned code points and noncharacters.
      'a\u0378b',
      'a\uffffb',
      'a\ufdd0b',
      'a\u{10ffff}b',
      'a\u{10fffe}b',
    ];
    for (const v of refused) assert.equal(isDisplayText(v), false, JSON.stringify(v));
  });

  test('text with nothing visible, marks with no base and stacked marks are refused', () => {
    for (const v of [
      '\u200d\u200d', // only joiners
      '\u200c',
      '\ufe0f\ufe0f', // only variation selectors
      '\u{e0100}',
      '\u2800\u2800', // only braille blanks
      ' \u2800 ',
      '   ',
      '\u00a0\u3000',
      ' \u0301', // a mark on a space, nothing else
      '\u0301a', // a mark with no base
      '\u200d\u0301a',
      '\ufe0fa',
      'a' + '\u0336'.repeat(30), // Zalgo
      'a' + '\u0336'.repeat(5),
      'a\u0336\u0336\u200d\u0336\u0336\u200c\u0336', // joiners between marks count as nothing
      'e\u0301\u0302\u0303\u0304\u0305 x',
    ])
      assert.equal(isDisplayText(v), false, JSON.stringify(v));
  });

  test('letters of any script, marks, emoji, punctuation and spaces pass', () => {
    for (const v of [
      'Acme GmbH',
      'Zürich — Büro',
      '東京支社',
      'שלום',
      'مرحبا',
      'e\u0301',
      'rocket 🚀',
      'می\u200cخواهم', // Persian: the zero-width non-joiner is part of the spelling
      'क्\u200dष', // Devanagari with a zero-width joiner
      'family 👩\u200d👩\u200d👧', // an emoji sequence joined with ZWJ
      'heart \u2764\ufe0f', // emoji presentation selector
      'a\u00a0b',
      'a\u3000b',
      '¥100 & €5 (test) #1',
      '',
      'Nguy\u1ec5n', // Vietnamese, precomposed
      'Nguye\u0302\u0303n', // and decomposed: two marks
      'क्षत्रिय', // Hindi
      'ภาษาไทย กี่', // Thai
      'مُحَمَّد', // Arabic with harakat
      'བསྒྲུབས', // Tibetan stack
      'keycap 1\ufe0f\u20e3',
      '\u2764\ufe0f\u200d\u{1f525}', // heart on fire: selector then joiner
      'a' + '\u0336'.repeat(4), // four marks: the most allowed
      '\u2800x', // a braille blank beside something visible
      '.',
      '🚀',
    ])
      assert.equal(isDisplayText(v), true, v);
  });

  test('escapeRefusedText writes each refused character as an escape and leaves the rest', () => {
    assert.equal(escapeRefusedText('Evil\u001b[2J\nrow\u202e'), 'Evil\\u001b[2J\\u000arow\\u202e');
    assert.equal(escapeRefusedText('tag\u{e0041} lone\ud800'), 'tag\\u{e0041} lone\\ud800');
    assert.equal(escapeRefusedText('a\u0378\uffff\u{10ffff}'), 'a\\u0378\\uffff\\u{10ffff}');
    assert.equal(escapeRefusedText('Zürich 東京 🚀'), 'Zürich 東京 🚀');
    for (const v of ['a\u0085b', 'a\u200bb', 'a\ufeffb', '\udc00\ud800', 'a\u0378b', 'a\ufdd0b'])
      assert.equal(isDisplayText(escapeRefusedText(v)), true, JSON.stringify(v));
  });
});
