import { parseInstant } from '../time.js';
import {
  countsAgainstCap,
  matchesAudit,
  type AuditEntry,
  type AuditQuery,
  type Company,
  type CompanyPatch,
  type CompanyUpdate,
  type CreateKeyResult,
  type Invalidation,
  type KeyPatch,
  type KeyRecord,
  type KeyStore,
} from './types.js';

const AUDIT_CAP = 10_000;

/**
 * In-process store for tests and the demo. Not shared between processes: with `--workers` it is
 * refused (see server.ts). Records are copied in and out so callers cannot mutate stored state.
 */
export class MemoryKeyStore implements KeyStore {
  readonly kind = 'memory' as const;
  readonly writable = true;
  private companies = new Map<string, Company>();
  private keysById = new Map<string, KeyRecord>();
  private keysByHash = new Map<string, KeyRecord>();
  private audit: AuditEntry[] = [];
  private auditSeq = 0;
  private listeners: ((msg: Invalidation) => void)[] = [];

  async findKeyByHash(hash: string): Promise<KeyRecord | null> {
    const rec = this.keysByHash.get(hash);
    return rec ? { ...rec } : null;
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    const rec = this.keysById.get(id);
    return rec ? { ...rec } : null;
  }

  async listKeys(companyId: string): Promise<KeyRecord[]> {
    return [...this.keysById.values()]
      .filter((k) => k.companyId === companyId)
      .map((k) => ({ ...k }))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  async createKey(
    record: KeyRecord,
    maxActiveKeys: number,
    now: string,
    replaces?: string,
  ): Promise<CreateKeyResult> {
    if (!this.companies.has(record.companyId)) return { ok: false, reason: 'company_not_found' };
    if (maxActiveKeys > 0) {
      const at = Date.parse(now);
      const keys = [...this.keysById.values()].filter((k) => k.companyId === record.companyId);
      const ids = new Set(keys.map((k) => k.id));
      let counted = keys.filter((k) => countsAgainstCap(k, ids, at));
      // A rotation's successor takes the place of the key it replaces (see KeyStore.createKey).
      const old = replaces === undefined ? undefined : this.keysById.get(replaces);
      if (old && old.rotatedTo === record.id && old.revokedAt !== null && counted.includes(old))
        counted = counted.filter((k) => k !== old);
      if (counted.length >= maxActiveKeys) return { ok: false, reason: 'too_many_keys' };
    }
    this.putKey({ ...record });
    return { ok: true };
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord | null> {
    const rec = this.keysById.get(id);
    if (!rec) return null;
    // No await between read and write: atomic in this process, like the Lua script on Redis.
    // A rotation's claim: only one wins; a lost one writes nothing.
    if (patch.rotation && rec.rotatedTo !== patch.rotation.from) return { ...rec };
    // A rotated key's restrictions went to its successor: they no longer change (nothing is written).
    if (rec.rotatedTo !== null && (patch.scopes !== undefined || patch.limits !== undefined))
      return { ...rec };
    for (const f of ['revokedAt', 'expiresAt', 'exposedAt'] as const) {
      const v = patch[f];
      if (v !== undefined && v !== null && isEarlier(v, rec[f])) rec[f] = v;
    }
    if (patch.rotation) rec.rotatedTo = patch.rotation.to;
    if (patch.label !== undefined) rec.label = patch.label;
    if (patch.disabledAt !== undefined) rec.disabledAt = patch.disabledAt;
    if (patch.scopes !== undefined) rec.scopes = patch.scopes;
    if (patch.limits !== undefined) rec.limits = patch.limits;
    return { ...rec };
  }

  async touchKey(key: Pick<KeyRecord, 'id' | 'hash'>, at: string): Promise<void> {
    const rec = this.keysById.get(key.id);
    if (rec && (rec.lastUsedAt === null || rec.lastUsedAt < at)) rec.lastUsedAt = at;
  }

  async getCompany(id: string): Promise<Company | null> {
    const c = this.companies.get(id);
    return c ? { ...c } : null;
  }

  async listCompanies(): Promise<Company[]> {
    return [...this.companies.values()].map((c) => ({ ...c })).sort((a, b) => a.id.localeCompare(b.id));
  }

  async createCompany(company: Company): Promise<boolean> {
    if (this.companies.has(company.id)) return false;
    this.companies.set(company.id, { ...company });
    return true;
  }

  async updateCompany(id: string, patch: CompanyPatch, now: string): Promise<CompanyUpdate | null> {
    const c = this.companies.get(id);
    if (!c) return null;
    const before = { ...c };
    for (const [k, v] of Object.entries(patch)) if (v !== undefined) Object.assign(c, { [k]: v });
    if (now > c.updatedAt) c.updatedAt = now;
    return { before, after: { ...c } };
  }

  async appendAudit(entry: AuditEntry): Promise<void> {
    this.audit.push({ ...entry, id: String(++this.auditSeq) });
    if (this.audit.length > AUDIT_CAP) this.audit.splice(0, this.audit.length - AUDIT_CAP);
  }

  async readAudit(q: AuditQuery): Promise<AuditEntry[]> {
    // Ids are increasing integers: a cursor that is not one matches nothing.
    const after = q.after === undefined ? -Infinity : Number(q.after);
    const before = q.before === undefined ? Infinity : Number(q.before);
    const inRange = (e: AuditEntry) => Number(e.id) > after && Number(e.id) < before && matchesAudit(e, q);
    const out: AuditEntry[] = [];
    const forward = q.after !== undefined;
    for (let i = 0; i < this.audit.length && out.length < q.limit; i++) {
      const e = this.audit[forward ? i : this.audit.length - 1 - i]!;
      if (inRange(e)) out.push({ ...e });
    }
    return out;
  }

  async publish(msg: Invalidation): Promise<void> {
    for (const l of this.listeners) l(msg);
  }

  subscribe(listener: (msg: Invalidation) => void): void {
    this.listeners.push(listener);
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.listeners = [];
  }

  /**
   * Replaces every company and key at once, synchronously (the file store's reload); audit entries
   * and listeners stay. The given objects are stored as they are, so the caller hands them over.
   * `carry(next, previous)` runs for each new key whose id existed before, with the record it
   * replaces, so fields kept only in memory can survive. Publishes nothing.
   */
  replaceContents(
    companies: Company[],
    keys: KeyRecord[],
    carry?: (next: KeyRecord, previous: KeyRecord) => void,
  ): void {
    const previous = this.keysById;
    this.companies = new Map(companies.map((c) => [c.id, c]));
    this.keysById = new Map();
    this.keysByHash = new Map();
    for (const k of keys) {
      const old = previous.get(k.id);
      if (old && carry) carry(k, old);
      this.putKey(k);
    }
  }

  private putKey(rec: KeyRecord): void {
    this.keysById.set(rec.id, rec);
    this.keysByHash.set(rec.hash, rec);
  }
}

/**
 * Whether `next` should replace the stored end time `stored`: only when it is earlier. A stored
 * value that does not parse already counts as ended (fail closed) and is kept.
 */
export function isEarlier(next: string, stored: string | null): boolean {
  if (stored === null || stored === '') return true;
  const s = parseInstant(stored);
  return s !== null && (parseInstant(next) ?? Infinity) < s;
}
