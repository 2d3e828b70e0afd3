import { LRUCache } from 'lru-cache';
import { GatewayError } from '../errors.js';
import { type Company, type Invalidation, type KeyRecord, type KeyStore } from '../store/types.js';
import { isoSeconds, parseInstant } from '../time.js';
import { hashApiKey, parseApiKey } from './api-key.js';

/** Why a request was denied; each maps to one entry of the error registry. */
export type DenyReason =
  | 'missing'
  | 'malformed'
  | 'checksum'
  | 'too_long'
  | 'unknown'
  | 'revoked'
  | 'expired'
  | 'disabled'
  | 'orphan'
  | 'company_inactive'
  | 'api_access_disabled';

/** The verifier's answer: the key and its company, or a denial as a value (code and reason). */
export type Verification =
  | { ok: true; key: KeyRecord; company: Company }
  | {
      ok: false;
      code: 'MISSING_KEY' | 'INVALID_KEY' | 'COMPANY_INACTIVE' | 'API_ACCESS_DISABLED';
      reason: DenyReason;
      /** The record, when one was found (revoked or expired): for the audit trail, never shown. */
      key?: KeyRecord;
    };

export type CacheOutcome = 'hit' | 'miss' | 'stale';

/** The store to read, cache sizes and TTLs (from `config.cache` and `config.keys`), and hooks. */
export interface VerifierOptions {
  store: KeyStore;
  maxEntries: number;
  positiveTtlMs: number;
  negativeTtlMs: number;
  staleIfErrorMs: number;
  maxKeyLength: number;
  acceptLegacyFormat: boolean;
  lastUsedIntervalMs: number;
  /** Observability hooks; all optional. */
  onCache?: (kind: 'key' | 'company', outcome: CacheOutcome) => void;
  onStoreError?: (op: string, err: unknown) => void;
  now?: () => number;
}

interface Entry<T> {
  value: T;
  fetchedAt: number;
}

/** How long after a failed store read stale copies are served without waiting for the store. */
const STORE_FAILING_MS = 1000;

/**
 * Authenticates API keys: format check, hash, cache, store, then the company checks — in that order,
 * as an ordered list of checks whose denials are values. Only an unreachable store with no usable
 * cached copy throws (`GatewayError('STORE_UNAVAILABLE')`).
 *
 * Records are cached per instance (positive and negative, short TTLs) and dropped at once when the
 * store publishes an invalidation, so a cached key costs no store round trip. A generation counter
 * keeps a lookup that raced an invalidation from caching the old copy.
 *
 * @example
 * const v = new KeyVerifier({ store, ...config.cache, ... });
 * const r = await v.verify(req.headers['x-api-key']);
 * if (!r.ok) deny(r.code);
 */
export class KeyVerifier {
  private readonly keys: LRUCache<string, Entry<KeyRecord | null>>;
  private readonly companies: LRUCache<string, Entry<Company | null>>;
  private readonly inflightKeys = new Map<string, Promise<KeyRecord | null>>();
  private readonly inflightCompanies = new Map<string, Promise<Company | null>>();
  /**
   * Until when (this.now() ms) the store counts as failing: its last read failed less than
   * STORE_FAILING_MS ago and none has succeeded since. Meanwhile a stale copy is served at once
   * while a background read (one per id) finds out whether the store is back, so no request waits
   * a Redis timeout per lookup for the whole outage.
   */
  private storeFailingUntil = 0;
  private readonly touched: LRUCache<string, number>;
  private generation = 0;
  private readonly now: () => number;

  constructor(private readonly opts: VerifierOptions) {
    this.keys = new LRUCache({ max: opts.maxEntries });
    this.companies = new LRUCache({ max: Math.max(100, Math.ceil(opts.maxEntries / 4)) });
    this.touched = new LRUCache({ max: opts.maxEntries });
    this.now = opts.now ?? Date.now;
    opts.store.subscribe((msg) => this.invalidate(msg));
  }

  /** Applies an invalidation message (from pub/sub or a local write). */
  invalidate(msg: Invalidation): void {
    this.generation++;
    if (msg.kind === 'key') this.keys.delete(msg.hash);
    else if (msg.kind === 'company') this.companies.delete(msg.id);
    else {
      this.keys.clear();
      this.companies.clear();
    }
  }

  /** Number of cached key records (positive and negative). */
  get cachedKeys(): number {
    return this.keys.size;
  }

  async verify(raw: string | string[] | undefined): Promise<Verification> {
    const refused = this.checkFormat(raw);
    if (refused !== null) return refused;
    // --- key record
    const key = await this.lookupKey(hashApiKey(raw as string));
    const now = this.now();
    const keyRefused = this.checkKey(key, now);
    if (keyRefused !== null) return keyRefused;
    // --- company
    return this.checkCompany(key!, await this.lookupCompany(key!.companyId), now);
  }

  /**
   * `verify`'s answer when it needs no store read — a format refusal, or a key and company whose
   * cached records are fresh (counted as cache hits, the key's use recorded) — else `undefined`
   * (nothing counted or recorded): call `verify`. Lets the request path skip `verify`'s promises.
   */
  verifyCached(raw: string | string[] | undefined): Verification | undefined {
    const refused = this.checkFormat(raw);
    if (refused !== null) return refused;
    const now = this.now();
    const keyEntry = this.freshEntry(this.keys, hashApiKey(raw as string), now);
    if (keyEntry === undefined) return undefined;
    const key = keyEntry.value;
    if (key !== null && this.checkKey(key, now) === null) {
      const companyEntry = this.freshEntry(this.companies, key.companyId, now);
      if (companyEntry === undefined) return undefined;
      this.opts.onCache?.('key', 'hit');
      this.opts.onCache?.('company', 'hit');
      return this.checkCompany(key, companyEntry.value, now);
    }
    this.opts.onCache?.('key', 'hit');
    return this.checkKey(key, now)!;
  }

  /** Presence and format, before any store access: a refusal, or null to go on. */
  private checkFormat(raw: string | string[] | undefined): Verification | null {
    // Node joins repeated header lines with ", ", an array never reaches here for X-API-Key, but
    // be strict anyway.
    if (raw === undefined || raw === '') return { ok: false, code: 'MISSING_KEY', reason: 'missing' };
    if (typeof raw !== 'string') return { ok: false, code: 'INVALID_KEY', reason: 'malformed' };
    const parsed = parseApiKey(raw, {
      maxLength: this.opts.maxKeyLength,
      acceptLegacy: this.opts.acceptLegacyFormat,
    });
    return parsed.ok ? null : { ok: false, code: 'INVALID_KEY', reason: parsed.reason };
  }

  /** The key record's own checks (known, not revoked, not expired, not disabled): a refusal, or null. */
  private checkKey(key: KeyRecord | null, now: number): Verification | null {
    if (!key) return { ok: false, code: 'INVALID_KEY', reason: 'unknown' };
    const active = isActiveAt(key, now);
    // Disabled (reversibly): the same 401 as a revoked key, so a client cannot tell them apart.
    if (active && (key.disabledAt ?? null) === null) return null;
    const revoked = key.revokedAt !== null && Date.parse(key.revokedAt) <= now;
    return {
      ok: false,
      code: 'INVALID_KEY',
      reason: active ? 'disabled' : revoked ? 'revoked' : 'expired',
      key,
    };
  }

  /** The company's checks, then the key's use recorded: the final answer for an active key. */
  private checkCompany(key: KeyRecord, company: Company | null, now: number): Verification {
    if (!company) return { ok: false, code: 'INVALID_KEY', reason: 'orphan' };
    if (company.status !== 'active')
      return { ok: false, code: 'COMPANY_INACTIVE', reason: 'company_inactive' };
    if (!company.apiAccess) return { ok: false, code: 'API_ACCESS_DISABLED', reason: 'api_access_disabled' };
    this.recordUse(key, now);
    return { ok: true, key, company };
  }

  /** A cached entry still within its TTL (positive or negative), or undefined. */
  private freshEntry<T>(
    cache: LRUCache<string, Entry<T | null>>,
    id: string,
    now: number,
  ): Entry<T | null> | undefined {
    const entry = cache.get(id);
    return entry !== undefined && this.isFresh(entry, now) ? entry : undefined;
  }

  private isFresh(entry: Entry<unknown>, now: number): boolean {
    const ttl = entry.value === null ? this.opts.negativeTtlMs : this.opts.positiveTtlMs;
    return now - entry.fetchedAt < ttl;
  }

  private lookupKey(hash: string): Promise<KeyRecord | null> {
    return this.lookup(this.keys, this.inflightKeys, hash, 'key', () => this.opts.store.findKeyByHash(hash));
  }

  private lookupCompany(id: string): Promise<Company | null> {
    return this.lookup(this.companies, this.inflightCompanies, id, 'company', () =>
      this.opts.store.getCompany(id),
    );
  }

  private async lookup<T>(
    cache: LRUCache<string, Entry<T | null>>,
    inflight: Map<string, Promise<T | null>>,
    id: string,
    kind: 'key' | 'company',
    load: () => Promise<T | null>,
  ): Promise<T | null> {
    const entry = cache.get(id);
    const now = this.now();
    if (entry && this.isFresh(entry, now)) {
      this.opts.onCache?.(kind, 'hit');
      return entry.value;
    }
    let pending = inflight.get(id);
    if (!pending) {
      // One store read per id at a time: concurrent misses share it.
      const gen = this.generation;
      // An async wrapper turns a store that throws synchronously into a rejection (503, stale copy).
      pending = (async () => load())().then(
        (value) => {
          this.storeFailingUntil = 0;
          if (gen === this.generation) cache.set(id, { value, fetchedAt: this.now() });
          return value;
        },
        (err: unknown) => {
          this.storeFailingUntil = this.now() + STORE_FAILING_MS;
          throw err;
        },
      );
      pending.finally(() => inflight.delete(id)).catch(() => undefined);
      inflight.set(id, pending);
    }
    const stale =
      entry !== undefined &&
      entry.value !== null &&
      now - entry.fetchedAt < this.opts.positiveTtlMs + this.opts.staleIfErrorMs;
    if (stale && now < this.storeFailingUntil) {
      // The store failed a moment ago: answer from the stale copy now; the read above (shared by
      // every request for this id) refreshes the cache once the store answers again.
      pending.catch((err: unknown) =>
        this.opts.onStoreError?.(kind === 'key' ? 'find_key' : 'get_company', err),
      );
      this.opts.onCache?.(kind, 'stale');
      return entry.value;
    }
    try {
      const value = await pending;
      this.opts.onCache?.(kind, 'miss');
      return value;
    } catch (err) {
      this.opts.onStoreError?.(kind === 'key' ? 'find_key' : 'get_company', err);
      // Serve a known-good copy while the store is down, up to staleIfErrorMs past its freshness.
      if (stale) {
        this.opts.onCache?.(kind, 'stale');
        return entry.value;
      }
      throw new GatewayError('STORE_UNAVAILABLE', undefined, { cause: err });
    }
  }

  /** Writes lastUsedAt at most once per interval per key, off the request's critical path. */
  private recordUse(key: KeyRecord, now: number): void {
    const last = this.touched.get(key.id);
    if (last !== undefined && now - last < this.opts.lastUsedIntervalMs) return;
    this.touched.set(key.id, now);
    const at = isoSeconds(now);
    // Keep the cached copy in step so list output on this instance is not behind.
    key.lastUsedAt = at;
    this.opts.store.touchKey(key, at).catch((err: unknown) => this.opts.onStoreError?.('touch_key', err));
  }
}

/** A record's end of activity (epoch ms), with the strings it was parsed from. */
interface ActiveUntil {
  revokedAt: string | null;
  expiresAt: string | null;
  until: number;
}
/**
 * `revokedAt`/`expiresAt` parsed once per cached record object, not on every request (epoch ms).
 * Re-parsed if either string changes on the object.
 */
const activeUntil = new WeakMap<KeyRecord, ActiveUntil>();

/** `isKeyActive(key, now)`, with the record's instants parsed once (unparseable: never active). */
function isActiveAt(key: KeyRecord, now: number): boolean {
  let a = activeUntil.get(key);
  if (a === undefined || a.revokedAt !== key.revokedAt || a.expiresAt !== key.expiresAt) {
    const end = (at: string | null) => (at === null ? Infinity : (parseInstant(at) ?? -Infinity));
    a = {
      revokedAt: key.revokedAt,
      expiresAt: key.expiresAt,
      until: Math.min(end(key.revokedAt), end(key.expiresAt)),
    };
    activeUntil.set(key, a);
  }
  return now < a.until;
}
