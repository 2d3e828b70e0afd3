import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** Header names the signature covers; defaults match the gateway's defaults. */
export interface SignatureHeaderNames {
  signature?: string;
  companyId?: string;
  keyId?: string;
  companyTier?: string;
}

const DEFAULTS = {
  signature: 'x-gateway-signature',
  companyId: 'x-company-id',
  keyId: 'x-api-key-id',
  companyTier: 'x-company-tier',
};

/** What a signature covers. The body is not covered. */
export interface SignedFields {
  method: string;
  /** Path and query exactly as sent to the upstream. */
  target: string;
  companyId: string;
  keyId: string;
  tier: string;
}

/** Shortest secret any signing function accepts: 32 characters (the config schema's minimum too). */
const MIN_SECRET_LENGTH = 32;

/**
 * Refuses a missing or short secret at the call: an empty secret (say, an unset environment
 * variable) would let anyone compute a valid signature and so forge any identity.
 */
function assertSecret(secret: unknown, fn: string): void {
  if (typeof secret !== 'string' || secret.length < MIN_SECRET_LENGTH)
    throw new TypeError(`${fn}: secret must be a string of at least ${MIN_SECRET_LENGTH} characters`);
}

function payload(r: SignedFields, timestamp: number): string {
  // One field per line: none of them can contain a newline (HTTP forbids it), so fields cannot be shifted.
  return `v1\n${r.method.toUpperCase()}\n${r.target}\n${r.companyId}\n${r.keyId}\n${r.tier}\n${timestamp}`;
}

/**
 * Signs the identity the gateway vouches for: HMAC-SHA256 over method, request target (path and
 * query as sent to the upstream), company id, key id, tier and a Unix timestamp. Returns the
 * header value `t=<unix seconds>,v1=<hex>`. Throws a `TypeError` when `secret` is not a string of at
 * least 32 characters.
 *
 * @example
 * signGatewayRequest(secret, { method: 'POST', target: '/notify/v1/otps', companyId: 'acme', keyId: 'key_1', tier: 'free' });
 */
export function signGatewayRequest(secret: string, r: SignedFields & { timestamp?: number }): string {
  assertSecret(secret, 'signGatewayRequest');
  const t = r.timestamp ?? Math.floor(Date.now() / 1000);
  const mac = createHmac('sha256', secret).update(payload(r, t)).digest('hex');
  return `t=${t},v1=${mac}`;
}

/** `verifyGatewaySignature`'s answer: the signed identity, or why the signature was refused. */
export type SignatureCheck =
  | { ok: true; companyId: string; keyId: string; tier: string; timestamp: number }
  | { ok: false; reason: 'missing' | 'malformed' | 'expired' | 'mismatch' };

/**
 * For upstream services: checks that a request came through the gateway. Refuses a missing or
 * malformed signature, one whose timestamp is outside `toleranceSeconds` (default 300) of now
 * (replays outside the window), and any change to method, target, company id, key id or tier.
 * Comparison is constant-time. Throws a `TypeError` when `opts.secret` is not a string of at least
 * 32 characters: a short secret is a configuration error, never a verdict on the request.
 *
 * @example
 * const r = verifyGatewaySignature({ method: req.method, url: req.url, headers: req.headers }, { secret });
 * if (!r.ok) return res.status(401).end();
 */
export function verifyGatewaySignature(
  req: { method?: string; url?: string; headers: IncomingHttpHeaders },
  opts: { secret: string; toleranceSeconds?: number; headers?: SignatureHeaderNames; now?: number },
): SignatureCheck {
  assertSecret(opts.secret, 'verifyGatewaySignature');
  const names = { ...DEFAULTS, ...lower(opts.headers) };
  const sig = req.headers[names.signature];
  const companyId = req.headers[names.companyId];
  const keyId = req.headers[names.keyId];
  const tier = req.headers[names.companyTier];
  if (sig === undefined || companyId === undefined || keyId === undefined || tier === undefined) {
    return { ok: false, reason: 'missing' };
  }
  if (
    typeof sig !== 'string' ||
    typeof companyId !== 'string' ||
    typeof keyId !== 'string' ||
    typeof tier !== 'string'
  ) {
    return { ok: false, reason: 'malformed' };
  }
  const m = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(sig);
  if (!m) return { ok: false, reason: 'malformed' };
  const t = Number(m[1]);
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - t) > (opts.toleranceSeconds ?? 300)) return { ok: false, reason: 'expired' };
  const expected = createHmac('sha256', opts.secret)
    .update(payload({ method: req.method ?? '', target: req.url ?? '', companyId, keyId, tier }, t))
    .digest();
  if (!timingSafeEqual(expected, Buffer.from(m[2]!, 'hex'))) return { ok: false, reason: 'mismatch' };
  return { ok: true, companyId, keyId, tier, timestamp: t };
}

/**
 * Express/Connect middleware for upstreams: answers 401 `{error, details}` unless the request
 * carries a valid gateway signature. Mount it before any route. Throws a `TypeError` at creation
 * when `secret` is not a string of at least 32 characters.
 *
 * @example
 * app.use(gatewaySignatureMiddleware({ secret: process.env.GATEWAY_SIGNING_SECRET! }));
 */
export function gatewaySignatureMiddleware(opts: {
  secret: string;
  toleranceSeconds?: number;
  headers?: SignatureHeaderNames;
}) {
  assertSecret(opts.secret, 'gatewaySignatureMiddleware');
  return function requireGatewaySignature(
    req: { method?: string; url?: string; originalUrl?: string; headers: IncomingHttpHeaders },
    res: { statusCode: number; setHeader(n: string, v: string): unknown; end(b: string): unknown },
    next: () => void,
  ): void {
    const r = verifyGatewaySignature(
      { method: req.method, url: req.originalUrl ?? req.url, headers: req.headers },
      opts,
    );
    if (r.ok) return next();
    res.statusCode = 401;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.end(JSON.stringify({ error: 'Unauthorized', details: 'Request did not come through the gateway' }));
  };
}

function lower(h: SignatureHeaderNames | undefined): Partial<typeof DEFAULTS> {
  const out: Partial<typeof DEFAULTS> = {};
  for (const k of ['signature', 'companyId', 'keyId', 'companyTier'] as const) {
    const v = h?.[k];
    if (v) out[k] = v.toLowerCase();
  }
  return out;
}
