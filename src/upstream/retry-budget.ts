/** `routes[].retries.budget`: retries as a share of requests, plus a floor per second. */
export interface RetryBudgetOptions {
  ratio: number;
  minPerSecond: number;
  /** Milliseconds since an epoch (injected in tests). */
  now?: () => number;
}

/** The window the budget counts over, in one-second buckets. */
const WINDOW_SECONDS = 10;

/**
 * Bounds the retries of a route, like Envoy's retry budget: over the last 10 seconds, retries may
 * be at most `ratio` × requests plus `minPerSecond` × 10. A retry refused by the budget leaves the
 * request with the answer it has. Counts live in ten one-second buckets: constant memory.
 *
 * @example
 * const budget = new RetryBudget({ ratio: 0.2, minPerSecond: 3 });
 * budget.onRequest();
 * if (budget.tryRetry()) retry();
 */
export class RetryBudget {
  readonly #ratio: number;
  readonly #floor: number;
  readonly #now: () => number;
  readonly #requests = new Array<number>(WINDOW_SECONDS).fill(0);
  readonly #retries = new Array<number>(WINDOW_SECONDS).fill(0);
  #second = 0;

  constructor(opts: RetryBudgetOptions) {
    this.#ratio = opts.ratio;
    this.#floor = opts.minPerSecond * WINDOW_SECONDS;
    this.#now = opts.now ?? Date.now;
  }

  /** Counts a request (its first attempt). */
  onRequest(): void {
    this.#requests[this.#advance()]!++;
  }

  /** Takes one retry from the budget: false when the window's retries are at the bound. */
  tryRetry(): boolean {
    const i = this.#advance();
    let requests = 0;
    let retries = 0;
    for (let j = 0; j < WINDOW_SECONDS; j++) {
      requests += this.#requests[j]!;
      retries += this.#retries[j]!;
    }
    if (retries + 1 > this.#ratio * requests + this.#floor) return false;
    this.#retries[i]!++;
    return true;
  }

  /** The bucket of this second, clearing the buckets of the seconds that passed. */
  #advance(): number {
    const second = Math.floor(this.#now() / 1000);
    const gap = Math.min(second - this.#second, WINDOW_SECONDS);
    for (let k = 1; k <= gap; k++) {
      const j = (this.#second + k) % WINDOW_SECONDS;
      this.#requests[j] = 0;
      this.#retries[j] = 0;
    }
    if (gap > 0 || second < this.#second) this.#second = second;
    return ((second % WINDOW_SECONDS) + WINDOW_SECONDS) % WINDOW_SECONDS;
  }
}
