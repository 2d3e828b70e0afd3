import type { IncomingMessage } from 'node:http';
import type { Counter } from 'prom-client';
import type { UrlKeyCheck } from '../guards/url-key-guard.js';
import { childCache } from '../observability/metrics.js';
import type { AuthFailureLimiter } from '../ratelimit/tier-limiter.js';
import { assertFunction } from './option-checks.js';
import '../request-state.js';

export interface KeyInUrlOptions {
  /** The URL key guard (`createUrlKeyGuard(paramNames)`). */
  checkUrlForKey: (url: string) => UrlKeyCheck;
  /** Per-address failed-authentication budget; `null` when disabled. */
  authFailures: Pick<AuthFailureLimiter, 'tryRecordFailure'> | null;
  /** `gateway_auth_failures_total`: counted with reason `key_in_url`. */
  failureCounter: Pick<Counter<'reason'>, 'labels'>;
  /** A URL carried something key-like (exposed-key handling); called after the failure is recorded. */
  onKeyInUrl?: (candidates: string[], req: IncomingMessage) => void;
}

export interface KeyInUrlNotes {
  /**
   * A URL carried a key: never logged (`req.gw.keyInUrl`), counted at once as a failed
   * authentication of the address, and a valid key among the candidates is flagged exposed (in the
   * background) — whatever the answer to the request is. Returns 0 when the failure was counted,
   * else the seconds the address must wait (its budget is used: nothing counted, no exposure
   * lookup). Never throws.
   */
  noteKeyInUrl(req: IncomingMessage, candidates: string[]): number;
  /** Checks `req.url` with the guard and notes a key when one is found; true when found. */
  checkAndNoteKeyInUrl(req: IncomingMessage): boolean;
}

/**
 * Builds the key-in-URL bookkeeping (threat model: T1, T4) shared by every step that can see a URL before the URL key guard
 * does (own endpoints, transport guard, route match) and by the guard itself.
 *
 * @example
 * const { checkAndNoteKeyInUrl } = createKeyInUrlNotes({ checkUrlForKey, authFailures: null, failureCounter });
 */
export function createKeyInUrlNotes(opts: KeyInUrlOptions): KeyInUrlNotes {
  assertFunction(opts.checkUrlForKey, 'checkUrlForKey');
  assertFunction(opts.failureCounter?.labels, 'failureCounter.labels');
  const { checkUrlForKey, authFailures, onKeyInUrl } = opts;
  // Label child resolved on first use: the series appears once a key was seen in a URL.
  const failuresBy = childCache(opts.failureCounter);
  function noteKeyInUrl(req: IncomingMessage, candidates: string[]): number {
    req.gw.keyInUrl = true;
    failuresBy('key_in_url').inc();
    // Check and count in one synchronous step: concurrent requests cannot all see a free slot.
    const wait = authFailures ? authFailures.tryRecordFailure(req.gw.clientIp) : 0;
    // A blocked address gets no more store lookups for exposure checks either.
    // After the answer is on its way; the exposure handler reports its own failures.
    if (wait === 0 && onKeyInUrl)
      queueMicrotask(() => {
        try {
          onKeyInUrl(candidates, req);
        } catch {
          // never thrown back into the request path (this runs outside it)
        }
      });
    return wait;
  }
  function checkAndNoteKeyInUrl(req: IncomingMessage): boolean {
    const found = checkUrlForKey(req.url ?? '');
    if (found.found) noteKeyInUrl(req, found.candidates);
    else if (found.overLimit)
      req.gw.keyInUrl = true; // not read to the end: never logged either
    else req.gw.urlGuardPassed = true;
    return found.found;
  }
  return { noteKeyInUrl, checkAndNoteKeyInUrl };
}
