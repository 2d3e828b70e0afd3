import { parseInstant } from '../time.js';

/** A company's standing, as the spec describes it (section 5). */
export type CompanyStatus = 'active' | 'pending' | 'suspended';

/** One rate-limit window: `points` requests per fixed window of `duration` seconds. */
export interface RateWindow {
  points: number;
  /** Seconds. */
  duration: number;
}

/**
 * What a key or company may call: a configured route `prefix`, optionally only some `methods`
 * (uppercase; `GET` implies `HEAD`) and only some `paths` (full path prefixes under the route,
 * matched on a segment boundary). A list of scopes allows a request when one of them does.
 */
export interface Scope {
  route: string;
  methods?: string[];
  paths?: string[];
}

/** A customer of the fronted service; its tier picks the rate limit (spec section 5). */
export interface Company {
  id: string;
  name: string;
  tier: string;
  status: CompanyStatus;
  apiAccess: boolean;
  createdAt: string;
  updatedAt: string;
  /** Routes its keys may call; `null` = every route. */
  scopes: Scope[] | null;
  /** Its own rate-limit windows; `null` = its tier's windows. */
  limits: RateWindow[] | null;
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
  /**
   * Set (to when) while the key is disabled: it fails authentication like a revoked key, but
   * unlike a revocation this is undone by setting it back to null (`apply --prune` disables the
   * keys a file leaves out). A disabled key keeps its place under the active-key cap, so enabling
   * it again can never break the cap. Absent = null (records written before the field).
   */
  disabledAt?: string | null;
  /** Narrows the company's scopes (never widens them); `null` = the company's scopes. */
  scopes: Scope[] | null;
  /** Extra windows for this key alone, on top of the company's; `null` = none. */
  limits: RateWindow[] | null;
}

/** The company fields an update may change; `updatedAt` is set by the store. */
export type CompanyPatch = Partial<
  Pick<Company, 'name' | 'tier' | 'status' | 'apiAccess' | 'scopes' | 'limits'>
>;

/** One atomic company update: the company right before and right after this write. */
export interface CompanyUpdate {
  before: Company;
  after: Company;
}

/** What `updateKey` may change. See `KeyStore.updateKey` for the rules. */
export type KeyPatch = Partial<
  Pick<KeyRecord, 'revokedAt' | 'expiresAt' | 'exposedAt' | 'label' | 'scopes' | 'limits' | 'disabledAt'>
> & {
  /**
   * A rotation's claim: set `rotatedTo` to `to`, only when it is `from` now (`null`: the key was
   * not rotated yet). When it is not, the whole patch writes nothing. `to: null` gives a claim
   * back (a rotation whose new key could not be stored).
   */
  rotation?: { to: string | null; from: string | null };
};

/**
 * The least time a rotation's claim schedules the old key's revocation for (ms): the old key keeps
 * its place under the cap (it has no successor yet) while the successor is stored, however short
 * the grace period; a shorter one is applied once the successor is stored. A rotation that fails
 * half-way therefore never leaves the old key revoked at once without a successor.
 */
export const ROTATION_HOLD_MS = 60_000;

/**
 * Whether a key counts against its company's active-key cap at `now` (ms): it works, and it is
 * not on its way out. On its way out is a key that a rotation has replaced (`rotatedTo` names a
 * key in `existing`) and whose revocation is scheduled: it works until then, but its place
 * belongs to its successor. So a rotation works at the cap, and once every grace period has
 * ended the cap holds again. `existing` holds the ids of the company's keys.
 */
export function countsAgainstCap(
  k: Pick<KeyRecord, 'revokedAt' | 'expiresAt' | 'rotatedTo'>,
  existing: ReadonlySet<string>,
  now: number,
): boolean {
  if (!isKeyActive(k, now)) return false;
  return !(k.rotatedTo !== null && k.revokedAt !== null && existing.has(k.rotatedTo));
}

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

/**
 * What `readAudit` returns: at most `limit` entries that match every filter given. Newest first,
 * or oldest first when `after` is given (an export that resumes where it stopped). `before` and
 * `after` are entry ids from an earlier answer (exclusive); `from` (inclusive) and `to` (exclusive)
 * are UTC timestamps compared with `at`; `events` lists the wanted event names. A store reads at
 * most its whole capped trail to answer, never more.
 */
export interface AuditQuery {
  limit: number;
  companyId?: string;
  events?: readonly string[];
  from?: string;
  to?: string;
  before?: string;
  after?: string;
}

/** Whether an audit entry passes a query's filters (company, events, time range); not the cursors. */
export function matchesAudit(e: AuditEntry, q: AuditQuery): boolean {
  return (
    (q.companyId === undefined || e.companyId === q.companyId) &&
    (q.events === undefined || q.events.includes(e.event)) &&
    (q.from === undefined || e.at >= q.from) &&
    (q.to === undefined || e.at < q.to)
  );
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
  /**
   * Inserts a key unless the company has `maxActiveKeys` keys that count against the cap
   * (`countsAgainstCap`; 0 = no cap). `replaces`: the key this one succeeds in a rotation. When
   * that key names this record in its `rotatedTo`, has a scheduled revocation and still holds a
   * place under the cap, the place passes to this key, atomically, also at the cap.
   */
  createKey(
    record: KeyRecord,
    maxActiveKeys: number,
    now: string,
    replaces?: string,
  ): Promise<CreateKeyResult>;
  /**
   * Sets fields on an existing key, atomically; returns the record right after this write, or null
   * if unknown. `revokedAt`, `expiresAt` and `exposedAt` only ever move EARLIER: the stored value
   * becomes min(stored, patch); `null` in the patch changes nothing, and a stored value that does
   * not parse is kept (it already counts as ended). So no write can un-revoke a key, postpone its
   * revocation or extend its life (invariant 2), and the active-key set never grows behind the
   * cap's back (invariant 5). On a rotated key (`rotatedTo` set) a patch that names `scopes` or
   * `limits` writes nothing and returns the record as it is: rotation reads the restrictions in the
   * same atomic write that sets `rotatedTo` and hands them to the new key, so they must not change
   * afterwards (change the successor's). A patch with `rotation` writes nothing unless `rotatedTo`
   * is `rotation.from` (one claim wins). Other fields are set as given (`disabledAt: null` enables
   * a disabled key again).
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
  /** Entries of the capped trail that match `query` (see `AuditQuery`); ids are cursors. */
  readAudit(query: AuditQuery): Promise<AuditEntry[]>;

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

/** Company and key ids, and key hashes: the field rules live in config/fields.ts. */
export { HASH_PATTERN, ID_PATTERN } from '../config/field-patterns.js';
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
