import type { IncomingHttpHeaders } from 'node:http';

/**
 * Method overrides in form bodies. Rails (Rack::MethodOverride), Laravel, Symfony, Go's
 * gorilla/handlers and Express's method-override (with a body getter) run the method named by a
 * `_method` field of a POSTed form instead of the request's own, so a form body carrying one would
 * get past a route's `methods` and a key's scopes. The route proxy buffers form bodies, asks this
 * module whether one names an override parameter, and refuses it (`METHOD_OVERRIDE_IN_BODY`).
 *
 * Names are compared the way the frameworks' parsers would read them, plus PHP's variable-name
 * rules, widened where that costs nothing: leading whitespace dropped (PHP drops leading spaces),
 * `' '`, `.` and `-` read as `_` (PHP turns `' '`, `.` and an unmatched `[` into `_`), any case,
 * the name cut at its first `[` (`_method[]` and `_method[x]` are PHP's and Rack's array
 * `_method`), NUL bytes ignored (a UTF-16 body) or ending the name (PHP stops there). Each name
 * is also read with `.` as qs reads it under `allowDots`: like `[`/`]`, dropped while leading and
 * ending the name after (`._method`, `._method.`), a key when either reading is one. A urlencoded
 * name is %-decoded once (`%XX`, and `%uXXXX` as .NET reads it), `+` is a space; pieces are split at
 * `&` and `;`.
 *
 * Multipart bodies are not split at their boundary (a parser differential between the gateway and
 * the upstream would be a way past): every `name` parameter anywhere in the body is read, as in
 * `Content-Disposition: form-data; name="_method"`, quoted with `"` or `'` (PHP) with `\` escapes,
 * or a token, as sent and %-decoded, RFC 2231 (`name*=utf-8''%5Fmethod`) and its continuations
 * (`name*0`, `name*1`..., joined in index order), and RFC 2047 encoded words
 * (`=?utf-8?B?X21ldGhvZA==?=`, which Commons FileUpload decodes for Spring), and every
 * `Content-ID:` line's value (Rack names a part without a `name` by it). Every `multipart/*` subtype
 * is read so (Rack parses `multipart/related` and `multipart/mixed`). A file whose content holds
 * such a line is refused too.
 *
 * JSON bodies (Laravel replaces its input with a JSON body's, so `{"_method":"DELETE"}` is a
 * DELETE; Express's method-override reads `req.body._method`) are refused when an object key, at
 * any depth and after JSON unescaping, is exactly a configured name; see jsonNamesOverride.
 *
 * Cost: linear in the body's length, with no allocation per name or parameter. A urlencoded body is
 * read in one pass; a multipart one by one forward `indexOf` per `=`. Each name is read once and no
 * further than the longest configured name allows (plus leading whitespace), so no piece of the
 * body is read more than a bounded number of times. `bench/form-scan.ts` measures the shapes.
 */

/**
 * The body kinds the scanner reads: a urlencoded or multipart form, JSON, or a form whose
 * Content-Type also mentions `json` (`urlencoded+json`, `multipart+json`: read both ways, since
 * Laravel reads any body whose Content-Type holds `/json` or `+json`, parameters included, as JSON).
 */
export type FormKind = 'urlencoded' | 'multipart' | 'json' | 'urlencoded+json' | 'multipart+json';

/**
 * What a request's headers say about its body: `none` (no body, or neither a form nor JSON: streamed
 * as before), a kind (buffered and scanned), or `unreadable`: a body the gateway cannot read as sent
 * (`Content-Encoding` other than identity, a transfer coding other than chunked, or a charset that
 * is not ASCII-compatible), so it cannot tell whether it names an override.
 */
export type FormBodyKind = 'none' | FormKind | 'unreadable';

/**
 * Charsets in which `_method` and the separators are the ASCII bytes, as the scanner reads them.
 * Others (UTF-16, UTF-32, UTF-7, EBCDIC such as IBM037...) make a body unreadable.
 */
const ASCII_COMPATIBLE =
  /^(?:utf-?8|(?:us-)?ascii|iso-?8859-\d{1,2}|latin-?\d|l\d|(?:windows|cp)-?125\d|shift_jis|sjis|euc-(?:jp|kr|cn)|gbk|gb2312|gb18030|big5|koi8-[ru])$/;

/**
 * Classifies a request body from its headers. A body is present when `Content-Length` is not 0 or a
 * `Transfer-Encoding` is sent. The media type is what precedes the first `;`, `,` or whitespace, in
 * any case; a body without `Content-Type` counts as urlencoded (Rack parses a POST without one as a
 * form), every `multipart/*` subtype as multipart (Rack parses `multipart/related` and
 * `multipart/mixed` like `multipart/form-data`), and a Content-Type that holds `json` anywhere (in
 * any case: `application/json`, `application/*+json`, `text/json`, or a parameter, as Laravel's
 * `isJson()` reads it) as JSON, or as a form and JSON when its media type is a form's.
 *
 * @example
 * formBodyKind({ 'content-type': 'Multipart/Mixed; boundary=x', 'content-length': '120' }) // 'multipart'
 * formBodyKind({ 'content-type': 'application/vnd.api+json', 'content-length': '2' }) // 'json'
 */
export function formBodyKind(headers: IncomingHttpHeaders): FormBodyKind {
  const te = headers['transfer-encoding'];
  const cl = headers['content-length'];
  if (te === undefined && (cl === undefined || Number(cl) === 0)) return 'none';
  const ct = headers['content-type'] ?? '';
  const type = mediaType(ct);
  const form: 'urlencoded' | 'multipart' | null =
    type === '' || type === 'application/x-www-form-urlencoded'
      ? 'urlencoded'
      : type.startsWith('multipart/')
        ? 'multipart'
        : null;
  // The media type names JSON, or the header holds `/json` or `+json` (Laravel's isJson()).
  const json = type.includes('json') || /[/+]json/i.test(ct);
  const kind: FormKind | null = form === null ? (json ? 'json' : null) : json ? `${form}+json` : form;
  if (kind === null) return 'none';
  if (!onlyTokens(headers['content-encoding'], 'identity') || !onlyTokens(te, 'chunked')) return 'unreadable';
  if (!charsetsOf(ct).every((c) => ASCII_COMPATIBLE.test(c))) return 'unreadable';
  return kind;
}

/** The lowercase media type: up to the first `;`, `,`, space or tab, leading whitespace dropped. */
function mediaType(ct: string): string {
  const s = ct.trimStart();
  let end = s.length;
  for (const sep of [';', ',', ' ', '\t']) {
    const at = s.indexOf(sep);
    if (at !== -1 && at < end) end = at;
  }
  return s.slice(0, end).toLowerCase();
}

/** True when the header is absent or each of its comma-separated tokens is `allowed` (any case). */
function onlyTokens(value: string | undefined, allowed: string): boolean {
  if (value === undefined) return true;
  return value.split(',').every((t) => {
    const v = t.trim().toLowerCase();
    return v === '' || v === allowed;
  });
}

/**
 * Every value a `charset=` anywhere in a Content-Type gives, lowercase and unquoted: the parameter,
 * and any other place a parser could find one (Tomcat takes the first `charset=` in the header,
 * so `xcharset=IBM037` is a charset to it; `charset*=` too). Linear: one global regex pass.
 */
function charsetsOf(ct: string): string[] {
  if (!/charset/i.test(ct)) return [];
  return [...ct.matchAll(/charset\s*\*?\s*=\s*("?)([^";,\s]*)\1/gi)].map((m) => m[2]!.toLowerCase());
}

/**
 * Builds the scanner for the configured override parameter names (`urlKeyGuard.methodOverrideParams`).
 * Returns true when the body names one of them: a form field (see the module's comment), or a JSON
 * object key (see jsonNamesOverride). A `+json` kind is read both ways.
 *
 * @example
 * const names = createFormOverrideScanner(['_method']);
 * names(Buffer.from('a=1&+_METHOD[]=DELETE'), 'urlencoded') // true
 * names(Buffer.from('{"a":{"\\u005fmethod":"DELETE"}}'), 'json') // true
 */
export function createFormOverrideScanner(
  names: readonly string[],
): (body: Buffer, kind: FormKind) => boolean {
  const keys = new Set<string>();
  for (const n of names) {
    const key = normalisedName(n);
    if (key !== '') keys.add(key);
  }
  const trie: TrieNode = { next: new Map(), end: false };
  for (const k of keys) addKey(trie, k);
  const max = Math.max(0, ...[...keys].map((k) => k.length));
  // First characters a name can start with: a key's first (any case), or one read as `_`.
  const starts = new Set<number>([0x2e, 0x2d, SPACE]);
  for (const k of keys) starts.add(k.charCodeAt(0));
  const scan = { trie, starts, max };
  const json = jsonScan(names);
  return function bodyNamesOverride(body, kind) {
    if (keys.size === 0 || body.length === 0) return false;
    // Read as bytes (the names compared are ASCII). Not as a string: V8's indexOf on the external
    // string a large Buffer becomes was measured quadratic (a 2 MiB form took 29 s).
    if (kind === 'json') return jsonNamesOverride(body, json);
    if (kind.endsWith('+json') && jsonNamesOverride(body, json)) return true;
    return kind.startsWith('urlencoded')
      ? urlencodedNamesOverride(body, scan)
      : multipartNamesOverride(body, scan) ||
          contentIdNamesOverride(body, scan) ||
          joinedHeadersOverride(body, scan);
  };
}

/**
 * PHP's multipart parser (`multipart_buffer_headers`, so Laravel and Symfony) joins a part's header
 * line that starts with whitespace or holds no `:` onto the header before it, without the line
 * break: `name=\r\n_method`, `name="_metho\r\nd"` and `na\r\nme="_method"` name `_method`
 * there. When a part's headers hold such a line, they are joined that way and scanned again. A part's
 * headers are the lines after a line starting with `--` (a boundary) up to the first empty line.
 * Linear: one pass over the lines; the joined copy holds header lines only.
 */
function joinedHeadersOverride(s: Buffer, scan: Scan): boolean {
  // A first pass only looks for a joined line (no allocation); most bodies have none.
  if (!joinHeaderLines(s, null)) return false;
  const view = Buffer.allocUnsafe(2 * s.length + 2);
  const length = joinHeaderLines(s, view);
  const joined = view.subarray(0, length);
  return multipartNamesOverride(joined, scan) || contentIdNamesOverride(joined, scan);
}

/**
 * One pass over the lines of `s`: with `out` null, whether any part's header line would be joined
 * onto the one before; with `out`, the header lines written into it, each new header after a CRLF
 * and each joined line straight after the one before, and the length written.
 */
function joinHeaderLines(s: Buffer, out: Buffer | null): number {
  let at = 0;
  let inHeaders = false;
  let afterHeader = false;
  for (let i = 0; i < s.length;) {
    let nl = s.indexOf(0x0a, i);
    if (nl === -1) nl = s.length;
    const end = nl > i && s[nl - 1] === 0x0d ? nl - 1 : nl;
    if (!inHeaders) {
      inHeaders = end - i >= 2 && s[i] === 0x2d && s[i + 1] === 0x2d;
      afterHeader = false;
    } else if (end === i) inHeaders = false;
    else {
      const startsBlank = isWhitespace(s[i]!);
      let colon = false;
      for (let j = i; j < end && !colon; j++) colon = s[j] === 0x3a;
      if (afterHeader && (startsBlank || !colon)) {
        if (out === null) return 1;
        at += s.copy(out, at, i, end);
      } else if (colon && !startsBlank) {
        if (out !== null) {
          out[at++] = 0x0d;
          out[at++] = 0x0a;
          at += s.copy(out, at, i, end);
        }
        afterHeader = true;
      }
    }
    i = nl + 1;
  }
  return out === null ? 0 : at;
}

interface Scan {
  /** The configured keys, as compared. */
  trie: TrieNode;
  /** Lowercase character codes a name that can match may start with (after leading whitespace). */
  starts: Set<number>;
  /** Length of the longest key: a name is read no further. */
  max: number;
}

const SPACE = 0x20;
const PLUS = 0x2b;
const PERCENT = 0x25;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const BACKSLASH = 0x5c;
const EQUALS = 0x3d;
const QUESTION = 0x3f;
const DOT = 0x2e;

/**
 * Longest charset label (with an RFC 2231 `*language` suffix) read in an RFC 2047 encoded word.
 * IANA charset names are at most 40 characters (RFC 2978); a longer label names no charset a parser
 * would decode with, so the word is left as it is.
 */
const LABEL_MAX = 64;

function isWhitespace(c: number): boolean {
  return c === SPACE || (c >= 0x09 && c <= 0x0d);
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const l = c | 0x20;
  return l >= 97 && l <= 102 ? l - 87 : -1;
}

/** A body, or a piece of one, read byte by byte. */
type Bytes = Uint8Array;

/** A trie of the configured keys, by character code. */
interface TrieNode {
  next: Map<number, TrieNode>;
  /** A key ends here. */
  end: boolean;
}

function addKey(root: TrieNode, key: string): void {
  let node = root;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    let child = node.next.get(c);
    if (!child) node.next.set(c, (child = { next: new Map(), end: false }));
    node = child;
  }
  node.end = true;
}

/**
 * The escape at `s[i]` when `%`-decoding: `%XX`, or `%uXXXX` (IIS and .NET's `HttpUtility.UrlDecode`
 * read it; any code unit above U+00FF becomes 0x100, which no key holds). Sets `escLength` to the
 * escape's length, 0 when there is none.
 */
let escLength = 0;
function escapeAt(s: Bytes, i: number, end: number): number {
  escLength = 0;
  if (i + 2 >= end) return -1;
  const a = s[i + 1]!;
  if ((a | 0x20) === 0x75 /* u */ && i + 5 < end) {
    const h1 = hexValue(s[i + 2]!);
    const h2 = hexValue(s[i + 3]!);
    const h3 = hexValue(s[i + 4]!);
    const h4 = hexValue(s[i + 5]!);
    if (h1 !== -1 && h2 !== -1 && h3 !== -1 && h4 !== -1) {
      escLength = 6;
      return h1 === 0 && h2 === 0 ? h3 * 16 + h4 : 0x100;
    }
  }
  const hi = hexValue(a);
  const lo = hexValue(s[i + 2]!);
  if (hi === -1 || lo === -1) return -1;
  escLength = 3;
  return hi * 16 + lo;
}

/**
 * Each character of the name `s[start, end)` as it is compared, passed to `visit` until it returns
 * false: leading whitespace, `[` and `]` dropped, `' '`, `.` and `-` as `_`, lowercase, NUL as 0;
 * stops at the first `[` or `]` after that (Rack's `normalize_params` reads `[_method]`, `]_method`
 * and `_method]` as `_method`, qs reads `[_method]` so, PHP `_method[]` as an array `_method`). `%`-decodes once (`%XX` and `%uXXXX`) when `decode`, reads `+` as a space when `plus`.
 */
function readName(
  s: Bytes,
  start: number,
  end: number,
  decode: boolean,
  plus: boolean,
  visit: (c: number) => boolean,
): void {
  let leading = true;
  for (let i = start; i < end; i++) {
    let c = s[i]!;
    if (decode && c === PERCENT) {
      const d = escapeAt(s, i, end);
      if (d !== -1) {
        c = d;
        i += escLength - 1;
      }
    } else if (plus && c === PLUS) c = SPACE;
    if (leading && c !== 0 && (isWhitespace(c) || isBracket(c))) continue;
    if (c !== 0) leading = false;
    if (isBracket(c)) return;
    if (!visit(c === SPACE || c === 0x2e /* . */ || c === 0x2d /* - */ ? 0x5f : lower(c))) return;
  }
}

/** A configured name as it is compared (no decoding). */
function normalisedName(name: string): string {
  let out = '';
  const bytes = Buffer.from(name, 'utf8');
  readName(bytes, 0, bytes.length, false, false, (c) => {
    if (c !== 0) out += String.fromCharCode(c);
    return true;
  });
  return out;
}

/** `[` or `]`: dropped before a name, and the end of one after it. */
function isBracket(c: number): boolean {
  return c === 0x5b || c === 0x5d;
}

function lower(c: number): number {
  return c >= 65 && c <= 90 ? c + 32 : c;
}

/**
 * Whether the name `s[start, end)` is a configured key, read two ways at once: NUL bytes ignored (a
 * UTF-16 body), and the name ending at its first NUL (PHP). Walks the keys' trie, so it stops as
 * soon as neither reading can become a key: a name is read no further than the longest key, plus
 * its leading whitespace and NULs. No allocation (the loop is readName's, inlined).
 *
 * With `dots`, a `.` is read as qs reads it with `allowDots` (Express's `urlencoded({ extended:
 * true })` can set it): like `[`/`]`, dropped while leading and ending the name after (`._method`
 * and `._method.` are `_method`, `a._method` is a key inside `a`). The first reading (`dots` false,
 * PHP's `.` as `_`) asks for it itself, only when its walk met a `.` before it stopped: until its
 * first `.` the second reading is the first one, so a name the first walk left before any `.` is
 * no key the second way either. The second walk stops no later than the first, so each name is
 * read at most twice, no further than the longest key: still linear.
 */
function nameMatches(
  s: Bytes,
  start: number,
  end: number,
  decode: boolean,
  plus: boolean,
  scan: Scan,
  dots = false,
): boolean {
  // Most names are rejected by their first character.
  if (start >= end || !mayStart(s[start]!, scan)) return false;
  let skipNul: TrieNode | undefined = scan.trie;
  let cutNul: TrieNode | undefined = scan.trie;
  let cut = false;
  let leading = true;
  let sawDot = false;
  for (let i = start; i < end; i++) {
    let c = s[i]!;
    if (decode && c === PERCENT) {
      const d = escapeAt(s, i, end);
      if (d !== -1) {
        c = d;
        i += escLength - 1;
      }
    } else if (plus && c === PLUS) c = SPACE;
    const stop = isBracket(c) || (dots && c === DOT);
    if (leading && c !== 0 && (isWhitespace(c) || stop)) continue;
    if (c === 0) {
      cut = true;
      continue;
    }
    leading = false;
    if (stop) break;
    if (c === DOT) sawDot = true;
    const k = c === SPACE || c === DOT || c === 0x2d /* - */ ? 0x5f : lower(c);
    skipNul = skipNul?.next.get(k);
    if (!cut) cutNul = cutNul?.next.get(k);
    // Neither reading can go further: the cut one may still have ended on a key.
    if (skipNul === undefined && (cut || cutNul === undefined)) break;
  }
  return (
    skipNul?.end === true ||
    cutNul?.end === true ||
    (sawDot && nameMatches(s, start, end, decode, plus, scan, true))
  );
}

/**
 * `a=1&_method=DELETE`: each piece between `&` or `;`, its name up to its first `=`. One pass over
 * the bytes (a native search per separator was measured slower when separators are dense: `&;=`).
 */
function urlencodedNamesOverride(s: Bytes, scan: Scan): boolean {
  let start = 0;
  let nameEnd = -1;
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s[i]!;
    if (c === 0x26 /* & */ || c === 0x3b /* ; */) {
      const e = nameEnd === -1 ? i : nameEnd;
      if (e > start && nameMatches(s, start, e, true, true, scan)) return true;
      start = i + 1;
      nameEnd = -1;
    } else if (c === EQUALS && nameEnd === -1) nameEnd = i;
  }
  const e = nameEnd === -1 ? n : nameEnd;
  return e > start && nameMatches(s, start, e, true, true, scan);
}

/**
 * Every `name` parameter in the body: `name=`, `name*=`, `name*N=`, `name*N*=` (any case, spaces
 * before `=` allowed), not preceded by a letter or digit (`filename=` is not one).
 */
function multipartNamesOverride(s: Buffer, scan: Scan): boolean {
  // Raw characters of a value worth reading: the longest key, each character %-encoded.
  const maxRaw = 3 * (scan.max + 1) + 8;
  // Raw characters of a value read for RFC 2047 encoded words: one word per character of the
  // longest key (plus one), each with the longest label.
  const maxWords = (scan.max + 2) * (LABEL_MAX + 12);
  const value = new Uint8Array(maxRaw + 1);
  const decoded = new Uint8Array(maxRaw + 1);
  // RFC 2231 continuations of the current parameter, in index order: their indexes and lengths, and
  // their bytes joined in `pool`. Only while the joined value could still be a key (maxRaw bytes).
  const pool = new Uint8Array(2 * maxRaw + 2);
  const pieceIndex: number[] = [];
  const pieceLength: number[] = [];
  let pooled = 0;
  let pieces = 0;
  let full = false;
  for (let eq = s.indexOf(EQUALS); eq !== -1; eq = s.indexOf(EQUALS, eq + 1)) {
    const index = paramBefore(s, eq);
    if (index === NOT_NAME) continue;
    const extended = paramExtended;
    if (index === -1) {
      // A plain `name=` whose value cannot start a key is not read further.
      if (!extended && !valueMayStart(s, eq + 1, scan)) continue;
      const vl = valueAfter(s, eq + 1, maxRaw, value);
      const text = extended ? decoded : value;
      const tl = extended ? extendedValue(value, vl, decoded) : vl;
      if (tl > 0) {
        if (nameMatches(text, 0, tl, false, false, scan)) return true;
        // Some parsers %-decode names (HTML forms escape `"` and line breaks that way).
        if (nameMatches(text, 0, tl, true, false, scan)) return true;
        // RFC 2047 encoded words (Commons FileUpload's ParameterParser runs MimeUtility.decodeText),
        // read again from the body, further than maxRaw (a word carries its label), when the value
        // read holds one: a word past it would follow more than maxRaw other characters, so no key.
        // In an RFC 2231 value, the words are read after its %-decoding.
        if (hasWord(text, tl)) {
          const words = extended
            ? encodedWordsMatch(text, 0, tl, scan)
            : encodedWordsMatch(s, eq + 1, Math.min(s.length, eq + 1 + maxWords), scan);
          if (words) return true;
        }
      }
      continue;
    }
    // RFC 2231 continuation: a repeated index starts the next parameter's pieces.
    let at = 0;
    while (at < pieces && pieceIndex[at]! < index) at++;
    if (at < pieces && pieceIndex[at] === index) {
      pieces = pooled = at = 0;
      full = false;
    }
    // Longer than any name (leading whitespace aside): the rest of this parameter is not read.
    if (full) continue;
    const vl = valueAfter(s, eq + 1, maxRaw, value);
    const text = extended ? decoded : value;
    const tl = extended ? extendedValue(value, vl, decoded) : vl;
    // Empty pieces add nothing to the name.
    if (tl === 0) continue;
    if (pooled + tl > maxRaw) {
      full = true;
      continue;
    }
    let offset = 0;
    for (let p = 0; p < at; p++) offset += pieceLength[p]!;
    pool.copyWithin(offset + tl, offset, pooled);
    pool.set(text.subarray(0, tl), offset);
    for (let p = pieces; p > at; p--) {
      pieceIndex[p] = pieceIndex[p - 1]!;
      pieceLength[p] = pieceLength[p - 1]!;
    }
    pieceIndex[at] = index;
    pieceLength[at] = tl;
    pieces++;
    pooled += tl;
    if (nameMatches(pool, 0, pooled, false, false, scan)) return true;
    // Encoded words across the joined pieces (the pool is bounded, so this is too).
    if (hasWord(pool, pooled) && encodedWordsMatch(pool, 0, pooled, scan)) return true;
  }
  return false;
}

/** Whether a name whose first character is `c` can be a key (after decoding or dropping whitespace). */
function mayStart(c: number, scan: Scan): boolean {
  const l = lower(c);
  return (
    scan.starts.has(l) ||
    l === PERCENT ||
    l === PLUS ||
    l === 0 ||
    l === BACKSLASH ||
    isBracket(l) ||
    isWhitespace(l)
  );
}

/** Whether the value after a `=` at `i` may start a key: its first character past whitespace and a quote. */
function valueMayStart(s: Buffer, i: number, scan: Scan): boolean {
  while (i < s.length && isWhitespace(s[i]!)) i++;
  // A quote: the whitespace after it is dropped by valueAfter, so it may start one. `=`: an RFC
  // 2047 encoded word.
  if (i >= s.length) return false;
  const c = s[i]!;
  return c === DQUOTE || c === SQUOTE || c === EQUALS || mayStart(c, scan);
}

/** Marks a parameter that is not a `name` parameter. */
const NOT_NAME = -2;
/** Whether the parameter paramBefore last read ends in `*` (RFC 2231 extended value). */
let paramExtended = false;

/**
 * The parameter ending at the `=` at `eq`, when it is a `name` parameter: -1 for `name` and
 * `name*`, the continuation number for `name*N` / `name*N*`, NOT_NAME otherwise; `paramExtended`
 * set when it ends in `*`.
 */
function paramBefore(s: Buffer, eq: number): number {
  let j = eq - 1;
  while (j >= 0 && (s[j]! === SPACE || s[j]! === 0x09)) j--;
  paramExtended = false;
  let index = -1;
  if (s[j]! === 0x2a /* * */) {
    paramExtended = true;
    j--;
  }
  const digitsEnd = j;
  while (j >= 0 && s[j]! >= 48 && s[j]! <= 57) j--;
  if (j < digitsEnd) {
    if (s[j]! !== 0x2a) return NOT_NAME;
    // Leading zeros or a huge number: still a piece, at the number's value (capped).
    index = 0;
    for (let d = j + 1; d <= digitsEnd && d < j + 8; d++) index = index * 10 + s[d]! - 48;
    index = Math.min(index, 1e6);
    j--;
  }
  if (j < 3) return NOT_NAME;
  if (
    (s[j - 3]! | 0x20) !== 0x6e /* n */ ||
    (s[j - 2]! | 0x20) !== 0x61 /* a */ ||
    (s[j - 1]! | 0x20) !== 0x6d /* m */ ||
    (s[j]! | 0x20) !== 0x65 /* e */
  )
    return NOT_NAME;
  if (j >= 4 && isAlnum(s[j - 4]!)) return NOT_NAME;
  return index;
}

function isAlnum(c: number): boolean {
  const l = c | 0x20;
  return (c >= 48 && c <= 57) || (l >= 97 && l <= 122);
}

/**
 * The value after a parameter's `=`, written to `out`, its length returned: a string quoted with
 * `"` or `'` (PHP's php_ap_getword_conf reads both; leading whitespace inside dropped, `\` escapes
 * undone, ending at the same quote or a line break) or a token up to `;`, `,`, whitespace or a
 * quote; at most `maxRaw` characters after any leading whitespace.
 */
function valueAfter(s: Buffer, i: number, maxRaw: number, out: Uint8Array): number {
  // Any whitespace before a value, line breaks, vertical tab and form feed included (PHP's
  // php_ap_getword_conf skips what isspace() accepts).
  while (i < s.length && isWhitespace(s[i]!)) i++;
  const q = s[i];
  let n = 0;
  if (q === DQUOTE || q === SQUOTE) {
    i++;
    while (i < s.length && (s[i] === SPACE || s[i] === 0x09)) i++;
    for (; i < s.length && n < maxRaw; i++) {
      let c = s[i]!;
      if (c === q || c === 0x0d || c === 0x0a) break;
      if (c === BACKSLASH && i + 1 < s.length) c = s[++i]!;
      out[n++] = c;
    }
    return n;
  }
  const end = Math.min(s.length, i + maxRaw);
  for (; i < end; i++) {
    const c = s[i]!;
    if (c === 0x3b || c === 0x2c || c === DQUOTE || isWhitespace(c)) break;
    out[n++] = c;
  }
  return n;
}

/** An RFC 2231 extended value `v[0, length)`: `charset'lang'%-encoded` (or only %-encoded), decoded into `out`. */
function extendedValue(v: Uint8Array, length: number, out: Uint8Array): number {
  let q = 0;
  let from = 0;
  for (let i = 0; i < length && q < 2; i++)
    if (v[i] === SQUOTE) {
      q++;
      from = i + 1;
    }
  if (q < 2) from = 0;
  let n = 0;
  for (let i = from; i < length; i++) {
    const c = v[i]!;
    if (c === PERCENT && i + 2 < length) {
      const hi = hexValue(v[i + 1]!);
      const lo = hexValue(v[i + 2]!);
      if (hi !== -1 && lo !== -1) {
        out[n++] = hi * 16 + lo;
        i += 2;
        continue;
      }
    }
    out[n++] = c;
  }
  return n;
}

/**
 * Whether the value starting at `s[i]` (before `limit`), read for RFC 2047 encoded words
 * (`=?charset?B?base64?=`, `=?charset?Q?quoted?=`, any label up to LABEL_MAX, B and Q in any case,
 * whitespace between two words dropped, words inside a word decoded too, as JavaMail's lenient
 * mode does) is a key. A quoted value ends at its quote, a token at `;` or a line break (Commons
 * FileUpload keeps a token's inner spaces). Holds no word: false at once. Stops as soon as the name
 * decoded so far cannot become a key.
 */
function encodedWordsMatch(s: Bytes, i: number, limit: number, scan: Scan): boolean {
  while (i < limit && (s[i] === SPACE || s[i] === 0x09)) i++;
  let quote = 0;
  if (s[i] === DQUOTE || s[i] === SQUOTE) quote = s[i++]!;
  const m = new NameMatcher(scan);
  let anyWord = false;
  let afterWord = false;
  let spaces = 0; // whitespace held back: dropped between two words
  while (i < limit) {
    const c = s[i]!;
    if (c === 0x0d || c === 0x0a) break;
    if (quote !== 0 ? c === quote : c === 0x3b || c === DQUOTE || c === SQUOTE) break;
    if (c === EQUALS && s[i + 1] === QUESTION) {
      const next = decodeWord(s, i, limit, quote, m, afterWord ? 0 : spaces);
      if (next !== -1) {
        anyWord = true;
        afterWord = true;
        spaces = 0;
        if (m.dead) return m.matched();
        i = next;
        continue;
      }
    }
    if (c === SPACE || c === 0x09) {
      spaces++;
      i++;
      continue;
    }
    for (; spaces > 0; spaces--) m.feed(SPACE);
    afterWord = false;
    m.feed(quote !== 0 && c === BACKSLASH && i + 1 < limit ? s[++i]! : c);
    if (m.dead) return anyWord && m.matched();
    i++;
  }
  return anyWord && m.matched();
}

/**
 * Decodes the RFC 2047 word at `s[i]` (`=?`) into `m`, after feeding it `spaces` spaces; returns the
 * index after its `?=`, or -1 (feeding nothing) when it is not one.
 */
function decodeWord(
  s: Bytes,
  i: number,
  limit: number,
  quote: number,
  m: NameMatcher,
  spaces: number,
): number {
  let j = i + 2;
  const labelEnd = Math.min(limit, j + LABEL_MAX + 1);
  while (j < labelEnd && isLabelChar(s[j]!)) j++;
  if (j === i + 2 || j >= labelEnd || s[j] !== QUESTION) return -1;
  const enc = (s[j + 1]! | 0x20) as number;
  if ((enc !== 0x62 /* b */ && enc !== 0x71) /* q */ || s[j + 2] !== QUESTION) return -1;
  const textStart = j + 3;
  let k = textStart;
  while (k + 1 < limit && !(s[k] === QUESTION && s[k + 1] === EQUALS)) {
    const c = s[k]!;
    if (c === quote || c === 0x0d || c === 0x0a || c === SPACE || c === 0x09) return -1;
    k++;
  }
  if (k + 1 >= limit) return -1;
  for (; spaces > 0; spaces--) m.feed(SPACE);
  if (enc === 0x71) {
    for (let p = textStart; p < k && !m.dead; p++) {
      const c = s[p]!;
      if (c === 0x5f /* _ */) m.feed(SPACE);
      else if (c === EQUALS && p + 2 < k && hexValue(s[p + 1]!) !== -1 && hexValue(s[p + 2]!) !== -1) {
        m.feed(hexValue(s[p + 1]!) * 16 + hexValue(s[p + 2]!));
        p += 2;
      } else m.feed(c);
    }
  } else {
    let bits = 0;
    let nbits = 0;
    for (let p = textStart; p < k && !m.dead; p++) {
      const v = base64Value(s[p]!);
      if (v === -1) continue; // `=` padding, or junk a lenient decoder skips
      bits = ((bits << 6) | v) & 0xffffff;
      nbits += 6;
      if (nbits >= 8) {
        nbits -= 8;
        m.feed((bits >> nbits) & 0xff);
      }
    }
  }
  return k + 2;
}

/** Whether `v[0, length)` holds `=?`, the start of an RFC 2047 encoded word. */
function hasWord(v: Uint8Array, length: number): boolean {
  for (let i = 0; i + 1 < length; i++) if (v[i] === EQUALS && v[i + 1] === QUESTION) return true;
  return false;
}

function isLabelChar(c: number): boolean {
  return isAlnum(c) || c === 0x2d || c === 0x5f || c === 0x2e || c === 0x3a || c === 0x2a || c === PLUS;
}

function base64Value(c: number): number {
  if (c >= 65 && c <= 90) return c - 65;
  if (c >= 97 && c <= 122) return c - 71;
  if (c >= 48 && c <= 57) return c + 4;
  if (c === PLUS || c === 0x2d) return 62;
  if (c === 0x2f || c === 0x5f) return 63;
  return -1;
}

/**
 * The trie walk of nameMatches, fed one decoded character at a time (no `%`-decoding): `dead` once
 * neither reading (NULs ignored, name cut at the first NUL) can go further, so that matched() can
 * no longer change.
 */
class NameMatcher {
  private skipNul: TrieNode | undefined;
  private cutNul: TrieNode | undefined;
  private cut = false;
  private leading = true;
  private stopped = false;
  dead = false;
  constructor(scan: Scan) {
    this.skipNul = scan.trie;
    this.cutNul = scan.trie;
  }
  feed(c: number): void {
    if (this.dead || this.stopped) return;
    if (this.leading && c !== 0 && isWhitespace(c)) return;
    if (c === 0) {
      this.cut = true;
      return;
    }
    this.leading = false;
    if (c === 0x5b /* [ */) {
      this.stopped = true;
      return;
    }
    const k = c === SPACE || c === 0x2e || c === 0x2d ? 0x5f : lower(c);
    this.skipNul = this.skipNul?.next.get(k);
    if (!this.cut) this.cutNul = this.cutNul?.next.get(k);
    if (this.skipNul === undefined && (this.cut || this.cutNul === undefined)) this.dead = true;
  }
  matched(): boolean {
    return this.skipNul?.end === true || this.cutNul?.end === true;
  }
}

/** What the JSON scan compares: the configured names' UTF-8 bytes, and the prefilter's needles. */
interface JsonScan {
  /** The configured names, exactly (as bytes). */
  trie: TrieNode;
  /**
   * Byte strings one of which a body naming a key must hold: each name (one holding another is
   * left out), and `\u` (an escaped character), or `\` when a name holds a character that has a
   * short escape (`"`, `\`, `/`, controls).
   */
  needles: Buffer[];
}

function jsonScan(names: readonly string[]): JsonScan {
  const trie: TrieNode = { next: new Map(), end: false };
  const unique = [...new Set(names.filter((n) => n !== ''))];
  for (const n of unique) addKey(trie, Buffer.from(n, 'utf8').toString('latin1'));
  const needles = unique
    .filter((n) => !unique.some((o) => o !== n && n.includes(o)))
    .map((n) => Buffer.from(n, 'utf8'));
  // eslint-disable-next-line no-control-regex
  needles.push(Buffer.from(unique.some((n) => /["\\/\u0000-\u001f]/.test(n)) ? '\\' : '\\u'));
  return { trie, needles };
}

const COLON = 0x3a;

/**
 * Whether a JSON body has an object key that is a configured name, exactly (Laravel's and Symfony's
 * `request->get('_method')` and Express's `req.body._method` are case-sensitive and leave JSON keys
 * as decoded), after JSON string unescaping (`"\u005fmethod"`, `"_\u006dethod"`, `"\/"`), at any
 * depth. A key is any `"`-quoted string followed by optional JSON whitespace and `:`, wherever it
 * is: the body is not parsed, so invalid JSON (which is forwarded as before) is refused only when it
 * shows such a key, and no parser differential can hide one. A string value holding escaped JSON
 * (`"{\"_method\":1}"`) is not a key: its quotes are escaped.
 *
 * Cost: when the body holds none of the prefilter's needles (the usual small JSON POST), a few
 * native `indexOf` passes and nothing else. Otherwise each `"` starts one read of at most one key
 * (stopping at the first byte that cannot continue a name, so at or before the next `"`), so every
 * byte is read at most a bounded number of times: linear.
 */
function jsonNamesOverride(s: Buffer, scan: JsonScan): boolean {
  if (!scan.needles.some((needle) => s.includes(needle))) return false;
  for (let q = s.indexOf(DQUOTE); q !== -1; q = s.indexOf(DQUOTE, q + 1)) {
    if (jsonKeyAt(s, q + 1, scan.trie)) return true;
  }
  return false;
}

/** Whether the JSON string starting at `s[i]` (after its `"`) is a configured name and a key. */
function jsonKeyAt(s: Buffer, i: number, trie: TrieNode): boolean {
  let node: TrieNode | undefined = trie;
  const n = s.length;
  while (i < n) {
    let c = s[i]!;
    if (c === DQUOTE) {
      if (!node.end) return false;
      for (i++; i < n && isJsonWhitespace(s[i]!); i++);
      return s[i] === COLON;
    }
    if (c === BACKSLASH) {
      c = jsonEscape(s, i);
      if (c === -1) return false;
      i += c === UNICODE_ESCAPE_MARK ? 6 : 2;
      c = jsonEscapeValue;
    } else i++;
    node = node.next.get(c);
    if (node === undefined) return false;
  }
  return false;
}

function isJsonWhitespace(c: number): boolean {
  return c === SPACE || c === 0x09 || c === 0x0a || c === 0x0d;
}

/** Returned by jsonEscape for a `\uXXXX` escape (6 bytes); jsonEscapeValue holds the character. */
const UNICODE_ESCAPE_MARK = -2;
let jsonEscapeValue = 0;

/**
 * The JSON escape at `s[i]` (`\`): -1 when it is not one (invalid JSON: the string is no name),
 * UNICODE_ESCAPE_MARK for `\uXXXX`, 0 for a two-byte escape; its character in jsonEscapeValue (a
 * `\u` escape above U+007F as 0x100, which no name's byte is: names are compared as UTF-8 bytes).
 */
function jsonEscape(s: Buffer, i: number): number {
  const e = s[i + 1];
  if (e === 0x75 /* u */) {
    if (i + 5 >= s.length) return -1;
    const h1 = hexValue(s[i + 2]!);
    const h2 = hexValue(s[i + 3]!);
    const h3 = hexValue(s[i + 4]!);
    const h4 = hexValue(s[i + 5]!);
    if (h1 === -1 || h2 === -1 || h3 === -1 || h4 === -1) return -1;
    const v = (h1 << 12) | (h2 << 8) | (h3 << 4) | h4;
    jsonEscapeValue = v < 0x80 ? v : 0x100;
    return UNICODE_ESCAPE_MARK;
  }
  const short = e === undefined ? -1 : JSON_SHORT_ESCAPES.indexOf(e);
  if (short === -1) return -1;
  jsonEscapeValue = JSON_SHORT_VALUES[short]!;
  return 0;
}

/** `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t` and what they stand for. */
const JSON_SHORT_ESCAPES = [DQUOTE, BACKSLASH, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74];
const JSON_SHORT_VALUES = [DQUOTE, BACKSLASH, 0x2f, 0x08, 0x0c, 0x0a, 0x0d, 0x09];

/**
 * Rack names a multipart part without a `name` parameter by its `Content-ID` header
 * (`/Content-ID:\s*([^\r\n]*)/i`, anywhere in the part's head), so `Content-ID: _method` in a
 * `multipart/related` body is a `_method` field. Every `content-id:` (any case) in the body is read
 * the same way: whitespace after the colon skipped (line breaks too), the value up to the line's
 * end compared as a name (as sent and %-decoded). One native `indexOf` per `:`, moving forward, and
 * a fixed look-back: linear.
 */
function contentIdNamesOverride(s: Buffer, scan: Scan): boolean {
  for (let colon = s.indexOf(COLON, CONTENT_ID.length); colon !== -1; colon = s.indexOf(COLON, colon + 1)) {
    let k = 0;
    while (k < CONTENT_ID.length && lower(s[colon - CONTENT_ID.length + k]!) === CONTENT_ID[k]) k++;
    if (k < CONTENT_ID.length) continue;
    let start = colon + 1;
    while (start < s.length && isWhitespace(s[start]!)) start++;
    let end = start;
    while (end < s.length && s[end] !== 0x0d && s[end] !== 0x0a) end++;
    if (nameMatches(s, start, end, false, false, scan) || nameMatches(s, start, end, true, false, scan))
      return true;
    // A Content-ID's value is its whole line (Rack's regex): a colon in it starts no other.
    colon = end - 1;
  }
  return false;
}

/** `content-id`, lowercase, as bytes. */
const CONTENT_ID = Buffer.from('content-id', 'latin1');
