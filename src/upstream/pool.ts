import { maskUrlCredentials } from '../redact.js';
import { isoSeconds } from '../time.js';
import { createBalancer, type Balanced, type Balancer, type BalancingKind } from './balancer.js';
import { OutlierDetector, type OutlierOptions, type OutlierState } from './outlier.js';

/** A target as configured (or resolved): base URL, weight, and the `Host` to send when not the URL's. */
export interface PoolTargetInput {
  url: string;
  weight: number;
  host?: string | undefined;
}

/** One target of a pool with its live state. */
export interface PoolTarget extends Balanced, OutlierState {
  readonly url: URL;
  /** The `Host` header it gets: the URL's, or the name it was resolved from. */
  readonly hostHeader: string;
  /** The target's own path without trailing slashes, prefixed to the request path. */
  readonly basePath: string;
  /** False while active health checks see the target unhealthy. */
  activeHealthy: boolean;
  /** Active checks in a row with the same result (positive: passed, negative: failed). */
  checkRun: number;
  /** The last failure's kind (`connect`, `timeout`, `status 503`, ...), or null. */
  lastError: string | null;
}

/** Something worth a log line and a counter; the pool's owner decides how. */
export type PoolEvent =
  | { kind: 'ejected'; target: PoolTarget; forMs: number }
  | { kind: 'none-healthy'; mode: 'panic' | 'refuse'; first: boolean }
  | { kind: 'check'; target: PoolTarget; healthy: boolean };

export interface PoolOptions {
  targets: readonly PoolTargetInput[];
  balancing: BalancingKind;
  outlier: OutlierOptions;
  whenNoneHealthy: 'panic' | 'refuse';
  healthyThreshold?: number;
  unhealthyThreshold?: number;
  now?: () => number;
  random?: () => number;
  onEvent?: (e: PoolEvent) => void;
}

/** The answer of {@link UpstreamPool.pick}: a target, `refuse` (none healthy, refuse mode) or none left. */
export type PickResult = PoolTarget | 'refuse' | undefined;

/** A target as `GET /admin/v1/upstreams` shows it. */
export interface TargetView {
  url: string;
  weight: number;
  state: 'healthy' | 'ejected' | 'unhealthy';
  ejectedUntil: string | null;
  inFlight: number;
  ejections: number;
  lastError: string | null;
}

/**
 * A route's targets, their health and the choice of one per attempt. Healthy means neither ejected
 * (passive, {@link OutlierDetector}) nor failed by active checks. With no healthy target, `panic`
 * picks among all of them (like Envoy and APISIX), `refuse` answers `refuse`. A target already
 * tried by the request is not picked again.
 *
 * @example
 * const pool = new UpstreamPool({ targets, balancing: 'round-robin', outlier, whenNoneHealthy: 'panic' });
 * const t = pool.pick('acme', new Set());
 */
export class UpstreamPool {
  targets: PoolTarget[] = [];
  readonly #balance: Balancer<PoolTarget>;
  readonly #outlier: OutlierDetector;
  readonly #opts: PoolOptions;
  readonly #now: () => number;
  #panicking = false;

  constructor(opts: PoolOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
    this.#balance = createBalancer<PoolTarget>(opts.balancing, opts.random);
    this.#outlier = new OutlierDetector(opts.outlier);
    this.setTargets(opts.targets);
  }

  /** Replaces the target list (DNS re-resolution); targets kept by URL keep their state. */
  setTargets(list: readonly PoolTargetInput[]): void {
    const old = new Map(this.targets.map((t) => [t.id, t]));
    this.targets = list.map((t) => {
      const url = new URL(t.url);
      const kept = old.get(url.href);
      const hostHeader = t.host ?? url.host;
      if (kept !== undefined && kept.weight === t.weight && kept.hostHeader === hostHeader) return kept;
      return {
        id: url.href,
        url,
        hostHeader,
        basePath: url.pathname.replace(/\/+$/, ''),
        weight: t.weight,
        inFlight: kept?.inFlight ?? 0,
        current: 0,
        consecutiveFailures: 0,
        ejectedUntil: 0,
        ejections: 0,
        activeHealthy: true,
        checkRun: 0,
        lastError: null,
      };
    });
  }

  /** Neither ejected nor failed by active checks. */
  isHealthy(t: PoolTarget, now = this.#now()): boolean {
    return t.activeHealthy && t.ejectedUntil <= now;
  }

  /** How many targets are healthy now. */
  healthyCount(): number {
    const now = this.#now();
    return this.targets.filter((t) => this.isHealthy(t, now)).length;
  }

  /** A target for the next attempt of a request of `companyId` that already tried `tried`. */
  pick(companyId: string, tried: ReadonlySet<PoolTarget>): PickResult {
    const now = this.#now();
    let anyHealthy = false;
    const candidates: PoolTarget[] = [];
    for (const t of this.targets) {
      if (!this.isHealthy(t, now)) continue;
      anyHealthy = true;
      if (!tried.has(t)) candidates.push(t);
    }
    if (anyHealthy) this.#panicking = false;
    else {
      const mode = this.#opts.whenNoneHealthy;
      // Every request that finds none is reported (counted); `first` starts a spell (logged).
      if (tried.size === 0) this.#opts.onEvent?.({ kind: 'none-healthy', mode, first: !this.#panicking });
      this.#panicking = true;
      if (mode === 'refuse') return tried.size === 0 ? 'refuse' : undefined;
      for (const t of this.targets) if (!tried.has(t)) candidates.push(t);
    }
    return candidates.length === 0 ? undefined : this.#balance(candidates, companyId);
  }

  /** The outcome of one attempt: `error` is null for a good answer, else what went wrong. */
  onResult(t: PoolTarget, error: string | null): void {
    if (error === null) {
      this.#outlier.onSuccess(t);
      return;
    }
    t.lastError = error;
    const now = this.#now();
    if (this.#outlier.onFailure(t, this.targets, now))
      this.#opts.onEvent?.({ kind: 'ejected', target: t, forMs: t.ejectedUntil - now });
  }

  /** An active health check's result; enough passes in a row also end an ejection at once. */
  onCheck(t: PoolTarget, passed: boolean): void {
    t.checkRun = passed ? Math.max(t.checkRun, 0) + 1 : Math.min(t.checkRun, 0) - 1;
    const healthy = this.#opts.healthyThreshold ?? 1;
    const unhealthy = this.#opts.unhealthyThreshold ?? 1;
    if (passed && t.checkRun >= healthy && (!t.activeHealthy || t.ejectedUntil > this.#now())) {
      t.activeHealthy = true;
      t.ejectedUntil = Math.min(t.ejectedUntil, this.#now());
      t.consecutiveFailures = 0;
      this.#opts.onEvent?.({ kind: 'check', target: t, healthy: true });
    } else if (!passed && -t.checkRun >= unhealthy && t.activeHealthy) {
      t.activeHealthy = false;
      t.lastError = 'health check';
      this.#opts.onEvent?.({ kind: 'check', target: t, healthy: false });
    }
  }

  /** Every target as the admin API shows it. */
  view(): TargetView[] {
    const now = this.#now();
    return this.targets.map((t) => ({
      url: maskUrlCredentials(t.id),
      weight: t.weight,
      state: !t.activeHealthy ? 'unhealthy' : t.ejectedUntil > now ? 'ejected' : 'healthy',
      ejectedUntil: t.ejectedUntil > now ? isoSeconds(Math.ceil(t.ejectedUntil / 1000) * 1000) : null,
      inFlight: t.inFlight,
      ejections: t.ejections,
      lastError: t.lastError,
    }));
  }
}
