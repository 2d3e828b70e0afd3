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
 * Builds the header scrubber run on every forwarded request: removes `X-API-Key`, every
 * client-sent copy of a trusted header (any case, `_` variants, repeated lines — Node joins those
 * into one entry), the `X-Forwarded-*` family, hop-by-hop headers and any header named in
 * `Connection` (an attacker could otherwise make a next hop drop the gateway's own headers).
 */
export function createHeaderScrubber(
  names: TrustedHeaderNames,
  extra: readonly string[] = [],
): (headers: IncomingHttpHeaders) => void {
  const protectedNames = new Set(
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
    ].map(normaliseHeaderName),
  );
  return function scrubHeaders(headers: IncomingHttpHeaders): void {
    const connection = headers.connection;
    if (typeof connection === 'string') {
      for (const token of connection.split(',')) {
        const t = token.trim().toLowerCase();
        if (t && !NEVER_DROPPED.has(t)) {
          delete headers[t];
        }
      }
    }
    for (const h of HOP_BY_HOP) delete headers[h];
    for (const name of Object.keys(headers)) {
      if (protectedNames.has(normaliseHeaderName(name))) delete headers[name];
    }
  };
}
