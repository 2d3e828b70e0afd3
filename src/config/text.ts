// Free text (company names, key labels) is shown in terminals, logs, the console and audit
// entries, so one rule for every way it comes in: the admin API, the CLI, the key file and apply.

/**
 * Characters free text must not hold:
 * - `\p{Cc}`: C0 controls (line breaks, tab, ESC, NUL), DEL and C1 controls (NEL U+0085, CSI
 *   U+009B): they move the cursor, recolour a terminal, or forge a log line or table row;
 * - `\p{Cf}`: format characters, invisible but reordering or hiding text: bidi marks, embeddings,
 *   overrides and isolates (U+200E/U+200F, U+202A–U+202E, U+2066–U+2069, U+061C), zero-width
 *   space and word joiner (U+200B, U+2060), BOM U+FEFF, soft hyphen, tags; the zero-width
 *   non-joiner and joiner (U+200C, U+200D) pass: Persian, Indic scripts and emoji sequences need
 *   them, and they change no order;
 * - `\p{Zl}`, `\p{Zp}`: the line and paragraph separators U+2028 and U+2029;
 * - `\p{Cs}`: an unpaired surrogate (not text at all; with the `u` flag a pair is one code point,
 *   so emoji and other characters outside the BMP pass);
 * - `\p{Co}`: private-use characters (no agreed glyph);
 * - `\p{Cn}`: unassigned code points and noncharacters (U+0378, U+FDD0, U+FFFF, U+10FFFF): no
 *   glyph yet, and a later Unicode version may make them anything;
 * - every other default-ignorable code point, which renders as nothing: Hangul fillers (U+115F,
 *   U+1160, U+3164, U+FFA0), the combining grapheme joiner U+034F, Khmer and Mongolian invisible
 *   vowels and selectors. Variation selectors pass: emoji
 *   presentation (`❤️`) needs them.
 * Letters of every script, marks, digits, punctuation, symbols and spaces (NBSP included) pass.
 * test/unit/config/text.test.ts tries a member of each class.
 */
const REFUSED_TEXT_CHARACTER =
  // eslint-disable-next-line no-misleading-character-class -- joiners and selectors are matched one by one, on purpose
  /(?![\u200c\u200d\ufe00-\ufe0f\u{e0100}-\u{e01ef}])[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}]/u;

/**
 * A character that shows: a letter, digit, punctuation or symbol, but not the braille blank
 * U+2800 (a symbol drawn as nothing). Non-empty text needs one, so a name made only of joiners,
 * variation selectors, marks, spaces or braille blanks is refused.
 */
const VISIBLE_CHARACTER = /(?!\u2800)[\p{L}\p{N}\p{P}\p{S}]/u;

/**
 * Combining marks with nothing to combine with (at the start, joiners aside), or more than
 * MAX_MARKS in a row (joiners between them counted as nothing): stacked marks draw over the lines
 * above and below ("Zalgo" text). No script needs more: Vietnamese `ễ` decomposed is two,
 * Devanagari, Thai, Tibetan stacks and Arabic harakat at most three or four, `❤️` one (U+FE0F is a
 * mark), a keycap `1️⃣` two.
 */
const MAX_MARKS = 4;
const MISPLACED_MARKS = new RegExp(
  `^[\\u200c\\u200d]*\\p{M}|(?:\\p{M}[\\u200c\\u200d]*){${MAX_MARKS + 1}}`,
  'u',
);

/** The message of a refusal (the field is named by the caller's schema path). */
export const DISPLAY_TEXT_MESSAGE =
  'must not contain control characters (line breaks, tabs, escapes), invisible format characters ' +
  '(bidi marks and overrides, zero-width characters, BOM, fillers), private-use characters, unassigned ' +
  'code points or unpaired surrogates, must show at least one letter, digit, punctuation mark or ' +
  `symbol, and must not start with a combining mark or stack more than ${MAX_MARKS} in a row`;

/**
 * Whether `v` is free text that can be shown as it is: none of the refused characters, at least one
 * visible character, and no misplaced or stacked combining marks. The empty string passes (the
 * callers' schemas say whether a value may be empty).
 */
export function isDisplayText(v: string): boolean {
  if (v === '') return true;
  return !REFUSED_TEXT_CHARACTER.test(v) && VISIBLE_CHARACTER.test(v) && !MISPLACED_MARKS.test(v);
}

// eslint-disable-next-line no-misleading-character-class -- as above
const REFUSED_TEXT_CHARACTERS = new RegExp(REFUSED_TEXT_CHARACTER.source, 'gu');

/**
 * `v` with every character `isDisplayText` refuses written as an escape (`\u001b`, `\u202e`,
 * `\u{e0041}`, `\u0378`), for text stored before the rule (or by a store of one's own) that is
 * printed to a terminal: it cannot move the cursor, recolour, reorder or forge a row. The
 * whole-text rules (something visible, no misplaced or stacked marks) are not escaped: such text
 * shows as blank or smeared, but cannot reorder or forge anything.
 */
export function escapeRefusedText(v: string): string {
  return v.replace(REFUSED_TEXT_CHARACTERS, (ch) => {
    const cp = ch.codePointAt(0)!;
    return cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, '0')}`;
  });
}
