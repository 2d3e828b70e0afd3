import { isoSeconds } from '../time.js';
import type { EventBus } from './bus.js';

/** Windows this long or longer report `quota.threshold` (shorter ones reset before anyone could act). */
export const QUOTA_WINDOW_MIN_SECONDS = 86_400;

/** The thresholds, in percent of a window's points. */
export const QUOTA_THRESHOLDS = [80, 100] as const;

/**
 * What the limiter learnt of one window's count (`TierLimiterOptions.onWindowUse`): the count
 * before and after points were taken, and when the window ends, in the limiter's clock (Redis
 * `TIME` for shared limits, `Date.now()` in memory; the event store uses the same clock).
 */
export interface WindowCount {
  companyId: string;
  /** The key whose own window it is; null for the company's window. */
  keyId: string | null;
  points: number;
  duration: number;
  usedBefore: number;
  used: number;
  endsAt: number;
}

/**
 * The limiter's hook for `quota.threshold`: when a window of a day or longer crosses 80 % or 100 %
 * of its points, the event goes out once per window for the deployment (the once-key lives until
 * the window ends). With shared limits the count is what Redis has granted in leases (the whole
 * deployment's), so the event may come up to a lease's size (at most `rateLimit.lease.maxSize`,
 * and 1 near the limit) before the requests that use it; in memory it is this process's count.
 * Costs nothing per request: the limiter calls it when it learns a count (a lease take), and the
 * check is two comparisons.
 */
export function createQuotaWatcher(bus: Pick<EventBus, 'publish'>): (c: WindowCount) => void {
  return function onWindowUse(c) {
    if (c.duration < QUOTA_WINDOW_MIN_SECONDS) return;
    for (const threshold of QUOTA_THRESHOLDS) {
      const mark = Math.ceil((c.points * threshold) / 100);
      if (c.usedBefore >= mark || c.used < mark) continue;
      void bus.publish(
        'quota.threshold',
        {
          companyId: c.companyId,
          keyId: c.keyId,
          threshold,
          limit: c.points,
          windowSeconds: c.duration,
          used: Math.min(c.used, c.points),
          resetsAt: isoSeconds(c.endsAt),
        },
        { key: `quota:${c.companyId}:${c.keyId ?? '-'}:${c.duration}:${threshold}`, untilMs: c.endsAt },
      );
    }
  };
}
