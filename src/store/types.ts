/** A company's standing, as the spec describes it (section 5). */
export type CompanyStatus = 'active' | 'pending' | 'suspended';

/** A customer of the fronted service; its tier picks the rate limit (spec section 5). */
export interface Company {
  id: string;
  name: string;
  tier: string;
  status: CompanyStatus;
  apiAccess: boolean;
  createdAt: string;
  updatedAt: string;
}

/** A stored key: never the key itself, only its SHA-256 and a display prefix. */
export interface KeyRecord {
  id: string;
  companyId: string;
  hash: string;
  prefix: string;
  label: string | null;
  environment: string | null;
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  /** Set when the key was seen in a URL (see keys.exposedKeys). */
  exposedAt: string | null;
  /** Set by rotation: the id of the key that replaced this one. */
  rotatedTo: string | null;
}

/** The company fields an update may change; `updatedAt` is set by the store. */
export type CompanyPatch = Partial<Pick<Company, 'name' | 'tier' | 'status' | 'apiAccess'>>;

/** Cache invalidation message, published by writers and applied by every instance. */
export type Invalidation = { kind: 'key'; hash: string } | { kind: 'company'; id: string } | { kind: 'all' };

/** One audit trail event; `id` is assigned by the store on append. Never holds a key or a hash. */
export interface AuditEntry {
  id?: string;
  at: string;
  event: string;
  companyId?: string;
  keyId?: string;
  keyPrefix?: string;
  actor?: string;
  details?: Record<string, unknown>;
}

/** Outcome of a key insert that respects the active-key cap. */
export type CreateKeyResult = { ok: true } | { ok: false; reason: 'company_not_found' | 'too_many_keys' };

/**
 * The storage port. Implementations: `MemoryKeyStore`, `FileKeyStore` (read-only),
 * `RedisKeyStore`. Reads return `null` for "not there"; every method rejects only on
 * infrastructure failure (or `StoreReadOnlyError` for writes to a read-only store).
 * Timestamps are `YYYY-MM-DDTHH:MM:SSZ` strings.
 *
 * A store of your own plugs in through `startGateway(config, { store })` or a `KeyVerifier`. Its
 * `publish` must reach every instance's `subscribe` listeners (this one's included), or revocations
 * wait for the cache TTL; a read-only store throws `StoreReadOnlyError` from its writes.
 *
 * @example
 * // Keys kept by an existing system, read-only (like the file store):
 * class LegacyKeyStore implements KeyStore {
 *   readonly kind = 'file' as const;
 *   readonly writable = false;
 *   async findKeyByHash(hash: string) { return toKeyRecord(await legacyDb.keyByHash(hash)); }
 *   async createKey(): Promise<CreateKeyResult> { throw new StoreReadOnlyError(); }
 *   // ... every other method of the port
 * }
 * const gw = await startGateway(config, { store: new LegacyKeyStore() });
 */
export interface KeyStore {
  readonly kind: 'memory' | 'file' | 'redis';
  readonly writable: boolean;

  /** Hot path: one lookup by the key's SHA-256. */
  findKeyByHash(hash: string): Promise<KeyRecord | null>;
  getKey(id: string): Promise<KeyRecord | null>;
  listKeys(companyId: string): Promise<KeyRecord[]>;
  /** Inserts a key unless the company has `maxActiveKeys` unrevoked, unexpired keys (0 = no cap). */
  createKey(record: KeyRecord, maxActiveKeys: number, now: string): Promise<CreateKeyResult>;
  /** Sets fields on an existing key; returns the updated record or null if unknown. */
  updateKey(
    id: string,
    patch: Partial<Pick<KeyRecord, 'revokedAt' | 'expiresAt' | 'exposedAt' | 'rotatedTo' | 'label'>>,
  ): Promise<KeyRecord | null>;
  /** Records last use; best effort, never on the request's critical path. */
  touchKey(key: Pick<KeyRecord, 'id' | 'hash'>, at: string): Promise<void>;

  getCompany(id: string): Promise<Company | null>;
  listCompanies(): Promise<Company[]>;
  /** Returns false when the id exists already. */
  createCompany(company: Company): Promise<boolean>;
  updateCompany(id: string, patch: CompanyPatch, now: string): Promise<Company | null>;

  /** Appends to the capped audit trail. */
  appendAudit(entry: AuditEntry): Promise<void>;
  readAudit(opts: { limit: number; companyId?: string }): Promise<AuditEntry[]>;

  /** Broadcasts an invalidation to every instance (including this one). */
  publish(msg: Invalidation): Promise<void>;
  /** Registers the listener for invalidations; called once by the verifier. */
  subscribe(listener: (msg: Invalidation) => void): void;

  /** Resolves when the store is usable; rejects otherwise (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Thrown by writes on a read-only store (the declarative file). */
export class StoreReadOnlyError extends Error {
  constructor() {
    super('The key store is read-only (file store): change the YAML file instead');
    this.name = 'StoreReadOnlyError';
  }
}

/** Whether a key record can authenticate at `now` (ms). */
export function isKeyActive(rec: KeyRecord, now: number): boolean {
  if (rec.revokedAt !== null && Date.parse(rec.revokedAt) <= now) return false;
  if (rec.expiresAt !== null && Date.parse(rec.expiresAt) <= now) return false;
  return true;
}

/** Company and key ids: safe in URLs, headers, Redis key names and log lines. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** A SHA-256 hex digest (optionally written `sha256:<hex>` in the file store). */
export const HASH_PATTERN = /^[0-9a-f]{64}$/;
