import type {
  AuditEntry,
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
  private readonly failures = new Map<StoreMethod, Error>();

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

  /** Makes every call of `m` reject with `err` (without reaching the real store) until `heal()`. */
  fail(m: StoreMethod, err: Error = new Error('store unreachable (probe)')): void {
    this.failures.set(m, err);
  }

  heal(m?: StoreMethod): void {
    if (m) this.failures.delete(m);
    else this.failures.clear();
  }

  private async around<T>(m: StoreMethod, run: () => Promise<T>): Promise<T> {
    this.counts_.set(m, this.count(m) + 1);
    const failure = this.failures.get(m);
    const gate = this.gates.get(m);
    const result = failure ? Promise.reject(failure) : run();
    result.catch(() => undefined); // observed below, after the gate
    if (gate) await gate;
    return result;
  }

  findKeyByHash(hash: string): Promise<KeyRecord | null> {
    return this.around('findKeyByHash', () => this.inner.findKeyByHash(hash));
  }
  getKey(id: string): Promise<KeyRecord | null> {
    return this.around('getKey', () => this.inner.getKey(id));
  }
  listKeys(companyId: string): Promise<KeyRecord[]> {
    return this.around('listKeys', () => this.inner.listKeys(companyId));
  }
  createKey(record: KeyRecord, maxActiveKeys: number, now: string): Promise<CreateKeyResult> {
    return this.around('createKey', () => this.inner.createKey(record, maxActiveKeys, now));
  }
  updateKey(id: string, patch: Parameters<KeyStore['updateKey']>[1]): Promise<KeyRecord | null> {
    return this.around('updateKey', () => this.inner.updateKey(id, patch));
  }
  touchKey(key: Pick<KeyRecord, 'id' | 'hash'>, at: string): Promise<void> {
    return this.around('touchKey', () => this.inner.touchKey(key, at));
  }
  getCompany(id: string): Promise<Company | null> {
    return this.around('getCompany', () => this.inner.getCompany(id));
  }
  listCompanies(): Promise<Company[]> {
    return this.around('listCompanies', () => this.inner.listCompanies());
  }
  createCompany(company: Company): Promise<boolean> {
    return this.around('createCompany', () => this.inner.createCompany(company));
  }
  updateCompany(id: string, patch: CompanyPatch, now: string): Promise<CompanyUpdate | null> {
    return this.around('updateCompany', () => this.inner.updateCompany(id, patch, now));
  }
  appendAudit(entry: AuditEntry): Promise<void> {
    return this.around('appendAudit', () => this.inner.appendAudit(entry));
  }
  readAudit(opts: { limit: number; companyId?: string }): Promise<AuditEntry[]> {
    return this.around('readAudit', () => this.inner.readAudit(opts));
  }
  publish(msg: Invalidation): Promise<void> {
    return this.around('publish', () => this.inner.publish(msg));
  }
  subscribe(listener: (msg: Invalidation) => void): void {
    this.counts_.set('subscribe', this.count('subscribe') + 1);
    this.inner.subscribe(listener);
  }
  ping(): Promise<void> {
    return this.around('ping', () => this.inner.ping());
  }
  close(): Promise<void> {
    return this.around('close', () => this.inner.close());
  }
}
