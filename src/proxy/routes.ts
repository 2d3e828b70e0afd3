import type { Route } from '../config/schema.js';
import { DECODE_ROUNDS, foldUnicode } from '../guards/decode.js';

/**
 * Builds the route matcher: the longest prefix that matches on a path-segment boundary wins
 * (`/notify/v1` matches `/notify/v1` and `/notify/v1/otps`, never `/notify/v10`).
 *
 * @example
 * const match = createRouteMatcher([{ prefix: '/notify/v1', target: 'http://backend:9090' }]);
 * match('/notify/v1/otps')?.prefix // '/notify/v1'
 */
export function createRouteMatcher<R extends Pick<Route, 'prefix'>>(
  routes: readonly R[],
): (path: string) => R | null {
  const sorted = [...routes].sort((a, b) => b.prefix.length - a.prefix.length);
  return function matchRoute(path: string): R | null {
    for (const r of sorted) {
      if (r.prefix === '/') return r;
      // `;` ends a segment too: Tomcat and Spring read `/notify/v1;x` as `/notify/v1` (a matrix
      // parameter), so it must not fall through to another route such as a catch-all `/`.
      const next = path.charCodeAt(r.prefix.length);
      if (path.startsWith(r.prefix) && (path.length === r.prefix.length || next === 47 || next === 59)) {
        return r;
      }
    }
    return null;
  };
}

// Fixed-length patterns, no quantifier over a class that can overlap: a match attempt never
// backtracks, and one native regex pass is much cheaper than a substring search per escape.
// Escapes refused in the path: NUL and backslash; IIS/Jetty `%uXXXX`; overlong UTF-8 (`%c0%ae` is
// a dot to some decoders, never valid UTF-8).
const REFUSED_ESCAPE = /%(?:00|5[cC]|[uU]|[cC][01]|[eE]0%[89]|[fF]0%8)/;
// Escapes refused in the decoded path: the same, and what a second decoding would turn into a
// dot, `/`, `;` or `%`, or into a new escape: a literal `%` followed by escaped hex digits
// (`%%32e`, `%2%65`, `%%32%65`) or by an escaped `u` (`%%75002e`). Legitimate double encoding
// (`%2520`, `%25C3%25A9`, `%2531`) has none of them; every spelling of a double-encoded dot
// (`%252e`, `%25%32%65`, `%%32e`, `%2%65`...) has one.
const HEX_DIGIT_ESCAPE = '%(?:3[0-9]|[46][1-6])';
const REFUSED_SECOND_ESCAPE = new RegExp(
  `%(?:00|5[cC]|[uU]|[cC][01]|[eE]0%[89]|[fF]0%8|2[5eEfF]|3[bB]|%[57]5|` +
    `${HEX_DIGIT_ESCAPE}(?:[0-9A-Fa-f]|${HEX_DIGIT_ESCAPE})|[0-9A-Fa-f]${HEX_DIGIT_ESCAPE})`,
);
// A dot-like segment: dots and whitespace only, at least one dot (`.`, `..`, `...`, `.. `,
// `. .`, ` ..`), with `/`, `\` and `;` as separators (Tomcat strips `;x` before resolving dot
// segments; `?` and `#`, plain or escaped, end it for an upstream that parses the target again
// after decoding). Windows and IIS drop trailing dots and spaces from a path segment, so `.. ` and
// `...` are `..` to them; some frameworks trim both ends. Every segment follows a separator: the
// path starts with `/`. Linear: a failed attempt backtracks over one segment's dots only.
// Every C0 control and DEL count as whitespace too: Java's `String.trim()` strips every character
// up to U+0020, Python's `str.strip()` strips `\x1c`–`\x1f`.
// eslint-disable-next-line no-control-regex -- control characters are what it looks for
const DOT_SEGMENT = /[/\\;][\s\0-\x1f\x7f]*\.[.\s\0-\x1f\x7f]*(?:[/\\;?#]|%3[fF]|%23|$)/;
const NON_ASCII = /[^\0-\x7f]/;
// In the NFKC-folded form, more characters some runtime trims, drops or maps:
// - ignorable: JS `\s`, C0 and C1 controls and DEL (NEL U+0085 is trimmed by Python and Go),
//   soft hyphen, combining grapheme joiner, Arabic letter mark, Hangul fillers, Khmer and Mongolian
//   invisible vowels and selectors, zero-width and bidi format characters (U+200B–U+200F,
//   U+2028–U+202F, U+2060–U+206F), variation selectors, BOM;
// - dots: `.`, Arabic and Syriac full stops (U+06D4, U+0701, U+0702), the ideographic full stop
//   U+3002 (which NFKC leaves alone; half-width and vertical forms fold to it), the one-dot leader,
//   small and full-width full stops (they fold to `.`), stenographic full stop, Lisu and Vai ones;
// - separators: `/`, `\`, `;`, and what Windows best-fit and code-page conversions turn into `/`
//   or `\`: division slash ∕ U+2215, fraction slash ⁄ U+2044, set minus ∖ U+2216, reverse solidus
//   operator ⧵ U+29F5, big solidi ⧸ ⧹, box-drawing diagonals ╱ ╲, small reverse solidus ﹨ U+FE68,
//   yen ¥ U+00A5 (`\` under Japanese code pages) and won ₩ U+20A9 (Korean). They are refused
//   next to a dot-like segment only, not outright: `¥` and `₩` have legitimate uses in a path.
const IGNORABLE =
  '\\s\\0-\\x1f\\x7f-\\xa0\\xad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f' +
  '\\u200b-\\u200f\\u2028-\\u202f\\u205f-\\u206f\\u3000\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0';
const DOT_LIKE = '.\\u06d4\\u0701\\u0702\\u2024\\u2e3c\\u3002\\ua4f8\\ua60e\\ufe12\\ufe52\\uff0e\\uff61';
const SEPARATOR_LIKE =
  '/\\\\;\\xa5\\u20a9\\u2044\\u2215\\u2216\\u2571\\u2572\\u29f5\\u29f8\\u29f9\\ufe68\\uff0f\\uff3c\\uffe5\\uffe6';
// Same shape as DOT_SEGMENT (the three classes are disjoint): linear in the same way. The classes
// hold combining marks and variation selectors on purpose: each is matched on its own.
const FOLDED_DOT_SEGMENT = new RegExp(
  // eslint-disable-next-line no-misleading-character-class
  `[${SEPARATOR_LIKE}][${IGNORABLE}]*[${DOT_LIKE}][${DOT_LIKE}${IGNORABLE}]*` +
    `(?:[${SEPARATOR_LIKE}?#]|%3[fF]|%23|$)`,
);

/** Backslash or NUL, or a dot-like segment; native substring searches first (a regex pass costs more). */
function showsUnsafeAscii(s: string): boolean {
  if (s.includes('\\') || s.includes('\0')) return true;
  return s.includes('.') && DOT_SEGMENT.test(s);
}

/**
 * `showsUnsafeAscii` on `s` and, when it holds non-ASCII (UTF-8 bytes as latin1 characters, from a
 * raw or decoded target), on its NFKC fold: full-width `．`, the one-dot leader `․`, `‥`, `…`
 * become dots, `／` and `＼` separators, `％` a `%` (a folded escape that decodes to a dot, `/`,
 * `;` or `%` is refused too), NBSP and ideographic spaces plain spaces. The fold runs only for a
 * non-ASCII form.
 */
function showsUnsafe(s: string): boolean {
  if (showsUnsafeAscii(s)) return true;
  if (!NON_ASCII.test(s)) return false;
  const folded = foldUnicode(s);
  return (
    showsUnsafeAscii(folded) ||
    FOLDED_DOT_SEGMENT.test(folded) ||
    (folded.includes('%') && REFUSED_LATER_ESCAPE.test(folded) && !REFUSED_LATER_ESCAPE.test(s))
  );
}

// Short paths are decoded round by round, as long as they still change (up to the cap): what each
// round shows is checked, and only then is the next round made. Longer ones are decoded once
// (cost: a 16 KB target of nested escapes must not cost 8 decodes before authentication).
const MULTI_ROUND_MAX_LENGTH = 2048;
// Refused in the 2nd to 8th decoded forms: a dot, `/` or `;` still encoded, plus REFUSED_ESCAPE.
const REFUSED_LATER_ESCAPE = /%(?:00|5[cC]|[uU]|[cC][01]|[eE]0%[89]|[fF]0%8|2[eEfF]|3[bB])/;
const VALID_ESCAPE = /%[0-9A-Fa-f]{2}/;
// Escapes whose decoding changes no separator or dot but can make a segment dot-like: whitespace
// and control characters, DEL included (`..%20`, `..%09`, `..%7f`), and non-ASCII bytes (`%ef%bc%8e`, a full-width dot).
const RESHAPING_ESCAPE = /%(?:[01][0-9A-Fa-f]|20|7[fF]|[89A-Fa-f][0-9A-Fa-f])/;

/**
 * Whether a request target is a plain origin-form path the gateway can route safely (threat model:
 * T2): starts with `/`, holds no empty segment (`//`) or fragment, and no decoded form of it shows
 * a dot segment (`/`, `\` or `;` as separators), a backslash or a NUL, or holds a `%u` or overlong
 * escape. An upstream that decodes the path any number of times, then resolves dot segments,
 * sees the segments the route matcher and the scope check saw (they compare the raw path). How:
 * - the path and its once-decoded form are checked; in the decoded form an escape that another
 *   decoding would make a dot, `/`, `;` or part of a new escape is refused outright (every
 *   spelling of a double-encoded dot: `%252e`, `%25%32%65`, `%%32e`, `%2%65`...);
 * - a path of up to 2048 characters whose decoded form still holds a `%25` (encoded three times or
 *   more) is decoded on, round by round, each form checked, up to 8 decodings; one still decoding
 *   after the 8th is refused. A longer one is refused (`%25` in its decoded form, as above).
 * After that no further decoding makes a new escape or separator.
 *
 * Cost: linear; at most one native `%`-decode and a few native passes, and for a path of up to
 * 2048 characters at most 8 decodes of it. No backtracking, never throws.
 */
export function isSafeRequestPath(path: string): boolean {
  // Empty segments (`//`): the path is forwarded as sent, but many servers merge them, so an
  // upstream could resolve `/a//b` to another route than the one matched here. Fragments are
  // never part of a request target.
  if (path.charCodeAt(0) !== 47 || path.includes('//') || path.includes('#') || showsUnsafe(path))
    return false;
  if (!path.includes('%')) return true;
  // Without any of these escapes, decoding changes no separator, dot or escape and makes no
  // segment dot-like: nothing to decode.
  if (!REFUSED_SECOND_ESCAPE.test(path) && !RESHAPING_ESCAPE.test(path)) return true;
  if (REFUSED_ESCAPE.test(path)) return false;
  // %XX → the byte as a Latin-1 character (UTF-8 is put together by the fold in `showsUnsafe`);
  // a malformed `%` stays literal, as upstreams do, so `%%32e` gives `%2e`. `unescape` does
  // exactly that natively once `%u` is refused (above), and never throws.
  let decoded = unescape(path);
  if (decoded.length === path.length) return true; // nothing decoded
  if (showsUnsafe(decoded)) return false;
  if (!decoded.includes('%')) return true;
  // No escape left that a decoding would make a dot, `/`, `;`, `%` or a new escape: one more
  // decoding can only make whitespace or non-ASCII characters (`%2520` → ` `), and after that
  // nothing changes. Checked once more when it can make a segment dot-like (`%2e%2e%2520`).
  if (!REFUSED_SECOND_ESCAPE.test(decoded))
    return !RESHAPING_ESCAPE.test(decoded) || !showsUnsafe(unescape(decoded));
  if (path.length > MULTI_ROUND_MAX_LENGTH || !decoded.includes('%25')) return false;
  for (let round = 1; ; round++) {
    if (showsUnsafe(decoded)) return false;
    if (!decoded.includes('%')) return true;
    if (REFUSED_LATER_ESCAPE.test(decoded)) return false;
    if (round === DECODE_ROUNDS) return !VALID_ESCAPE.test(decoded);
    const next = unescape(decoded);
    if (next.length === decoded.length) return true;
    decoded = next;
  }
}

/**
 * Methods the gateway never forwards, whatever the route: `TRACE` and `TRACK` echo the request
 * back, headers the gateway added (company id, signature) included; `CONNECT` asks for a tunnel.
 */
export const REFUSED_METHODS: ReadonlySet<string> = new Set(['TRACE', 'TRACK', 'CONNECT']);

/** What a route without its own `methods` list forwards. */
export const DEFAULT_ROUTE_METHODS: readonly string[] = [
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
  'OPTIONS',
];

/** Which methods a route forwards, and the `Allow` header value of its 405 answers. */
export interface MethodRule {
  allows(method: string): boolean;
  /** `Allow` header value: the methods in config order, `HEAD` after `GET` when implied. */
  allow: string;
}

const rules = new WeakMap<object, MethodRule>();

/**
 * The method rule of a route (computed once per route object): its `methods` list, or
 * `DEFAULT_ROUTE_METHODS` without one. `GET` implies `HEAD` (a HEAD is a GET without the body,
 * RFC 9110 §9.3.2). `REFUSED_METHODS` are never allowed, even when listed.
 *
 * @example
 * methodRuleOf({ prefix: '/a', methods: ['GET', 'POST'] }).allow // 'GET, HEAD, POST'
 */
export function methodRuleOf(route: { methods?: readonly string[] | undefined }): MethodRule {
  let rule = rules.get(route);
  if (rule) return rule;
  const listed = route.methods ?? DEFAULT_ROUTE_METHODS;
  const methods: string[] = [];
  for (const m of listed) {
    if (REFUSED_METHODS.has(m) || methods.includes(m)) continue;
    methods.push(m);
    if (m === 'GET' && !listed.includes('HEAD')) methods.push('HEAD');
  }
  const set = new Set(methods);
  rule = { allows: (method) => set.has(method), allow: methods.join(', ') };
  rules.set(route, rule);
  return rule;
}
