import type { IncomingMessage } from 'node:http';
import '../request-state.js';

/**
 * The first entry of a possibly repeated, comma-separated header value, trimmed; `undefined` when
 * absent or empty.
 *
 * @example
 * firstValue('https, http') // 'https'
 */
export function firstValue(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  return s?.split(',')[0]?.trim() || undefined;
}

/**
 * HTTPS on our own socket, or `X-Forwarded-Proto: https` from a trusted terminator. Needs `req.gw`
 * (its `peerTrusted` decides whether the forwarded header is believed).
 */
export function isHttps(req: IncomingMessage): boolean {
  if ((req.socket as { encrypted?: boolean }).encrypted) return true;
  return (
    req.gw.peerTrusted === true && firstValue(req.headers['x-forwarded-proto'])?.toLowerCase() === 'https'
  );
}
