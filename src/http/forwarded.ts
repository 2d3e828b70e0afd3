import type { IncomingMessage } from 'node:http';
import '../request-state.js';

/**
 * The last entry of a possibly repeated, comma-separated header value, trimmed; `undefined` when
 * absent or empty. Each proxy appends to these lists, so the last entry is the one the nearest hop
 * (a trusted proxy) wrote; the leftmost is whatever the client claimed (threat model: T3).
 *
 * @example
 * lastValue('https, http') // 'http'
 */
export function lastValue(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[v.length - 1] : v;
  return s?.slice(s.lastIndexOf(',') + 1).trim() || undefined;
}

/**
 * HTTPS on our own socket, or `X-Forwarded-Proto: https` appended by a trusted terminator (the last
 * entry decides; threat model: T3, T6). Needs `req.gw` (its `peerTrusted` decides whether the header is believed).
 */
export function isHttps(req: IncomingMessage): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted) return true;
  return (
    req.gw.peerTrusted === true && lastValue(req.headers['x-forwarded-proto'])?.toLowerCase() === 'https'
  );
}
