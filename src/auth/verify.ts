import type { LRUCache } from 'lru-cache';
import { boundedLru } from './lru.js';
import { GatewayError } from '../errors.js';
import { type Company, type Invalidation, type KeyRecord, type KeyStore } from '../store/types.js';
import { isoSeconds, parseInstant } from '../time.js';
import { hashApiKey, parseApiKey } from './api-key.js';
import { findCompanyProblems, findKeyRecordProblems, idShownInLogs } from './key-record.js';

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
  | 'invalid_record'
  | 'company_inactive'
  | 'api_access_disabled'
  | 'tier_missing';

/** The verifier's answer: the key and its company, or a denial as a value (code and reason). */
export type Verification =
  | { ok: true; key: KeyRecord; company: Company }
  | {
      ok: false;
      code:
        'MISSING_KEY' | 'INVALID_KEY' | 'COMPANY_INACTIVE' | 'API_ACCESS_DISABLED' | 'TIER_NOT_CONFIGURED';
      reason: DenyReason;
      /** The record, when one was found (revoked or expired): for the audit trail, never shown. */
      key?: KeyRecord;
    };

export type CacheOutcome = 'hit' | 'miss' | 'stale';

/**
 * A stored record the verifier refuses to use, as the hook reports it: which fields break their
 * rule (never their values: a value that breaks a rule may be a key), or the tier the config
 * lacks. Ids are given only when they pass the id rule themselves.
 */
export interface RefusedRecord {
  kind: 'key' | 'company';
  reason: 'invalid_record' | 'tier_missing';
  keyId?: string;
  companyId?: string;
  /** The company's tier (`tier_missing`; a tier name holds no key material, or the record is invalid). */
  tier?: string;
  fields: string[];
}

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
  /**
   * The configured tiers: a company on another tier is refused with `TIER_NOT_CONFIGURED` (503)
   * rather than failing later in the rate limiter. Unchecked when absent.
   */
  tiers?: ReadonlySet<string>;
  /**
   * A stored record breaks the field rules (config/fields.ts) or names a tier the config lacks:
   * its requests are refused. Called once per record read from the store (per cached copy).
   */
  onRecordRefused?: (r: RefusedRecord) => void;
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
  private readonly keys: KeyEntries;
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
    this.keys = new KeyEntries(opts.maxEntries);
    this.companies = boundedLru(Math.max(100, Math.ceil(opts.maxEntries / 4)));
    this.touched = boundedLru(opts.maxEntries);
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

  /** Number of keys remembered as unknown (the negative cache, bounded by `maxEntries` apart). */
  get unknownKeys(): number {
    return this.keys.unknownCount;
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

  /**
   * The key record's own checks (known, not revoked, not expired, not disabled, every field by its
   * rule: the gateway puts its id in headers and log lines): a refusal, or null.
   */
  private checkKey(key: KeyRecord | null, now: number): Verification | null {
    if (!key) return { ok: false, code: 'INVALID_KEY', reason: 'unknown' };
    const screen = this.screenKey(key);
    const active = now < screen.until;
    if (active && !screen.sound) return { ok: false, code: 'INVALID_KEY', reason: 'invalid_record' };
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
    const verdict = this.screenCompany(company);
    if (verdict === 'invalid_record') return { ok: false, code: 'INVALID_KEY', reason: 'invalid_record' };
    if (verdict === 'tier_missing') return { ok: false, code: 'TIER_NOT_CONFIGURED', reason: 'tier_missing' };
    if (company.status !== 'active')
      return { ok: false, code: 'COMPANY_INACTIVE', reason: 'company_inactive' };
    if (!company.apiAccess) return { ok: false, code: 'API_ACCESS_DISABLED', reason: 'api_access_disabled' };
    this.recordUse(key, now);
    return { ok: true, key, company };
  }

  /**
   * A key record's end of activity and whether its fields are sound, computed once per record
   * object (the cache hands out the same object) and again when its `revokedAt` or `expiresAt`
   * changes in place. A record that breaks a field rule is reported once here.
   */
  private screenKey(key: KeyRecord): KeyScreen {
    let screen = screens.get(key);
    if (screen !== undefined && screen.revokedAt === key.revokedAt && screen.expiresAt === key.expiresAt)
      return screen;
    const end = (at: string | null) => (at === null ? Infinity : (parseInstant(at) ?? -Infinity));
    const fields = findKeyRecordProblems(key);
    screen = {
      revokedAt: key.revokedAt,
      expiresAt: key.expiresAt,
      until: Math.min(end(key.revokedAt), end(key.expiresAt)),
      sound: fields.length === 0,
    };
    screens.set(key, screen);
    if (fields.length)
      this.opts.onRecordRefused?.({
        kind: 'key',
        reason: 'invalid_record',
        ...idShownInLogs('keyId', key.id),
        ...idShownInLogs('companyId', key.companyId),
        fields,
      });
    return screen;
  }

  /** A company's verdict, once per record object (and again if its tier changes in place). */
  private screenCompany(company: Company): 'ok' | 'invalid_record' | 'tier_missing' {
    const known = companyVerdicts.get(company);
    if (known !== undefined && known.tier === company.tier) return known.verdict;
    const fields = findCompanyProblems(company);
    const verdict =
      fields.length > 0
        ? 'invalid_record'
        : this.opts.tiers && !this.opts.tiers.has(company.tier)
          ? 'tier_missing'
          : 'ok';
    companyVerdicts.set(company, { tier: company.tier, verdict });
    if (verdict !== 'ok')
      this.opts.onRecordRefused?.({
        kind: 'company',
        reason: verdict,
        ...idShownInLogs('companyId', company.id),
        ...(verdict === 'tier_missing' ? { tier: company.tier } : {}),
        fields: verdict === 'tier_missing' ? ['tier'] : fields,
      });
    return verdict;
  }

  /** A cached entry still within its TTL (positive or negative), or undefined. */
  private freshEntry<T>(cache: EntryCache<T>, id: string, now: number): Entry<T | null> | undefined {
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
    cache: EntryCache<T>,
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

/** A key record's end of activity (epoch ms) and soundness, with the times it was computed from. */
interface KeyScreen {
  revokedAt: string | null;
  expiresAt: string | null;
  /** Unparseable times count as passed: never active. */
  until: number;
  /** Every field passes its rule (config/fields.ts). */
  sound: boolean;
}
/** Screens by record object: parsed and checked once per cached record, not on every request. */
const screens = new WeakMap<KeyRecord, KeyScreen>();
const companyVerdicts = new WeakMap<
  Company,
  { tier: string; verdict: 'ok' | 'invalid_record' | 'tier_missing' }
>();

/** What `lookup` needs of a cache: the company LRU as it is, the key caches through `KeyEntries`. */
interface EntryCache<T> {
  get(id: string): Entry<T | null> | undefined;
  set(id: string, entry: Entry<T | null>): unknown;
}

/**
 * The key caches: records in one LRU, unknown keys in another of the same size, so a flood of
 * unknown keys (a guessing client) can never push a valid key out of the cache, and what it can
 * hold is bounded apart: `maxEntries` entries of a key hash and a time, about 130 bytes of heap
 * apiece with the LRU's own slots (`bench/negative-cache.mjs`: 100,000 take about 13 MB per
 * process; docs/operations.md).
 */
class KeyEntries implements EntryCache<KeyRecord> {
  private readonly known: LRUCache<string, Entry<KeyRecord>>;
  /** Hash → when the store said it does not know it (ms). */
  private readonly unknown: LRUCache<string, number>;

  constructor(maxEntries: number) {
    this.known = boundedLru(maxEntries);
    this.unknown = boundedLru(maxEntries);
  }

  get(hash: string): Entry<KeyRecord | null> | undefined {
    const known = this.known.get(hash);
    if (known !== undefined) return known;
    const at = this.unknown.get(hash);
    return at === undefined ? undefined : { value: null, fetchedAt: at };
  }

  set(hash: string, entry: Entry<KeyRecord | null>): void {
    if (entry.value === null) {
      this.known.delete(hash);
      this.unknown.set(hash, entry.fetchedAt);
    } else {
      this.unknown.delete(hash);
      this.known.set(hash, entry as Entry<KeyRecord>);
    }
  }

  delete(hash: string): void {
    this.known.delete(hash);
    this.unknown.delete(hash);
  }

  clear(): void {
    this.known.clear();
    this.unknown.clear();
  }

  get size(): number {
    return this.known.size + this.unknown.size;
  }

  get unknownCount(): number {
    return this.unknown.size;
  }
}
