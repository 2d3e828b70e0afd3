import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
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

// ---- Standard Webhooks (https://www.standardwebhooks.com): the gateway's event deliveries

/** The three headers of a Standard Webhooks delivery. */
export const WEBHOOK_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

/**
 * The HMAC key of a Standard Webhooks secret: `whsec_<base64>` (or the bare base64), decoded; at
 * least 24 bytes, as the spec asks. Throws a `TypeError` otherwise: a short or malformed secret is a
 * configuration error, never a verdict on a delivery.
 */
function webhookKey(secret: unknown, fn: string): Buffer {
  const b64 = typeof secret === 'string' ? secret.replace(/^whsec_/, '') : '';
  const key = /^[A-Za-z0-9+/]+={0,2}$/.test(b64) ? Buffer.from(b64, 'base64') : Buffer.alloc(0);
  if (key.length < 24)
    throw new TypeError(`${fn}: secret must be whsec_ and the base64 of at least 24 bytes`);
  return key;
}

/**
 * A Standard Webhooks signature, `v1,<base64 HMAC-SHA256>` over `<id>.<timestamp>.<body>`, for the
 * `webhook-signature` header. `id` must not contain a `.`; `timestamp` is Unix seconds; `body` is
 * the exact bytes sent. Throws a `TypeError` on a bad secret or id.
 *
 * @example
 * signWebhook('whsec_' + secretBase64, { id: 'evt_1', timestamp: 1700000000, body: '{"type":"key.revoked"}' });
 */
export function signWebhook(
  secret: string,
  msg: { id: string; timestamp: number; body: string | Buffer },
): string {
  const key = webhookKey(secret, 'signWebhook');
  if (!/^[^.\s]{1,256}$/.test(msg.id))
    throw new TypeError('signWebhook: id must be 1-256 characters without "." or spaces');
  const mac = createHmac('sha256', key)
    .update(`${msg.id}.${msg.timestamp}.`)
    .update(msg.body)
    .digest('base64');
  return `v1,${mac}`;
}

/** `verifyWebhook`'s answer: the delivery's id and timestamp, or why it was refused. */
export type WebhookCheck =
  | { ok: true; id: string; timestamp: number }
  | { ok: false; reason: 'missing' | 'malformed' | 'expired' | 'mismatch' };

/** Request headers as Node (`req.headers`) or fetch (`request.headers`) give them. */
export type HeaderSource = IncomingHttpHeaders | { get(name: string): string | null };

function headerOf(h: HeaderSource, name: string): string | string[] | undefined {
  if (typeof (h as { get?: unknown }).get === 'function')
    return (h as { get(n: string): string | null }).get(name) ?? undefined;
  return (h as IncomingHttpHeaders)[name];
}

/**
 * For webhook receivers: checks a delivery from the gateway (or any Standard Webhooks sender). Reads
 * `webhook-id`, `webhook-timestamp` and `webhook-signature`; refuses a timestamp more than
 * `toleranceSeconds` (default 300) from now (replays), and accepts when any `v1,` signature in the
 * space-separated list matches HMAC-SHA256 over `<id>.<timestamp>.<body>` with one of `secrets`
 * (several during a secret rotation). Constant-time comparison. `body` must be the raw bytes as
 * received, before any JSON parsing. Use the answer's `id` as an idempotency key: a delivery may
 * arrive more than once. Throws a `TypeError` for a malformed secret.
 *
 * @example
 * const r = verifyWebhook(req.headers, rawBody, { secret: process.env.WEBHOOK_SECRET! });
 * if (!r.ok) return res.writeHead(401).end();
 * if (await seenBefore(r.id)) return res.writeHead(200).end();
 */
export function verifyWebhook(
  headers: HeaderSource,
  body: string | Buffer,
  opts: { secret: string | readonly string[]; toleranceSeconds?: number; now?: number },
): WebhookCheck {
  const keys = (typeof opts.secret === 'string' ? [opts.secret] : opts.secret).map((s) =>
    webhookKey(s, 'verifyWebhook'),
  );
  if (keys.length === 0) throw new TypeError('verifyWebhook: at least one secret is needed');
  const id = headerOf(headers, WEBHOOK_HEADERS.id);
  const ts = headerOf(headers, WEBHOOK_HEADERS.timestamp);
  const sig = headerOf(headers, WEBHOOK_HEADERS.signature);
  if (id === undefined || ts === undefined || sig === undefined) return { ok: false, reason: 'missing' };
  if (typeof id !== 'string' || typeof ts !== 'string' || typeof sig !== 'string')
    return { ok: false, reason: 'malformed' };
  if (!/^[^.\s]{1,256}$/.test(id) || !/^\d{1,12}$/.test(ts)) return { ok: false, reason: 'malformed' };
  const timestamp = Number(ts);
  const now = opts.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (opts.toleranceSeconds ?? 300)) return { ok: false, reason: 'expired' };
  const given = sig
    .split(' ')
    .filter((s) => s.startsWith('v1,'))
    .map((s) => Buffer.from(s.slice(3), 'base64'))
    .filter((b) => b.length === 32);
  if (given.length === 0) return { ok: false, reason: 'malformed' };
  for (const key of keys) {
    const expected = createHmac('sha256', key).update(`${id}.${ts}.`).update(body).digest();
    if (given.some((g) => timingSafeEqual(expected, g))) return { ok: true, id, timestamp };
  }
  return { ok: false, reason: 'mismatch' };
}

/**
 * A new Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes.
 *
 * @example
 * const secret = generateWebhookSecret(); // 'whsec_…'
 */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}
