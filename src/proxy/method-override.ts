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
 * `_method`), NUL bytes ignored (a UTF-16 body) or ending the name (PHP stops there). A urlencoded
 * name is %-decoded once, `+` is a space; pieces are split at `&` and `;`.
 *
 * Multipart bodies are not split at their boundary (a parser differential between the gateway and
 * the upstream would be a way past): every `name` parameter anywhere in the body is read, as in
 * `Content-Disposition: form-data; name="_method"`, quoted (with `\` escapes) or a token, as sent
 * and %-decoded, RFC 2231 (`name*=utf-8''%5Fmethod`) and its continuations (`name*0`, `name*1`...,
 * joined in index order). A file whose content holds such a line is refused too.
 *
 * Cost: linear in the body's length. One `indexOf` pass per separator; each name is read once,
 * and no further than the longest configured name (plus leading whitespace), so no piece of the
 * body is read twice except by a native search.
 */

/** The form kinds the scanner reads. */
export type FormKind = 'urlencoded' | 'multipart';

/**
 * What a request's headers say about its body: `none` (no body, or not a form: streamed as before),
 * a form kind (buffered and scanned), or `unreadable`: a form the gateway cannot read as sent
 * (`Content-Encoding` other than identity, a transfer coding other than chunked, or a charset that
 * is not ASCII-compatible), so it cannot tell whether it names an override.
 */
export type FormBodyKind = 'none' | FormKind | 'unreadable';

/**
 * Charsets in which `_method` and the separators are the ASCII bytes, as the scanner reads them.
 * Others (UTF-16, UTF-32, UTF-7, EBCDIC such as IBM037...) make a form unreadable.
 */
const ASCII_COMPATIBLE =
  /^(?:utf-?8|(?:us-)?ascii|iso-?8859-\d{1,2}|latin-?\d|l\d|(?:windows|cp)-?125\d|shift_jis|sjis|euc-(?:jp|kr|cn)|gbk|gb2312|gb18030|big5|koi8-[ru])$/;

/**
 * Classifies a request body from its headers. A body is present when `Content-Length` is not 0 or a
 * `Transfer-Encoding` is sent. The media type is what precedes the first `;`, `,` or whitespace, in
 * any case; a body without `Content-Type` counts as urlencoded (Rack parses a POST without one as a
 * form).
 *
 * @example
 * formBodyKind({ 'content-type': 'Multipart/Form-Data; boundary=x', 'content-length': '120' }) // 'multipart'
 */
export function formBodyKind(headers: IncomingHttpHeaders): FormBodyKind {
  const te = headers['transfer-encoding'];
  const cl = headers['content-length'];
  if (te === undefined && (cl === undefined || Number(cl) === 0)) return 'none';
  const ct = headers['content-type'] ?? '';
  const type = mediaType(ct);
  const kind: FormKind | null =
    type === '' || type === 'application/x-www-form-urlencoded'
      ? 'urlencoded'
      : type === 'multipart/form-data'
        ? 'multipart'
        : null;
  if (kind === null) return 'none';
  if (!onlyTokens(headers['content-encoding'], 'identity') || !onlyTokens(te, 'chunked')) return 'unreadable';
  const charset = charsetOf(ct);
  if (charset !== null && !ASCII_COMPATIBLE.test(charset)) return 'unreadable';
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

/** The `charset` parameter of a Content-Type, lowercase and unquoted, or null. */
function charsetOf(ct: string): string | null {
  const m = /;\s*charset\s*=\s*("?)([^";,\s]*)\1/i.exec(ct);
  return m ? m[2]!.toLowerCase() : null;
}

/**
 * Builds the scanner for the configured override parameter names (`urlKeyGuard.methodOverrideParams`).
 * Returns true when the body names one of them.
 *
 * @example
 * const names = createFormOverrideScanner(['_method']);
 * names(Buffer.from('a=1&+_METHOD[]=DELETE'), 'urlencoded') // true
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
  return function bodyNamesOverride(body, kind) {
    if (keys.size === 0 || body.length === 0) return false;
    // Read as bytes (the names compared are ASCII). Not as a string: V8's indexOf on the external
    // string a large Buffer becomes was measured quadratic (a 2 MiB form took 29 s).
    return kind === 'urlencoded' ? urlencodedNamesOverride(body, scan) : multipartNamesOverride(body, scan);
  };
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
 * Each character of the name `s[start, end)` as it is compared, passed to `visit` until it returns
 * false: leading whitespace dropped, `' '`, `.` and `-` as `_`, lowercase, NUL as 0; stops at the
 * first `[`. `%`-decodes once when `decode`, reads `+` as a space when `plus`.
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
    if (decode && c === PERCENT && i + 2 < end) {
      const hi = hexValue(s[i + 1]!);
      const lo = hexValue(s[i + 2]!);
      if (hi !== -1 && lo !== -1) {
        c = hi * 16 + lo;
        i += 2;
      }
    } else if (plus && c === PLUS) c = SPACE;
    if (leading && c !== 0 && isWhitespace(c)) continue;
    if (c !== 0) leading = false;
    if (c === 0x5b /* [ */) return;
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

function lower(c: number): number {
  return c >= 65 && c <= 90 ? c + 32 : c;
}

/**
 * Whether the name `s[start, end)` is a configured key, read two ways at once: NUL bytes ignored (a
 * UTF-16 body), and the name ending at its first NUL (PHP). Walks the keys' trie, so it stops as
 * soon as neither reading can become a key: a name is read no further than the longest key, plus
 * its leading whitespace and NULs. No allocation.
 */
function nameMatches(
  s: Bytes,
  start: number,
  end: number,
  decode: boolean,
  plus: boolean,
  scan: Scan,
): boolean {
  // Most names are rejected by their first character.
  if (!mayStart(s[start]!, scan)) return false;
  let skipNul: TrieNode | undefined = scan.trie;
  let cutNul: TrieNode | undefined = scan.trie;
  let cut = false;
  readName(s, start, end, decode, plus, (c) => {
    if (c === 0) {
      cut = true;
      return true;
    }
    skipNul = skipNul?.next.get(c);
    if (!cut) cutNul = cutNul?.next.get(c);
    return skipNul !== undefined || (!cut && cutNul !== undefined);
  });
  return (skipNul as TrieNode | undefined)?.end === true || (cutNul as TrieNode | undefined)?.end === true;
}

/** `a=1&_method=DELETE`: each piece between `&` or `;`, its name up to its first `=`. */
function urlencodedNamesOverride(s: Bytes, scan: Scan): boolean {
  // The next `&`, `;` and `=` at or after i, each found by one native search that moves forward only.
  let amp = s.indexOf(0x26);
  let semi = s.indexOf(0x3b);
  let eq = s.indexOf(0x3d);
  for (let i = 0; i <= s.length;) {
    if (amp !== -1 && amp < i) amp = s.indexOf(0x26, i);
    if (semi !== -1 && semi < i) semi = s.indexOf(0x3b, i);
    if (eq !== -1 && eq < i) eq = s.indexOf(0x3d, i);
    const end = Math.min(amp === -1 ? s.length : amp, semi === -1 ? s.length : semi);
    const nameEnd = eq === -1 || eq > end ? end : eq;
    if (nameEnd > i && nameMatches(s, i, nameEnd, true, true, scan)) return true;
    i = end + 1;
  }
  return false;
}

/**
 * Every `name` parameter in the body: `name=`, `name*=`, `name*N=`, `name*N*=` (any case, spaces
 * before `=` allowed), not preceded by a letter or digit (`filename=` is not one).
 */
function multipartNamesOverride(s: Buffer, scan: Scan): boolean {
  // Raw characters of a value worth reading: the longest key, each character %-encoded.
  const maxRaw = 3 * (scan.max + 1) + 8;
  const pieces = new Map<number, Buffer>();
  let piecesLength = 0;
  for (let eq = s.indexOf(0x3d); eq !== -1; eq = s.indexOf(0x3d, eq + 1)) {
    const param = paramBefore(s, eq);
    if (param === null) continue;
    if (param.index === -1) {
      // A plain `name=` whose value cannot start a key is not read further.
      if (!param.extended && !valueMayStart(s, eq + 1, scan)) continue;
      const value = valueAfter(s, eq + 1, maxRaw);
      const text = param.extended ? extendedValue(value) : value;
      if (text.length === 0) continue;
      if (nameMatches(text, 0, text.length, false, false, scan)) return true;
      // Some parsers %-decode names (HTML forms escape `"` and line breaks that way).
      if (nameMatches(text, 0, text.length, true, false, scan)) return true;
      continue;
    }
    // RFC 2231 continuation: a repeated index starts the next parameter's pieces.
    if (pieces.has(param.index)) {
      pieces.clear();
      piecesLength = 0;
    }
    // Longer than any name (leading whitespace aside): the rest of this parameter is not read.
    if (piecesLength > maxRaw) continue;
    const value = valueAfter(s, eq + 1, maxRaw);
    const text = param.extended ? extendedValue(value) : value;
    pieces.set(param.index, text);
    piecesLength += text.length + 1;
    let lowest = Infinity;
    for (const [i, piece] of pieces) if (i < lowest && piece.length > 0) lowest = i;
    if (lowest === Infinity) continue;
    const head = pieces.get(lowest)!;
    if (!mayStart(head[0]!, scan)) continue;
    const joined = Buffer.concat([...pieces.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]));
    if (nameMatches(joined, 0, joined.length, false, false, scan)) return true;
  }
  return false;
}

/** Whether a name whose first character is `c` can be a key (after decoding or dropping whitespace). */
function mayStart(c: number, scan: Scan): boolean {
  const l = lower(c);
  return scan.starts.has(l) || l === PERCENT || l === PLUS || l === 0 || l === 0x5c || isWhitespace(l);
}

/** Whether the value after a `=` at `i` may start a key: its first character past whitespace and a quote. */
function valueMayStart(s: Buffer, i: number, scan: Scan): boolean {
  while (i < s.length && (s[i]! === SPACE || s[i]! === 0x09)) i++;
  // A quote: the whitespace after it is dropped by valueAfter, so it may start one.
  return i < s.length && (s[i]! === 0x22 || mayStart(s[i]!, scan));
}

/**
 * The parameter ending at the `=` at `eq`, when it is a `name` parameter: `index` -1 for `name`
 * and `name*`, the continuation number for `name*N` / `name*N*`; `extended` when it ends in `*`.
 */
function paramBefore(s: Buffer, eq: number): { index: number; extended: boolean } | null {
  let j = eq - 1;
  while (j >= 0 && (s[j]! === SPACE || s[j]! === 0x09)) j--;
  let extended = false;
  let index = -1;
  if (s[j]! === 0x2a /* * */) {
    extended = true;
    j--;
  }
  const digitsEnd = j;
  while (j >= 0 && s[j]! >= 48 && s[j]! <= 57) j--;
  if (j < digitsEnd) {
    if (s[j]! !== 0x2a) return null;
    // Leading zeros or a huge number: still a piece, at the number's value (capped).
    index = Math.min(Number(s.slice(j + 1, Math.min(digitsEnd + 1, j + 8))), 1e6);
    j--;
  }
  if (j < 3) return null;
  if (
    (s[j - 3]! | 0x20) !== 0x6e /* n */ ||
    (s[j - 2]! | 0x20) !== 0x61 /* a */ ||
    (s[j - 1]! | 0x20) !== 0x6d /* m */ ||
    (s[j]! | 0x20) !== 0x65 /* e */
  )
    return null;
  if (j >= 4 && isAlnum(s[j - 4]!)) return null;
  return { index, extended };
}

function isAlnum(c: number): boolean {
  const l = c | 0x20;
  return (c >= 48 && c <= 57) || (l >= 97 && l <= 122);
}

/**
 * The value after a parameter's `=`: a quoted string (leading whitespace inside dropped, `\`
 * escapes undone) or a token up to `;`, `,`, whitespace or `"`; at most `maxRaw` characters after
 * any leading whitespace.
 */
function valueAfter(s: Buffer, i: number, maxRaw: number): Buffer {
  while (i < s.length && (s[i] === SPACE || s[i] === 0x09)) i++;
  if (s[i] === 0x22 /* " */) {
    i++;
    while (i < s.length && (s[i] === SPACE || s[i] === 0x09)) i++;
    const out: number[] = [];
    for (let n = 0; i < s.length && n < maxRaw; i++, n++) {
      let c = s[i]!;
      if (c === 0x22 || c === 0x0d || c === 0x0a) break;
      if (c === 0x5c /* \ */ && i + 1 < s.length) c = s[++i]!;
      out.push(c);
    }
    return Buffer.from(out);
  }
  const end = Math.min(s.length, i + maxRaw);
  let j = i;
  while (j < end) {
    const c = s[j]!;
    if (c === 0x3b || c === 0x2c || c === 0x22 || isWhitespace(c)) break;
    j++;
  }
  return s.subarray(i, j);
}

/** An RFC 2231 extended value: `charset'lang'%-encoded` (or only %-encoded), decoded. */
function extendedValue(v: Buffer): Buffer {
  const q1 = v.indexOf(0x27);
  const q2 = q1 === -1 ? -1 : v.indexOf(0x27, q1 + 1);
  const text = q2 === -1 ? v : v.subarray(q2 + 1);
  const out: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === PERCENT && i + 2 < text.length) {
      const hi = hexValue(text[i + 1]!);
      const lo = hexValue(text[i + 2]!);
      if (hi !== -1 && lo !== -1) {
        out.push(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out.push(c);
  }
  return Buffer.from(out);
}
