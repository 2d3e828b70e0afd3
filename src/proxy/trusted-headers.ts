import type { IncomingHttpHeaders } from 'node:http';

/** Hop-by-hop headers (RFC 9110 7.6.1) that a proxy must not forward. `transfer-encoding` stays: Node frames the body with it. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'expect'];
/** Headers that framing or routing needs; naming them in `Connection` does not remove them. */
const NEVER_DROPPED = new Set([
  'close',
  'keep-alive',
  'host',
  'content-length',
  'transfer-encoding',
  'content-type',
]);

/** Normal form for comparing header names: lowercase, `_` as `-` (some servers treat them alike). */
export function normaliseHeaderName(name: string): string {
  return name.toLowerCase().replace(/_/g, '-');
}

export interface TrustedHeaderNames {
  companyId: string;
  keyId: string;
  companyTier: string;
  requestId: string;
}

/**
 * Builds the function that makes the upstream's header set from the client's: everything except
 * `X-API-Key`, every client-sent copy of a trusted header (any case, `_` variants, repeated lines —
 * Node joins those into one entry), the `X-Forwarded-*` family, hop-by-hop headers and any header
 * named in `Connection` (an attacker could otherwise make a next hop drop the gateway's own
 * headers). Copies into a new object rather than deleting: cheaper, and the client's view stays intact.
 */
export function createHeaderScrubber(
  names: TrustedHeaderNames,
  extra: readonly string[] = [],
): (headers: IncomingHttpHeaders) => IncomingHttpHeaders {
  const dropped = new Set(
    [
      names.companyId,
      names.keyId,
      names.companyTier,
      names.requestId,
      'x-api-key',
      'x-forwarded-for',
      'x-forwarded-proto',
      'x-forwarded-host',
      'forwarded',
      'x-real-ip',
      ...extra,
      ...HOP_BY_HOP,
    ].map(normaliseHeaderName),
  );
  return function scrubHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
    let named: Set<string> | null = null;
    const connection = headers.connection;
    if (typeof connection === 'string') {
      for (const token of connection.split(',')) {
        const t = token.trim().toLowerCase();
        if (t && !NEVER_DROPPED.has(t)) (named ??= new Set()).add(t);
      }
    }
    const out: IncomingHttpHeaders = {};
    for (const name in headers) {
      // Node hands us lowercase names already; only `_` needs folding, and only when present.
      const n = name.includes('_') ? name.replace(/_/g, '-') : name;
      if (dropped.has(n) || (named !== null && named.has(name))) continue;
      out[name] = headers[name];
    }
    return out;
  };
}
