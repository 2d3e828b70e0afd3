import type {
  AuditEntry,
  AuditQuery,
  Company,
  CompanyPatch,
  CompanyUpdate,
  CreateKeyResult,
  Invalidation,
  KeyRecord,
  KeyStore,
} from '../../src/store/types.js';

/** Methods of the store port that a probe counts, holds or fails. */
export type StoreMethod = Exclude<keyof KeyStore, 'kind' | 'writable'>;

/**
 * A real store seen through a window: every call is delegated to `inner` (a real `MemoryKeyStore`
 * or `RedisKeyStore`), counted per method, and can be held or failed on command. Not a mock: the
 * answers are the real store's, the probe only decides when they arrive and whether they arrive.
 *
 * `hold(m)` lets the real call run at once and keeps its answer back until `release()`: the shape
 * of a lookup whose reply is still on the wire while other things happen (an invalidation, a write).
 */
export class ProbeKeyStore implements KeyStore {
  private readonly counts_ = new Map<StoreMethod, number>();
  private readonly gates = new Map<StoreMethod, Promise<void>>();
  private readonly failures = new Map<StoreMethod, { err: Error; when?: (...args: never[]) => boolean }>();
  private readonly deferrals = new Map<StoreMethod, { err: Error; kept: (() => Promise<unknown>)[] }>();

  constructor(readonly inner: KeyStore) {}

  get kind(): KeyStore['kind'] {
    return this.inner.kind;
  }
  get writable(): boolean {
    return this.inner.writable;
  }

  /** How many times `m` was called (also the calls that were held or failed). */
  count(m: StoreMethod): number {
    return this.counts_.get(m) ?? 0;
  }

  /** Every method's call count so far (methods never called are absent). */
  counts(): Partial<Record<StoreMethod, number>> {
    return Object.fromEntries(this.counts_.entries());
  }

  /** Holds every answer of `m` (called from now on) until the returned function is called. */
  hold(m: StoreMethod): () => void {
    let release!: () => void;
    this.gates.set(
      m,
      new Promise<void>((r) => {
        release = r;
      }),
    );
    return () => {
      this.gates.delete(m);
      release();
    };
  }

  /**
   * Makes every call of `m` reject with `err` (without reaching the real store) until `heal()`;
   * with `when`, only the calls whose arguments it accepts.
   */
  fail<M extends StoreMethod>(
    m: M,
    err: Error = new Error('store unreachable (probe)'),
    when?: (...args: Parameters<KeyStore[M]>) => boolean,
  ): void {
    this.failures.set(m, { err, ...(when ? { when: when as (...args: never[]) => boolean } : {}) });
  }

  /**
   * A write answered as an outage that the server still runs later (a timed-out Lua script runs
   * when Redis resumes): every call of `m` rejects with `err` at once, and the real call is kept
   * back. The returned function runs the kept calls on the real store, in order, and answers their
   * results. Until `heal()`.
   */
  defer(m: StoreMethod, err: Error): () => Promise<unknown[]> {
    const kept: (() => Promise<unknown>)[] = [];
    this.deferrals.set(m, { err, kept });
    return async () => {
      const results: unknown[] = [];
      for (const run of kept.splice(0)) results.push(await run());
      return results;
    };
  }

  heal(m?: StoreMethod): void {
    if (m) {
      this.failures.delete(m);
      this.deferrals.delete(m);
    } else {
      this.failures.clear();
      this.deferrals.clear();
    }
  }

  private async around<T>(m: StoreMethod, args: unknown[], run: () => Promise<T>): Promise<T> {
    this.counts_.set(m, this.count(m) + 1);
    const failure = this.failures.get(m);
    const failed = failure && (!failure.when || failure.when(...(args as never[])));
    const deferral = failed ? undefined : this.deferrals.get(m);
    deferral?.kept.push(run);
    const gate = this.gates.get(m);
    const result = failed ? Promise.reject(failure.err) : deferral ? Promise.reject(deferral.err) : run();
    result.catch(() => undefined); // observed below, after the gate
    if (gate) await gate;
    return result;
  }

  findKeyByHash(hash: string): Promise<KeyRecord | null> {
    return this.around('findKeyByHash', [hash], () => this.inner.findKeyByHash(hash));
  }
  getKey(id: string): Promise<KeyRecord | null> {
    return this.around('getKey', [id], () => this.inner.getKey(id));
  }
  listKeys(companyId: string): Promise<KeyRecord[]> {
    return this.around('listKeys', [companyId], () => this.inner.listKeys(companyId));
  }
  createKey(
    record: KeyRecord,
    maxActiveKeys: number,
    now: string,
    replaces?: string,
  ): Promise<CreateKeyResult> {
    return this.around('createKey', [record, maxActiveKeys, now, replaces], () =>
      this.inner.createKey(record, maxActiveKeys, now, replaces),
    );
  }
  updateKey(id: string, patch: Parameters<KeyStore['updateKey']>[1]): Promise<KeyRecord | null> {
    return this.around('updateKey', [id, patch], () => this.inner.updateKey(id, patch));
  }
  touchKey(key: Pick<KeyRecord, 'id' | 'hash'>, at: string): Promise<void> {
    return this.around('touchKey', [key, at], () => this.inner.touchKey(key, at));
  }
  getCompany(id: string): Promise<Company | null> {
    return this.around('getCompany', [id], () => this.inner.getCompany(id));
  }
  listCompanies(): Promise<Company[]> {
    return this.around('listCompanies', [], () => this.inner.listCompanies());
  }
  createCompany(company: Company): Promise<boolean> {
    return this.around('createCompany', [company], () => this.inner.createCompany(company));
  }
  updateCompany(id: string, patch: CompanyPatch, now: string): Promise<CompanyUpdate | null> {
    return this.around('updateCompany', [id, patch, now], () => this.inner.updateCompany(id, patch, now));
  }
  appendAudit(entry: AuditEntry): Promise<void> {
    return this.around('appendAudit', [entry], () => this.inner.appendAudit(entry));
  }
  readAudit(opts: AuditQuery): Promise<AuditEntry[]> {
    return this.around('readAudit', [opts], () => this.inner.readAudit(opts));
  }
  publish(msg: Invalidation): Promise<void> {
    return this.around('publish', [msg], () => this.inner.publish(msg));
  }
  subscribe(listener: (msg: Invalidation) => void): void {
    this.counts_.set('subscribe', this.count('subscribe') + 1);
    this.inner.subscribe(listener);
  }
  ping(): Promise<void> {
    return this.around('ping', [], () => this.inner.ping());
  }
  close(): Promise<void> {
    return this.around('close', [], () => this.inner.close());
  }
}
