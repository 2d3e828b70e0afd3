import type { LeaseDecision, TakenWindow } from './lease-limiter.js';

/**
 * What the limiter learnt of one window's count: before and after points were taken, and when the
 * window ends (Redis `TIME` ms for shared limits, `Date.now()` ms in memory). For
 * `TierLimiterOptions.onWindowUse` (the `quota.threshold` event, src/events/quota.ts).
 */
export interface WindowUse {
  companyId: string;
  /** The key whose own window it is; null for the company's. */
  keyId: string | null;
  points: number;
  duration: number;
  usedBefore: number;
  used: number;
  endsAt: number;
}

/**
 * Windows shorter than this are never reported: the threshold events watch days and longer, and
 * not reporting the rest keeps the in-memory path at one comparison per window and request.
 */
export const REPORTED_MIN_SECONDS = 86_400;

/**
 * Reports a lease take (`LeaseLimiter`'s `onTaken`): the counts Redis holds after the grant, i.e.
 * the whole deployment's. `subject` is the tier limiter's (`companyId` or `companyId\nkeyId`); a
 * key's own window is the one whose counter is named `…:k:<keyId>:…`.
 */
export function reportTaken(
  subject: string,
  windows: readonly TakenWindow[],
  report: (u: WindowUse) => void,
): void {
  const [companyId = '', keyId = null] = subject.split('\n');
  for (const w of windows) {
    if (w.duration < REPORTED_MIN_SECONDS) continue;
    const own = keyId !== null && w.key.includes(`}:k:${keyId}:`);
    report({
      companyId,
      keyId: own ? keyId : null,
      points: w.points,
      duration: w.duration,
      usedBefore: w.used - w.granted,
      used: w.used,
      endsAt: w.endsAt,
    });
  }
}

/**
 * Reports one request counted in memory (no Redis): `d` is the decision for `windows` (same order),
 * `now` its clock. Allocates nothing unless a window is a day or longer.
 */
export function reportCounted(
  companyId: string,
  keyId: string | null,
  windows: readonly { owner: 'company' | 'key' }[],
  d: LeaseDecision,
  now: number,
  report: (u: WindowUse) => void,
): void {
  if (!d.allowed) return;
  for (let i = 0; i < d.windows.length; i++) {
    const w = d.windows[i]!;
    if (w.duration < REPORTED_MIN_SECONDS) continue;
    const used = w.points - w.remaining;
    report({
      companyId,
      keyId: windows[i]?.owner === 'key' ? keyId : null,
      points: w.points,
      duration: w.duration,
      usedBefore: used - 1,
      used,
      endsAt: now + w.msBeforeReset,
    });
  }
}
