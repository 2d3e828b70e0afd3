/** `routes[].outlier`. */
export interface OutlierOptions {
  consecutiveFailures: number;
  baseEjectionMs: number;
  maxEjectionMs: number;
  maxEjectedPercent: number;
}

/** What the detector reads and writes of a target. */
export interface OutlierState {
  consecutiveFailures: number;
  /** Epoch ms until which the target is ejected; 0 when it is not. */
  ejectedUntil: number;
  /** Ejections so far (the next one lasts base × 2^ejections, capped). */
  ejections: number;
}

/**
 * Passive health checking (outlier ejection), as in Envoy: after `consecutiveFailures` failures in a
 * row (connection failures, timeouts, 502/503/504 from the target), a target is ejected for
 * `baseEjectionMs` × 2^(ejections so far), at most `maxEjectionMs`. A success resets the count; a
 * target back for longer than `maxEjectionMs` starts again from the base time. Never more than
 * `maxEjectedPercent` of the targets are out at once (at least one may be, unless it is 0).
 *
 * @example
 * const detector = new OutlierDetector(route.outlier);
 * if (detector.onFailure(target, targets, Date.now())) log.warn('ejected');
 */
export class OutlierDetector {
  readonly #opts: OutlierOptions;

  constructor(opts: OutlierOptions) {
    this.#opts = opts;
  }

  /** A good answer: the failure run ends. */
  onSuccess(t: OutlierState): void {
    t.consecutiveFailures = 0;
  }

  /** A failure; true when it ejected the target. */
  onFailure(t: OutlierState, all: readonly OutlierState[], now: number): boolean {
    t.consecutiveFailures++;
    if (t.ejectedUntil > now || t.consecutiveFailures < this.#opts.consecutiveFailures) return false;
    if (!this.#mayEject(all, now)) return false;
    // Back and well for longer than the cap: the next ejection starts from the base time again.
    if (t.ejectedUntil !== 0 && now - t.ejectedUntil > this.#opts.maxEjectionMs) t.ejections = 0;
    const ms = Math.min(this.#opts.baseEjectionMs * 2 ** Math.min(t.ejections, 30), this.#opts.maxEjectionMs);
    t.ejections++;
    t.ejectedUntil = now + ms;
    t.consecutiveFailures = 0;
    return true;
  }

  #mayEject(all: readonly OutlierState[], now: number): boolean {
    const pct = this.#opts.maxEjectedPercent;
    if (pct === 0) return false;
    const ejected = all.filter((x) => x.ejectedUntil > now).length;
    return ejected === 0 || (ejected + 1) * 100 <= pct * all.length;
  }
}
