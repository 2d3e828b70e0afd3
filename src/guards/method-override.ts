import type { IncomingHttpHeaders } from 'node:http';
import { hexAt, isBase62 } from './decode.js';

// Method overrides (threat model: T2, a tenant reaching a method its route or scope does not
// allow). Rails (Rack::MethodOverride), Laravel, Symfony, gorilla/handlers and Express's
// method-override run the method a `_method` parameter names instead of the request's. In the URL
// the guard refuses such a parameter before authentication; in a body this module's scanner reads
// it as the body streams past (the method-override body step, only where methods are restricted).

/** A trie by character code (0-255; 256 stands for any other character), as flat arrays. */
class Trie {
  private readonly next: Int32Array;
  private readonly ends: Uint8Array;
  constructor(words: readonly string[]) {
    const most = 1 + words.reduce((n, w) => n + w.length, 0);
    this.next = new Int32Array(most * 257).fill(-1);
    this.ends = new Uint8Array(most);
    let count = 1;
    for (const w of words) {
      let node = 0;
      for (let i = 0; i < w.length; i++) {
        const at = node * 257 + Math.min(w.charCodeAt(i), 256);
        node = this.next[at] = this.next[at] === -1 ? count++ : this.next[at]!;
      }
      this.ends[node] = 1;
    }
  }
  /** The node after `c` from `node`, or -1. */
  step(node: number, c: number): number {
    return node === -1 ? -1 : this.next[node * 257 + Math.min(c, 256)]!;
  }
  isEnd(node: number): boolean {
    return this.ends[node] === 1;
  }
}

/** What `walk` reports: the reading matched; the name holds a NUL, a `.`, a `%`. */
const MATCHED = 1;
const SAW_NUL = 2;
const SAW_DOT = 4;
const SAW_PERCENT = 8;

/** A name's characters: bytes of a body, or the code units of a string (above 255: never a name's). */
type Chars = Uint8Array | Uint16Array;

/**
 * The configured override names (`methodOverride.params`), compared the way the frameworks read a
 * parameter name: leading whitespace, `[` and `]` dropped (PHP drops leading spaces, Rack and qs
 * brackets); `' '`, `.` and `-` read as `_` (PHP); any case; cut at the first `[` or `]` after that
 * (`_method[]`, `[_method]`); NUL bytes ignored (a UTF-16 body) or ending the name (PHP); and once
 * more with `.` as qs reads it under `allowDots` (dropped while leading, ending the name after).
 * Body names are %-decoded once (`%XX`, and `%uXXXX` as .NET reads it) as well as read as sent.
 */
export class OverrideNames {
  private readonly trie: Trie;
  private readonly exactTrie: Trie;
  /** First characters a name can start with (as sent): a name's first (any case), or one dropped or decoded. */
  private readonly starts = new Set<number>([0x2b, 0x25, 0x2e, 0x2d, 0x5b, 0x5d, 0]);
  readonly size: number;
  /** First bytes of the exact names (JSON keys), and `\` (an escape). */
  readonly exactStarts = new Set<number>([0x5c]);
  /** Bytes of the longest name (UTF-8). */
  readonly longest: number;
  constructor(names: readonly string[]) {
    const read = new Set(names.map(normaliseName).filter((n) => n !== ''));
    this.trie = new Trie([...read]);
    this.size = read.size;
    for (const n of read) this.starts.add(n.charCodeAt(0)).add(n.toUpperCase().charCodeAt(0));
    const exact = names.filter((n) => n !== '').map((n) => Buffer.from(n, 'utf8').toString('latin1'));
    this.exactTrie = new Trie(exact);
    for (const n of exact) this.exactStarts.add(n.charCodeAt(0));
    this.longest = Math.max(0, ...exact.map((n) => n.length));
  }
  /** Whether a string (a URL's decoded parameter name) is one of them, read every way (see the class). */
  matches(name: string, plus = false): boolean {
    const a = new Uint16Array(name.length);
    for (let i = 0; i < name.length; i++) a[i] = name.charCodeAt(i);
    return this.matchesChars(a, 0, a.length, plus, false);
  }
  /** Whether the bytes `buf[start, end)` of a body name one of them, as sent or %-decoded. */
  matchesBytes(buf: Buffer, start: number, end: number, plus: boolean): boolean {
    return this.matchesChars(buf, start, end, plus, false, true);
  }
  /** Where the JSON key at `buf[start]` (after its `"`) ends (its closing `"`) when it is exactly a name; else -1. */
  exactKeyAt(buf: Buffer, start: number, limit: number): number {
    const t = this.exactTrie;
    let node = 0;
    for (let k = start; k < limit && node !== -1; k++) {
      let c = buf[k]!;
      if (c === 0x22) return t.isEnd(node) ? k : -1;
      if (c === 0x5c) {
        // A JSON escape: compared as the UTF-8 bytes of the character it stands for.
        const e = buf[k + 1] ?? 0;
        if (e === 0x75) {
          const v = hexAt(buf, k + 2, 4, limit);
          if (v === -1) return -1;
          k += 5;
          if (v >= 0x80) {
            if (v >= 0x800) node = t.step(node, 0xe0 | (v >> 12));
            node = t.step(node, v >= 0x800 ? 0x80 | ((v >> 6) & 63) : 0xc0 | (v >> 6));
            c = 0x80 | (v & 63);
          } else c = v;
        } else {
          c = JSON_SHORT[e] ?? -1;
          if (c === -1) return -1;
          k++;
        }
        if (node === -1) return -1;
      }
      node = t.step(node, c);
    }
    return -1;
  }
  /** Whether a name whose first byte is `c` may be one (after decoding or dropping whitespace). */
  mayStart(c: number): boolean {
    return this.starts.has(c) || isWhitespace(c);
  }
  private matchesChars(
    a: Chars,
    start: number,
    end: number,
    plus: boolean,
    decode: boolean,
    thenDecoded = false,
  ): boolean {
    if (this.size === 0) return false;
    const seen = this.walk(a, start, end, plus, decode, false, false);
    if (seen & MATCHED) return true;
    // As sent first; %-decoded only when there is a `%` to decode; the other readings only when
    // the name holds what they read differently (a NUL, a dot).
    if (thenDecoded && seen & SAW_PERCENT && this.matchesChars(a, start, end, plus, true)) return true;
    for (let r = 1; r < 4; r++) {
      const cut = (r & 1) !== 0;
      const dot = (r & 2) !== 0;
      if (cut && !(seen & SAW_NUL)) continue;
      if (dot && !(seen & SAW_DOT)) continue;
      if (this.walk(a, start, end, plus, decode, cut, dot) & MATCHED) return true;
    }
    return false;
  }
  /** One reading of `a[start, end)` through the trie: MATCHED and the SAW_* flags met on the way. */
  private walk(
    a: Chars,
    start: number,
    end: number,
    plus: boolean,
    decode: boolean,
    cutAtNul: boolean,
    dots: boolean,
  ): number {
    const trie = this.trie;
    let node = 0;
    let seen = 0;
    let leading = true;
    for (let i = start; i < end; i++) {
      let c = a[i]!;
      if (c === 0x25) seen |= SAW_PERCENT;
      if (c === 0x25 && decode) {
        const d = escapeAt(a, i, end);
        if (d !== -1) {
          i += d >> 16;
          c = d & 0xffff;
        }
      }
      if (c === 0) {
        seen |= SAW_NUL;
        if (cutAtNul) break;
        continue;
      }
      if (plus && c === 0x2b) c = 0x20;
      if (c === 0x2e) seen |= SAW_DOT;
      const stop = c === 0x5b || c === 0x5d || (dots && c === 0x2e);
      if (leading && (stop || isWhitespace(c))) continue;
      leading = false;
      if (stop) break;
      node = trie.step(node, c === 0x20 || c === 0x2e || c === 0x2d ? 0x5f : c >= 65 && c <= 90 ? c + 32 : c);
      if (node === -1) return seen;
    }
    return trie.isEnd(node) ? seen | MATCHED : seen;
  }
}

/** A configured name as the class compares names (its first reading; no decoding). */
function normaliseName(name: string): string {
  const t = name.replaceAll('\0', '').replace(/^[\t-\r [\]]+/, '');
  return t
    .slice(0, t.search(/[[\]]|$/))
    .replace(/[ .-]/g, '_')
    .toLowerCase();
}

/** The escape at `a[i]` (`%`): (extra characters << 16) | character (a `%u` above U+00FF as 256), or -1. */
function escapeAt(a: Chars, i: number, end: number): number {
  const u = (a[i + 1]! | 0x20) === 0x75 ? hexAt(a, i + 2, 4, end) : -1;
  if (u !== -1) return (5 << 16) | Math.min(u, 256);
  const x = hexAt(a, i + 1, 2, end);
  return x === -1 ? -1 : (2 << 16) | x;
}

function isWhitespace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

/** A form (urlencoded or any `multipart/*`), JSON, or a form whose Content-Type also says json (read both ways). */
export type FormKind = 'urlencoded' | 'multipart' | 'json' | 'urlencoded+json' | 'multipart+json';

/** Charsets in which `_method` and the separators are the ASCII bytes the scanner reads. */
const ASCII_COMPATIBLE =
  /^(?:utf-?8|(?:us-)?ascii|iso-?8859-\d{1,2}|latin-?\d|l\d|(?:windows|cp)-?125\d|shift_jis|sjis|euc-(?:jp|kr|cn)|gbk|gb2312|gb18030|big5|koi8-[ru])$/;

/**
 * What a request's headers say about its body: `none` (no body, or neither a form nor JSON), a kind,
 * or `unreadable`: compressed, a transfer coding other than chunked, or a charset that is not
 * ASCII-compatible (a `charset=` anywhere counts: Tomcat takes the first one). A body without
 * Content-Type is a form (Rack); every `multipart/*` subtype is multipart; a Content-Type holding
 * `json` in its media type, or `/json` or `+json` anywhere, is JSON (Laravel's `isJson()`).
 *
 * @example
 * formBodyKind({ 'content-type': 'Multipart/Mixed; boundary=x', 'content-length': '120' }) // 'multipart'
 */
export function formBodyKind(headers: IncomingHttpHeaders): FormKind | 'none' | 'unreadable' {
  const te = headers['transfer-encoding'];
  const cl = headers['content-length'];
  if (te === undefined && (cl === undefined || Number(cl) === 0)) return 'none';
  const ct = headers['content-type'] ?? '';
  const type = /^\s*([^;,\s]*)/.exec(ct)![1]!.toLowerCase();
  const form =
    type === '' || type === 'application/x-www-form-urlencoded'
      ? 'urlencoded'
      : type.startsWith('multipart/')
        ? 'multipart'
        : null;
  const json = type.includes('json') || /[/+]json/i.test(ct);
  const kind: FormKind | null = form === null ? (json ? 'json' : null) : json ? `${form}+json` : form;
  if (kind === null) return 'none';
  if (!onlyTokens(headers['content-encoding'], 'identity') || !onlyTokens(te, 'chunked')) return 'unreadable';
  for (const m of ct.matchAll(/charset\s*\*?\s*=\s*("?)([^";,\s]*)\1/gi))
    if (!ASCII_COMPATIBLE.test(m[2]!.toLowerCase())) return 'unreadable';
  return kind;
}

/** True when the header is absent or each of its comma-separated tokens is `allowed` (any case). */
function onlyTokens(value: string | undefined, allowed: string): boolean {
  return value === undefined || value.split(',').every((t) => ['', allowed].includes(t.trim().toLowerCase()));
}

/**
 * Bytes a single name, value or key is read at most; a read still in leading whitespace there
 * counts as an override (no parser differential left open).
 */
const READ_MAX = 1024;
/** Bytes read back from an anchor (`name  *12 =`): at most this many, whatever the window. */
const BACK = 64;

/** Feeds a body's chunks as they stream past; true once an override is seen. Holds at most ~1 KiB. */
export interface OverrideScanner {
  write(chunk: Buffer): boolean;
  end(): boolean;
}

/** Reads the anchors in [from, to) of `buf`; every read ends within READ_MAX bytes, or at the end of `buf`. */
type Reader = (buf: Buffer, from: number, to: number, ctx: ScanContext) => boolean;

/**
 * Values read the slow way (escapes, encoded words, line breaks, RFC 2231) per body: past this, the
 * body counts as naming an override. A form names a field in such a way a handful of times; the
 * cap keeps a body made of nothing else linear with a small factor.
 */
const EXOTIC_VALUES_MAX = 1024;

interface ScanContext {
  names: OverrideNames;
  /** Slow-way values left (EXOTIC_VALUES_MAX). */
  exotic: number;
  /** A name's first bytes (and the `\` of an escape): a window holding none holds no JSON key. */
  jsonNeedles: number[];
}

/**
 * Builds the scanner of one body (threat model: T2): the readers of its kind (`urlencodedNames`,
 * `multipartNames`, `jsonKeys`) in a window that carries the last 1 KiB between chunks, so a name
 * split over chunks or TCP writes is read whole and nothing is held longer. Multipart is not split
 * at the boundary (no parser differential: file content that looks like a part header is read too).
 * Linear: each anchor (`&`, `=`, `:`, `"`) starts one read of at most READ_MAX bytes, most stopped
 * by their first byte.
 *
 * @example
 * const s = createOverrideScanner('urlencoded', new OverrideNames(['_method']));
 * s.write(Buffer.from('a=1&_me')) || s.write(Buffer.from('thod=DELETE')) || s.end() // true
 */
export function createOverrideScanner(kind: FormKind, names: OverrideNames): OverrideScanner {
  const readers: Reader[] = [];
  if (kind.startsWith('urlencoded')) readers.push(urlencodedNames);
  if (kind.startsWith('multipart')) readers.push(multipartNames);
  if (kind.endsWith('json')) readers.push(jsonKeys);
  // The stream starts like a piece after a separator: a virtual `&`. Anchors in [from, to) of a
  // window are read; the last READ_MAX + BACK bytes are carried into the next window.
  let carry = Buffer.from('&');
  let from = 0;
  const ctx: ScanContext = {
    names,
    exotic: EXOTIC_VALUES_MAX,
    jsonNeedles: [...names.exactStarts],
  };
  const scan = (buf: Buffer, to: number) => readers.some((r) => r(buf, from, to, ctx));
  return {
    write(chunk) {
      const buf = Buffer.concat([carry, chunk]);
      const to = buf.length - READ_MAX;
      if (to > from && scan(buf, to)) return true;
      const keep = Math.min(buf.length, READ_MAX + BACK);
      from = Math.max(from, to) - (buf.length - keep);
      carry = Buffer.from(buf.subarray(buf.length - keep));
      return false;
    },
    end: () => scan(carry, carry.length),
  };
}

/** The end of a read starting at `i`: READ_MAX further, or the end of what was given. */
const limitOf = (buf: Buffer, i: number) => Math.min(buf.length, i + READ_MAX);

/** Urlencoded names: after each `&` or `;` in [from, to), up to `=`, `&`, `;`; as sent and %-decoded, `+` a space. */
function urlencodedNames(buf: Buffer, from: number, to: number, { names }: ScanContext): boolean {
  for (let i = from; i < to; i++) {
    const c = buf[i]!;
    if (c !== 0x26 && c !== 0x3b) continue;
    if (i + 1 >= buf.length || !names.mayStart(buf[i + 1]!)) continue;
    const limit = limitOf(buf, i + 1);
    let end = i + 1;
    while (end < limit && buf[end] !== 0x3d && buf[end] !== 0x26 && buf[end] !== 0x3b) end++;
    if (names.matchesBytes(buf, i + 1, end, true)) return true;
    if (end - i > READ_MAX && leadingOnly(decodeName(buf.toString('latin1', i + 1, end)))) return true;
  }
  return false;
}

/** Whether a name read to its bound is still in its leading whitespace (an override could follow: counted as one). */
function leadingOnly(name: string): boolean {
  return /^[\s+[\]\0.]*$/.test(name);
}

/** `%XX` and `%uXXXX` (IIS and .NET's `HttpUtility.UrlDecode` read it), once. */
function decodeName(s: string): string {
  if (!s.includes('%')) return s;
  return s.replace(/%[uU]([0-9a-fA-F]{4})|%([0-9a-fA-F]{2})/g, (_, u: string, x: string) =>
    String.fromCharCode(parseInt(u ?? x, 16)),
  );
}

const EQUALS = 0x3d;
const COLON = 0x3a;

/**
 * Multipart `name` parameters (at each `=`) and `Content-ID:` values (Rack names a part by it; at
 * each `:`) in [from, to). An RFC 2231 continuation (`name*0=`) counts as an override: no client
 * splits a field name, and Go joins them.
 */
function multipartNames(buf: Buffer, from: number, to: number, ctx: ScanContext): boolean {
  const { names } = ctx;
  for (let i = buf.indexOf(EQUALS, from); i !== -1 && i < to; i = buf.indexOf(EQUALS, i + 1)) {
    const param = nameParamBefore(buf, i);
    if (param === 'continuation') return true;
    if (param !== null && valueNamesOverride(buf, i + 1, param === 'extended', ctx)) return true;
  }
  for (let i = buf.indexOf(COLON, from); i !== -1 && i < to; i = buf.indexOf(COLON, i + 1)) {
    if (i < 10 || !isContentId(buf, i - 10)) continue;
    const limit = limitOf(buf, i + 1);
    let start = i + 1;
    while (start < limit && isWhitespace(buf[start]!)) start++;
    if (start === limit && limit - i > READ_MAX) return true;
    // A value longer than a name could be (each character %-encoded) names none.
    const max = start + 3 * (names.longest + 1) + 8;
    let end = start;
    while (end < limit && end <= max && buf[end] !== 0x0d && buf[end] !== 0x0a) end++;
    if (end > max) continue;
    if (names.matchesBytes(buf, start, end, false)) return true;
  }
  return false;
}

/**
 * Whether the `=` at `eq` ends a `name` parameter: `name`, `name*` (extended), or `name*N`/`name*N*`
 * (a continuation); any case, spaces before `=`, not preceded by a letter or digit (`filename=`).
 * Line breaks are skipped as PHP joins a part's header lines (`na` CRLF `me=`).
 */
function nameParamBefore(buf: Buffer, eq: number): 'plain' | 'extended' | 'continuation' | null {
  const stop = Math.max(0, eq - BACK);
  let j = skipBack(buf, eq - 1, stop);
  const extended = buf[j] === 0x2a; // *
  if (extended) j--;
  const digitsEnd = j;
  while (j >= stop && buf[j]! >= 0x30 && buf[j]! <= 0x39) j--;
  const digits = j < digitsEnd;
  if (digits && buf[j--] !== 0x2a) return null;
  for (let l = 3; l >= 0; l--) {
    j = skipBack(buf, j, stop);
    if (j < stop || (buf[j--]! | 0x20) !== NAME[l]) return null;
  }
  if (j >= 0 && isBase62(buf[j]!)) return null;
  return digits ? 'continuation' : extended ? 'extended' : 'plain';
}

/** `content-id`, lowercase, as bytes. */
const CONTENT_ID = Buffer.from('content-id');

/** Whether `buf[at, at + 10)` is `content-id` in any case. */
function isContentId(buf: Buffer, at: number): boolean {
  for (let k = 9; k >= 0; k--) if ((buf[at + k]! | 0x20) !== CONTENT_ID[k]) return false;
  return true;
}

/** `name`, lowercase, as bytes. */
const NAME = [0x6e, 0x61, 0x6d, 0x65];

/** The index before `j` past spaces, tabs and line breaks, no further back than `stop`. */
function skipBack(buf: Buffer, j: number, stop: number): number {
  while (j >= stop && (buf[j] === 0x20 || buf[j] === 0x09 || buf[j] === CR || buf[j] === LF)) j--;
  return j;
}

/**
 * Whether the value after a `name` parameter's `=` at `i` names an override: quoted (`"` or `'`,
 * `\` escapes) or a token, read three ways: ending at a line break; with a line break joined as PHP
 * joins a part's header lines (`name="_metho` CRLF `d"`; an empty line still ends it); and, when it
 * holds `=?`, as Commons FileUpload reads a token (up to `;`) for RFC 2047 encoded words
 * (`=?utf-8?B?X21ldGhvZA==?=`, which it decodes for Spring). Each as sent and %-decoded; an RFC 2231
 * value (`utf-8''%5Fmethod`) decoded. A value is read no further than a name could reach (each
 * character %-encoded); one still in its leading whitespace there counts as an override.
 */
function valueNamesOverride(buf: Buffer, i: number, extended: boolean, ctx: ScanContext): boolean {
  const { names } = ctx;
  const limit = limitOf(buf, i);
  // Any whitespace before a value, line breaks, \v and \f included (PHP's php_ap_getword_conf).
  const start = i;
  while (i < limit && isWhitespace(buf[i]!)) i++;
  if (i === limit) return limit - start >= READ_MAX;
  // Most values are passed over by their first byte: a quote, an encoded word or a name's start.
  const q = buf[i]!;
  const quoted = q === 0x22 || q === 0x27;
  if (!extended && !quoted && q !== 0x3d && !names.mayStart(q)) return false;
  const max = 3 * (names.longest + 1) + 8;
  // The common value (no escape, encoded word or line break) is compared as bytes.
  const vs = quoted ? i + 1 : i;
  const stopAt = Math.min(limit, vs + max);
  let ve = vs;
  let plain = !extended;
  for (; ve < stopAt; ve++) {
    const b = buf[ve]!;
    if (b === CR || b === LF) {
      plain = false;
      break;
    }
    if (quoted ? b === q : b === 0x3b || b === 0x2c || b === 0x22 || isWhitespace(b)) break;
    if (b === 0x5c || (b === 0x3d && buf[ve + 1] === 0x3f)) plain = false;
  }
  if (ve - vs >= max && leadingOnly(buf.toString('latin1', vs, ve))) return true;
  if (plain) return names.matchesBytes(buf, vs, ve, false);
  if (--ctx.exotic < 0) return true;
  const forms = new Set<string>();
  for (const reading of ['line', 'joined'] as const) {
    let raw = valueAt(buf, i, Math.min(limit, i + max), reading);
    // Encoded words: read further (one word per character of the longest name, each up to 76).
    if (raw.includes('=?')) raw = valueAt(buf, i, Math.min(limit, i + (names.longest + 2) * 76), 'words');
    if (extended) forms.add(decodeName(raw.replace(/^[^']*'[^']*'/, '')));
    else forms.add(raw).add(decodeName(raw));
  }
  for (const f of forms) if (names.matches(f.includes('=?') ? decodeWords(f) : f)) return true;
  return false;
}

const CR = 0x0d;
const LF = 0x0a;

/**
 * The value at `buf[i]`: quoted up to its quote, or a token up to `;`, `,`, a quote or whitespace;
 * `line` ends at a line break, `joined` skips one (not an empty line), `words` also reads on over
 * whitespace between two encoded words (a token as Commons FileUpload reads it, up to `;`).
 */
function valueAt(buf: Buffer, i: number, limit: number, reading: 'line' | 'joined' | 'words'): string {
  const q = buf[i];
  const quoted = q === 0x22 || q === 0x27;
  let out = '';
  for (let k = quoted ? i + 1 : i; k < limit; k++) {
    let c = buf[k]!;
    if (c === CR || c === LF) {
      if (reading !== 'joined') break;
      const next = c === CR && buf[k + 1] === LF ? k + 2 : k + 1;
      if (buf[next] === CR || buf[next] === LF) break; // an empty line ends a part's headers
      k = next - 1;
      continue;
    }
    if (reading === 'words' && !quoted && isWhitespace(c) && out.endsWith('?=')) {
      let j = k;
      while (j < limit && isWhitespace(buf[j]!) && buf[j] !== CR && buf[j] !== LF) j++;
      if (buf[j] === 0x3d && buf[j + 1] === 0x3f) {
        k = j - 1;
        continue;
      }
    }
    if (quoted ? c === q : c === 0x3b || c === 0x2c || c === 0x22 || isWhitespace(c)) break;
    if (quoted && c === 0x5c && k + 1 < limit) c = buf[++k]!;
    out += String.fromCharCode(c);
  }
  return out;
}

/** RFC 2047 encoded words (`=?charset?B|Q?text?=`, any label and case), whitespace between two dropped. */
function decodeWords(s: string): string {
  return s.replace(
    /=\?[^?\s]{1,64}\?([bBqQ])\?([^?\s]*)\?=(?:\s+(?==\?))?/g,
    (_, enc: string, text: string) =>
      enc.toLowerCase() === 'b'
        ? Buffer.from(text, 'base64').toString('latin1')
        : text
            .replace(/_/g, ' ')
            .replace(/=([0-9A-Fa-f]{2})/g, (__, h: string) => String.fromCharCode(parseInt(h, 16))),
  );
}

/**
 * JSON object keys (a `"`-quoted string followed by optional whitespace and `:`, anywhere) that are
 * exactly a configured name after JSON unescaping (Laravel's and Express's `req.body._method` are
 * case-sensitive). A string value holding escaped JSON is no key: its quotes are escaped.
 */
function jsonKeys(buf: Buffer, from: number, to: number, { names, jsonNeedles }: ScanContext): boolean {
  if (!jsonNeedles.some((b) => buf.includes(b, from))) return false;
  for (let q = buf.indexOf(0x22, from); q !== -1 && q < to; q = buf.indexOf(0x22, q + 1)) {
    if (!names.exactStarts.has(buf[q + 1]!)) continue;
    const limit = limitOf(buf, q + 1);
    let k = names.exactKeyAt(buf, q + 1, limit);
    if (k === -1) continue;
    for (k++; k < limit && (buf[k] === 0x20 || buf[k] === 0x09 || buf[k] === LF || buf[k] === CR); k++);
    // Whitespace up to the bound: a key, as far as the scan can tell.
    if (buf[k] === COLON || k - q > READ_MAX) return true;
  }
  return false;
}

/** What `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t` stand for, by the byte after the `\`. */
// prettier-ignore
const JSON_SHORT: Record<number, number> = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 8, 0x66: 12, 0x6e: 10, 0x72: 13, 0x74: 9 };
