import type { IncomingHttpHeaders } from 'node:http';
import { KEY_RANDOM_LENGTH } from '../auth/api-key.js';
import { ENVIRONMENT_SOURCE } from '../config/field-patterns.js';
import { CLIENT_HEADER_POLICY, compilePolicy, HOP_BY_HOP, tableName } from './header-policy.js';
import type { KeyMatcher } from './key-material.js';
import { dropSplitCopies } from './strict-material.js';

/** Headers that framing or routing needs; naming them in `Connection` does not remove them. */
const NEVER_DROPPED = new Set([
  'close',
  'keep-alive',
  'host',
  'content-length',
  'transfer-encoding',
  'content-type',
]);
/** Set by the gateway (forward step): a client's copy never passes, a trusted proxy's is read there. */
const SET_BY_GATEWAY = new Set(['x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host']);
/** Client headers `headers.allowFromClients` cannot leave out: framing and routing. */
const ALWAYS_ALLOWED = ['host', 'content-length', 'transfer-encoding', 'content-type'];
/**
 * A key's shape in any case, `-` for `_` too: what a header name (Node lowercases it) or a hostname
 * (clients lowercase it, and write `-` for `_`) makes of a key. No checksum survives that, so every
 * such shape counts, whosever key it was.
 */
const FOLDED_KEY_SHAPE = new RegExp(`nk[_-]${ENVIRONMENT_SOURCE}[_-][0-9a-z]{38}`, 'i');
/** Hostnames: compared as names are (any case), since that is how clients write and forward them. */
const HOSTNAMES = new Set(['host', 'x-forwarded-host']);
/** Header names whose table decision is remembered (names repeat across requests; the cache is bounded). */
const NAME_CACHE_MAX = 4096;

/** The names of the headers the gateway sets for the upstream (`headers.*`). */
export interface TrustedHeaderNames {
  companyId: string;
  keyId: string;
  companyTier: string;
  requestId: string;
}

/** Normal form for comparing header names: lowercase, `_` as `-` (some servers treat them alike). */
export function normaliseHeaderName(name: string): string {
  return name.toLowerCase().replace(/_/g, '-');
}

/**
 * Look-alikes of the trusted header names (threat model: T3): the squashed name without its `x`
 * holds the squashed trusted name (`company-id`, `X-Api-Key-Id2`), or, for one under 6 characters
 * once squashed (`X-Org`), is it.
 */
function lookAlikeTest(trusted: readonly string[]): (squashed: string) => boolean {
  const words = trusted.map((t) => t.replace(/^x-/, '').replace(/[^a-z0-9]/g, ''));
  return (s) => {
    const bare = s.startsWith('x') ? s.slice(1) : s;
    return words.some((w) => (w.length < 6 ? bare === w : s.includes(w)));
  };
}

/**
 * Builds the function that makes the upstream's header set from the client's (threat model: T1,
 * T3; invariants 1 and 9). Dropped, whatever the case, `_` spelling or count:
 * - `X-API-Key`, the trusted names and their look-alikes, and every row of `CLIENT_HEADER_POLICY`
 *   and of `extra` (`headers.stripFromClients`), from every peer;
 * - every header named in `Connection`; from a peer that is not a trusted proxy, every
 *   `X-Forwarded-*` (from a trusted one, `-For/-Proto/-Host` in canonical spelling are kept for the
 *   forward step to read, and the rest of the family passes);
 * - with `allowOnly` (`headers.allowFromClients`), every header it does not list (names, or
 *   prefixes ending in `*`), except framing;
 * - every header whose name or value the key matcher finds key material in (from `Cookie`, only
 *   the pairs), and at the strict level every piece of a copy split over several (`dropSplitCopies`);
 *   a name or a hostname (`Host`, `X-Forwarded-Host`) also when it holds a key's shape or the
 *   presented key in any case (both are lowercased on the way: no checksum is left to check).
 * Copies into a new object; one Set lookup per name once its decision is cached.
 *
 * @example
 * const scrub = createHeaderScrubber({ companyId: 'x-company-id', keyId: 'x-api-key-id', companyTier: 'x-company-tier', requestId: 'x-request-id' });
 * scrub(req.headers, false, keyMatcherOf(req))
 */
export function createHeaderScrubber(
  names: TrustedHeaderNames,
  extra: readonly string[] = [],
  allowOnly?: readonly string[],
): (headers: IncomingHttpHeaders, peerTrusted: boolean, matcher: KeyMatcher) => IncomingHttpHeaders {
  const trusted = [names.companyId, names.keyId, names.companyTier].map(normaliseHeaderName);
  const exact = new Set([...trusted, normaliseHeaderName(names.requestId), 'x-api-key']);
  const inPolicy = compilePolicy(CLIENT_HEADER_POLICY, extra);
  const isLookAlike = lookAlikeTest(trusted);
  const allowed = allowOnly && compilePolicy([], [...allowOnly, ...ALWAYS_ALLOWED]);
  const decided = new Map<string, boolean>();
  const isDropped = (n: string): boolean => {
    let d = decided.get(n);
    if (d === undefined) {
      const t = tableName(n);
      d =
        inPolicy(t) ||
        isLookAlike(t.replace(/-/g, '')) ||
        FOLDED_KEY_SHAPE.test(n) ||
        (allowed !== undefined && !allowed(t));
      if (decided.size < NAME_CACHE_MAX) decided.set(n, d);
    }
    return d;
  };
  return function scrubHeaders(headers, peerTrusted, matcher) {
    const named = connectionTokens(headers.connection);
    const out: IncomingHttpHeaders = {};
    for (const name in headers) {
      // Node hands us lowercase names already; only `_` needs folding.
      const n = name.includes('_') ? name.replace(/_/g, '-') : name;
      if (exact.has(n) || (named !== null && named.has(n))) continue;
      if (n.startsWith('x-forwarded-') && !peerTrusted) continue;
      if (SET_BY_GATEWAY.has(n) ? n !== name : isDropped(n)) continue;
      const value = withoutKey(n, name, headers[name], matcher);
      if (value !== undefined) out[name] = value;
    }
    dropSplitCopies(out, matcher);
    return out;
  };
}

/** The header names listed in a `Connection` value, in normal form, or null when none. */
function connectionTokens(connection: string | string[] | undefined): Set<string> | null {
  if (connection === undefined) return null;
  let named: Set<string> | null = null;
  for (const line of Array.isArray(connection) ? connection : [connection]) {
    for (const token of line.split(',')) {
      const t = normaliseHeaderName(token.trim());
      if (t && !NEVER_DROPPED.has(t)) (named ??= new Set()).add(t);
    }
  }
  return named;
}

/** The value with the key removed: undefined drops the header; a cookie loses only the pairs holding it. */
function withoutKey(n: string, rawName: string, value: string | string[] | undefined, m: KeyMatcher) {
  if (value === undefined || m.holdsName(rawName)) return undefined;
  if (n === 'cookie' && typeof value === 'string') {
    const kept = value
      .split(';')
      .map((p) => p.trim())
      .filter((p) => p !== '' && !m.holds(p));
    return kept.length > 0 ? kept.join('; ') : undefined;
  }
  if (typeof value === 'string') return holdsKey(n, value, m) ? undefined : value;
  return value.some((v) => holdsKey(n, v, m)) ? undefined : value;
}

/** Whether the value of header `n` holds key material; a hostname in any case, as a name is read. */
function holdsKey(n: string, value: string, m: KeyMatcher): boolean {
  if (!HOSTNAMES.has(n)) return m.holds(value);
  // Shorter than half a key's secret (the least either matcher reads): nothing to look for.
  if (value.length < KEY_RANDOM_LENGTH / 2) return false;
  return FOLDED_KEY_SHAPE.test(value) || m.holdsName(value.toLowerCase());
}

/** Response headers that only the next hop may act on, beyond those named in `Connection`. */
const RESPONSE_HOP_BY_HOP = HOP_BY_HOP.filter((n) => n !== 'expect');

/**
 * Removes, in place, what an upstream's response must not pass on to the client (RFC 9110 §7.6.1;
 * threat model: T3, the other way; invariant 10): `Connection` and every header it names, `Keep-Alive`, `Proxy-*`, `TE`, `Trailer`,
 * `Upgrade`, and a plain `Transfer-Encoding: chunked` (Node frames the client's response itself).
 * Call it before the headers are copied to the client's response.
 */
export function scrubResponseHeaders(headers: IncomingHttpHeaders): void {
  const named = connectionTokens(headers.connection);
  if (named !== null)
    for (const name in headers) if (named.has(normaliseHeaderName(name))) delete headers[name];
  for (const n of RESPONSE_HOP_BY_HOP) delete headers[n];
  const te = headers['transfer-encoding'];
  if (typeof te === 'string' && te.trim().toLowerCase() === 'chunked') delete headers['transfer-encoding'];
}
