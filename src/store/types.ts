/** A company's standing, as the spec describes it (section 5). */
export type CompanyStatus = 'active' | 'pending' | 'suspended';

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

export type CompanyPatch = Partial<Pick<Company, 'name' | 'tier' | 'status' | 'apiAccess'>>;

/** One atomic company update: the company right before and right after this write. */
export interface CompanyUpdate {
  before: Company;
  after: Company;
}

/** What `updateKey` may change. See `KeyStore.updateKey` for the rules. */
export type KeyPatch = Partial<
  Pick<KeyRecord, 'revokedAt' | 'expiresAt' | 'exposedAt' | 'rotatedTo' | 'label'>
>;

/** Cache invalidation message, published by writers and applied by every instance. */
export type Invalidation = { kind: 'key'; hash: string } | { kind: 'company'; id: string } | { kind: 'all' };

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
  /**
   * Sets fields on an existing key, atomically; returns the record right after this write, or null
   * if unknown. `revokedAt`, `expiresAt` and `exposedAt` only ever move EARLIER: the stored value
   * becomes min(stored, patch); `null` in the patch changes nothing, and a stored value that does
   * not parse is kept (it already counts as ended). So no write can un-revoke a key, postpone its
   * revocation or extend its life (invariant 2), and the active-key set never grows behind the
   * cap's back (invariant 5). Other fields are set as given.
   */
  updateKey(id: string, patch: KeyPatch): Promise<KeyRecord | null>;
  /** Records last use (only ever later, only on an existing key); best effort, never on the request's critical path. */
  touchKey(key: Pick<KeyRecord, 'id' | 'hash'>, at: string): Promise<void>;

  getCompany(id: string): Promise<Company | null>;
  listCompanies(): Promise<Company[]>;
  /** Writes the whole company at once (no reader sees half of it); false when the id exists already. */
  createCompany(company: Company): Promise<boolean>;
  /**
   * Writes only the patched fields and `updatedAt` (never earlier than stored), atomically and only
   * if the company exists, so concurrent changes to different fields all apply. Returns the
   * company right before and right after this write (for an exact audit diff), or null if unknown.
   */
  updateCompany(id: string, patch: CompanyPatch, now: string): Promise<CompanyUpdate | null>;

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

/** UTC timestamp `YYYY-MM-DDTHH:MM:SSZ`, as the spec requires for every timestamp. */
export function isoSeconds(d: Date | number = Date.now()): string {
  const date = typeof d === 'number' ? new Date(d) : d;
  return date.toISOString().slice(0, 19) + 'Z';
}

/**
 * Whether a key record can authenticate at `now` (ms). A `revokedAt` or `expiresAt` that is not a
 * real instant fails closed: the key counts as revoked or expired (invariant 4).
 */
export function isKeyActive(rec: Pick<KeyRecord, 'revokedAt' | 'expiresAt'>, now: number): boolean {
  return !hasPassed(rec.revokedAt, now) && !hasPassed(rec.expiresAt, now);
}

/** Whether an optional end time (`revokedAt`, `expiresAt`) has passed at `now`; unparseable = passed. */
export function hasPassed(at: string | null, now: number): boolean {
  if (at === null) return false;
  const ms = parseInstant(at);
  return ms === null || ms <= now;
}

/** Company and key ids: safe in URLs, headers, Redis key names and log lines. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** A SHA-256 hex digest (optionally written `sha256:<hex>` in the file store). */
export const HASH_PATTERN = /^[0-9a-f]{64}$/;
/** A UTC timestamp as the spec writes it (the shape only: see `parseInstant` for a real instant). */
export const TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/**
 * The instant (ms) a `YYYY-MM-DDTHH:MM:SSZ` timestamp names, or null when it is not one: wrong
 * shape, or a shape that names no instant (month 13, February 30, hour 24, second 60). `Date.parse`
 * alone is not enough: it gives NaN for some of these and silently rolls others over
 * (`2027-02-30` becomes March 2, `T24:00:00` the next day), so the value must format back to itself.
 */
export function parseInstant(s: string): number | null {
  if (!TIMESTAMP_PATTERN.test(s)) return null;
  const ms = Date.parse(s);
  if (Number.isNaN(ms) || isoSeconds(ms) !== s) return null;
  return ms;
}

/** Message for a timestamp that is not a real instant (400 details, key-file problems). */
export const INSTANT_MESSAGE = 'must be a real UTC instant YYYY-MM-DDTHH:MM:SSZ';

/**
 * Whether a store rejection is an outage (the store cannot be reached or cannot serve right now:
 * connection closed or refused, command timed out, Cluster or replica down, loading) rather than
 * a bug or a refused command. Outages answer 503 (retry later); anything else is a 500. Matched
 * by name and message because ioredis reports connection failures as plain `Error`s.
 */
export function isStoreOutage(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (['MaxRetriesPerRequestError', 'ClusterAllFailedError', 'StoreUnavailableError'].includes(err.name))
    return true;
  return STORE_OUTAGE_MESSAGE.test(err.message);
}
const STORE_OUTAGE_MESSAGE =
  /^(LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|READONLY|NOREPLICAS|BUSY )|Connection is closed|Stream isn't writeable|Command timed out|enableOfflineQueue|None of (the )?startup nodes|Failed to refresh slots cache|Too many Cluster redirections|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|EHOSTUNREACH|ENOTFOUND|EAI_AGAIN|connect ETIMEDOUT/;
