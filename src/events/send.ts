import { WEBHOOK_HEADERS, signWebhook } from '../signing.js';

/** One attempt's outcome: the receiver's status, or why there was none. */
export type AttemptResult =
  | { ok: true; status: number }
  | {
      ok: false;
      /** The receiver's status when it answered (non-2xx), else null. */
      status: number | null;
      /** A short, fixed-vocabulary reason: `HTTP 503`, `timeout`, `ECONNREFUSED`, `redirect (302) not followed`. */
      error: string;
      /** The receiver asked for no more attempts (410 Gone). */
      permanent: boolean;
      /** From the receiver's `Retry-After`, in ms, when it sent one. */
      retryAfterMs: number | null;
    };

/** What one attempt sends. */
export interface Attempt {
  url: string;
  secret: string;
  /** `webhook-id`: the event's id, the same on every attempt. */
  id: string;
  body: string;
  timeoutMs: number;
  /** Unix seconds for `webhook-timestamp` (the attempt's time). */
  timestamp: number;
  /** Aborts the attempt early (the gateway stops). */
  signal?: AbortSignal;
}

/**
 * POSTs one signed delivery (Standard Webhooks headers) to a receiver the operator configured, as
 * an untrusted peer: the whole attempt, connection to status line, is bounded by `timeoutMs`;
 * redirects are not followed (a 3xx is a failure: update the URL instead); the response body is
 * never read (cancelled at once, so a receiver cannot make the gateway hold or buffer anything);
 * credentials in the URL go in an `Authorization: Basic` header. Never throws. The error text is
 * from a fixed vocabulary (status, Node's error code, `timeout`), never the URL or the secret.
 */
export async function sendWebhook(a: Attempt): Promise<AttemptResult> {
  const url = new URL(a.url);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'notify-gateway-webhooks/1',
    [WEBHOOK_HEADERS.id]: a.id,
    [WEBHOOK_HEADERS.timestamp]: String(a.timestamp),
    [WEBHOOK_HEADERS.signature]: signWebhook(a.secret, { id: a.id, timestamp: a.timestamp, body: a.body }),
  };
  if (url.username || url.password) {
    const user = `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    headers.authorization = `Basic ${Buffer.from(user).toString('base64')}`;
    url.username = '';
    url.password = '';
  }
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers,
      body: a.body,
      redirect: 'manual',
      signal: a.signal
        ? AbortSignal.any([AbortSignal.timeout(a.timeoutMs), a.signal])
        : AbortSignal.timeout(a.timeoutMs),
    });
    // Nothing of the answer but its status and Retry-After is wanted.
    await res.body?.cancel().catch(() => undefined);
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
    const error =
      res.status >= 300 && res.status < 400 ? `redirect (${res.status}) not followed` : `HTTP ${res.status}`;
    return {
      ok: false,
      status: res.status,
      error,
      permanent: res.status === 410,
      retryAfterMs: parseRetryAfter(res.headers.get('retry-after')),
    };
  } catch (err) {
    return { ok: false, status: null, error: reasonOf(err), permanent: false, retryAfterMs: null };
  }
}

/** `Retry-After` as seconds (`120`) in ms; an HTTP date or anything else is ignored. */
function parseRetryAfter(v: string | null): number | null {
  return v !== null && /^\d{1,7}$/.test(v.trim()) ? Number(v.trim()) * 1000 : null;
}

/** A failed fetch's reason: `timeout`, or the cause's error code (`ECONNREFUSED`), else a fixed word. */
function reasonOf(err: unknown): string {
  const e = err as { name?: unknown; cause?: { code?: unknown } } | null;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'timeout';
  const code = e?.cause?.code;
  return typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code) ? code : 'request failed';
}
