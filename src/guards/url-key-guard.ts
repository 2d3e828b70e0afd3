import { decodeBudget, decodeRepeatedly, isBase62, squash } from './decode.js';
import { addKeyShapes, type GuardLevel } from './key-material.js';
import { OverrideNames } from './method-override.js';
import { createStrictMatcher } from './strict-material.js';

/** What the URL key guard reads, and how far (`urlKeyGuard.*`, `methodOverride.params`, `guards.level`). */
export interface UrlGuardOptions {
  /** Parameter names that carry a key (`api_key`...): compared lowercase, letters and digits only. */
  paramNames: readonly string[];
  /** Parameter names that override the method (`_method`...): compared as `OverrideNames` reads them. */
  overrideNames: readonly string[];
  /** Query and matrix pieces examined (every piece between `&` or `;`, or `/` after a `;`). */
  maxParams: number;
  /** Path segments examined. */
  maxPathSegments: number;
  level: GuardLevel;
}

/**
 * What the guard saw: `candidates` (the key-named parameters' values and the key shapes, for the
 * exposure check); `overLimit`, the URL has more parts than the guard examines (refused, path
 * never logged); `undecided` (strict), a part still encoded after the last round; `methodOverride`,
 * a parameter names a method override. `found` when there is a candidate or it is undecided.
 */
export interface UrlKeyCheck {
  found: boolean;
  candidates: string[];
  overLimit: boolean;
  undecided: boolean;
  methodOverride: boolean;
}

interface Scan {
  candidates: string[];
  overLimit: boolean;
  methodOverride: boolean;
  /** Pieces left to examine. */
  params: number;
  decode: (s: string) => string;
  /** Decoded values joined in order (strict: a key split over `a=…&b=…`). */
  values: string;
}

/**
 * Builds the URL key guard, run before authentication (threat model: T1, T2, T4; invariant 8). A URL
 * carries a key when a query or matrix parameter has a key-like name (any case and separators,
 * %-decoded) or any part holds a key shape (`nk_<env>_` + 38 base62, any case, checksum not
 * needed). A parameter naming a method override is reported too. Each piece is %-decoded until it
 * stops changing (a client that encodes twice by mistake), at most 8 rounds within a budget of 2
 * characters decoded per character of the URL; past either the URL is *undecided* and counts as
 * carrying a key. Strict level: the whole URL and its joined values are also read by the strict
 * matcher with no presented key (bare bodies, base64/hex keys, separators; `createStrictMatcher`).
 *
 * Cost: linear in the URL's length; no exceptions, no backtracking regex. At most `maxParams`
 * pieces and `maxPathSegments` segments are examined; past a cap the result is `overLimit` and the
 * URL is only searched, as sent, for key shapes.
 *
 * @example
 * const check = createUrlKeyGuard({ paramNames: ['api_key'], overrideNames: ['_method'], maxParams: 256, maxPathSegments: 128, level: 'default' });
 * check('/notify/v1/otps?API%5FKEY=abc').candidates // ['abc']
 */
export function createUrlKeyGuard(opts: UrlGuardOptions): (url: string) => UrlKeyCheck {
  const full = decodeBudget(Infinity);
  const names = new Set(opts.paramNames.map((n) => squash(decodeRepeatedly(n, full))));
  const keyNames = { names, longest: Math.max(0, ...[...names].map((n) => n.length)) };
  const overrides = new OverrideNames(opts.overrideNames);
  const deep = opts.level === 'strict' ? createStrictMatcher('', true) : null;
  return function checkUrlForKey(url: string): UrlKeyCheck {
    const budget = decodeBudget(url.length);
    const scan: Scan = {
      candidates: [],
      overLimit: false,
      methodOverride: false,
      params: opts.maxParams,
      decode: (s) => decodeRepeatedly(s, budget),
      values: '',
    };
    const read = (name: string, value: string) => readPair(name, value, scan, keyNames, overrides);
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    if (path.split('/', opts.maxPathSegments + 2).length > opts.maxPathSegments + 1) scan.overLimit = true;
    else {
      const decoded = scan.decode(path);
      addKeyShapes(decoded, scan.candidates, true);
      // Matrix parameters (`/x;api_key=…`): after the first `;` every later segment is one.
      const semi = decoded.indexOf(';');
      if (semi !== -1) readPairs(decoded, semi + 1, true, scan, read);
      if (!scan.overLimit && q !== -1) readPairs(url, q + 1, false, scan, read);
    }
    if (scan.overLimit) addKeyShapes(url, scan.candidates, true);
    let undecided = budget.undecided;
    // The joined values differ from the URL's own reading only when there are two or more.
    const joined = opts.maxParams - scan.params > 1 ? scan.values : '';
    for (const text of deep ? [url, joined] : []) {
      const f = deep!.find(text);
      if (f?.undecided) undecided = true;
      else if (f) scan.candidates.push(...f.keys);
    }
    const c = scan.candidates;
    return {
      found: c.length > 0 || undecided,
      candidates: c.length > 1 ? [...new Set(c)] : c,
      overLimit: scan.overLimit,
      undecided,
      methodOverride: scan.methodOverride,
    };
  };
}

/**
 * Calls `read(name, value)` for each `name=value` piece of `s` from `start`, separated by `&` or
 * `;` (and `/` in matrix parameters), up to the piece budget (past it, `overLimit`). One native split.
 */
function readPairs(
  s: string,
  start: number,
  matrix: boolean,
  scan: Scan,
  read: (name: string, value: string) => void,
): void {
  const pieces = s.slice(start).split(matrix ? MATRIX_SEPARATOR : QUERY_SEPARATOR, scan.params + 1);
  const n = Math.min(pieces.length, scan.params);
  if (pieces.length > n) scan.overLimit = true;
  scan.params -= n;
  for (let i = 0; i < n; i++) {
    const piece = pieces[i]!;
    const eq = piece.indexOf('=');
    if (piece !== '') read(eq === -1 ? piece : piece.slice(0, eq), eq === -1 ? '' : piece.slice(eq + 1));
  }
}

const QUERY_SEPARATOR = /[&;]/;
const MATRIX_SEPARATOR = /[&;/]/;

function readPair(
  rawName: string,
  rawValue: string,
  scan: Scan,
  keyNames: KeyNames,
  overrides: OverrideNames,
): void {
  const name = scan.decode(rawName);
  // Read as PHP, Rack and qs read a query name: `+` a space, leading spaces and brackets dropped.
  if (overrides.matches(name, true)) scan.methodOverride = true;
  // `+` is a space in a form-encoded value; only a key-named parameter's value (a candidate) needs it.
  const keyNamed = isNamedIn(keyNames, name);
  const value = scan.decode(keyNamed ? rawValue.replaceAll('+', ' ') : rawValue);
  if (keyNamed) scan.candidates.push(value);
  else addKeyShapes(value, scan.candidates, true);
  addKeyShapes(name, scan.candidates, true);
  scan.values += value;
}

/** The key-named parameters, squashed, and the length of the longest. */
interface KeyNames {
  names: Set<string>;
  longest: number;
}

/**
 * `names.has(squash(name))` without building the squashed copy of a long name: the characters
 * `squash` keeps (ASCII letters and digits, the Kelvin sign, `\u0130`) are counted first, and a
 * name that keeps more than the longest key name cannot be one (a 15 KB name costs one pass, no copy).
 */
function isNamedIn(k: KeyNames, name: string): boolean {
  let kept = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if ((isBase62(c) || c === 0x212a || c === 0x130) && ++kept > k.longest) return false;
  }
  return k.names.has(squash(name));
}
