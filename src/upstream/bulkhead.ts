/** `routes[].maxInFlight`. */
export interface BulkheadOptions {
  perCompany: number;
  perKey?: number | undefined;
}

/**
 * Requests in flight per company (and per key) on one route, capped: one tenant's slow requests
 * cannot take every connection to a shared backend. An entry exists only while its count is above
 * zero, so memory follows what is in flight, not how many companies were ever seen.
 *
 * @example
 * const bulkhead = new Bulkhead({ perCompany: 20 });
 * const release = bulkhead.tryAcquire('acme', 'key_1');
 * if (release === null) answer503(); else res.once('close', release);
 */
export class Bulkhead {
  readonly #opts: BulkheadOptions;
  readonly #companies = new Map<string, number>();
  readonly #keys = new Map<string, number>();

  constructor(opts: BulkheadOptions) {
    this.#opts = opts;
  }

  /** A release function (call once, when the request is over), or null when a cap is reached. */
  tryAcquire(companyId: string, keyId: string): (() => void) | null {
    const c = this.#companies.get(companyId) ?? 0;
    if (c >= this.#opts.perCompany) return null;
    const perKey = this.#opts.perKey;
    const k = perKey === undefined ? 0 : (this.#keys.get(keyId) ?? 0);
    if (perKey !== undefined && k >= perKey) return null;
    this.#companies.set(companyId, c + 1);
    if (perKey !== undefined) this.#keys.set(keyId, k + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      decrement(this.#companies, companyId);
      if (perKey !== undefined) decrement(this.#keys, keyId);
    };
  }

  /** Requests in flight for a company. */
  inFlight(companyId: string): number {
    return this.#companies.get(companyId) ?? 0;
  }
}

function decrement(map: Map<string, number>, id: string): void {
  const n = (map.get(id) ?? 1) - 1;
  if (n <= 0) map.delete(id);
  else map.set(id, n);
}
