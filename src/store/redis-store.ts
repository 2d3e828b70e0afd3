import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import { parseInstant } from '../time.js';
import { createInvalidationSubscriber, type InvalidationSubscriber } from './redis-invalidations.js';
import {
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

const AUDIT_MAXLEN = 10_000;
/** Entries read per XRANGE/XREVRANGE call. */
const AUDIT_PAGE = 500;

// Every script below touches exactly ONE Redis key (KEYS[1]), so the layout stays Cluster-safe
// without hash tags. Scripts are atomic: no other command runs between their read and their write.

/**
 * Atomic cap check on one key (so it is Cluster-safe): drop entries whose expiry/revocation time has
 * passed; when ARGV[5] names a key that still holds a place (a rotation's predecessor), the new key
 * takes that place, at the cap too; else refuse when the company already has `cap` keys holding a
 * place, or add the new one.
 * KEYS[1] = active-key zset; ARGV = now ms, cap, key id, score (ms when it stops being active, or
 * +inf), the id of the key it replaces or ''.
 * Scores are only ever lowered afterwards (`ZADD XX LT` in updateKey), so a key can never count for
 * longer than it really works, nor shorter: its record's end time only moves earlier too. A member
 * leaves the count before its record stops working only here, as a rotation's predecessor, whose
 * revocation its claim has scheduled.
 */
const RESERVE_KEY_SLOT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if ARGV[5] ~= '' and redis.call('ZREM', KEYS[1], ARGV[5]) == 1 then
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
  return 1
end
local cap = tonumber(ARGV[2])
if cap > 0 and redis.call('ZCARD', KEYS[1]) >= cap then return 0 end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
return 1
`;

/** KEYS[1] = c:<id>; ARGV = field/value pairs. The whole company in one write, only if new. */
const CREATE_COMPANY = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
`;

/**
 * KEYS[1] = c:<id>; ARGV[1] = updatedAt; ARGV[2..] = field/value pairs of the patch only. Nothing
 * when the company does not exist; updatedAt never moves back. Returns {before, after} hashes.
 */
const UPDATE_COMPANY = `
if redis.call('HEXISTS', KEYS[1], 'tier') == 0 then return false end
local before = redis.call('HGETALL', KEYS[1])
for i = 2, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
local cur = redis.call('HGET', KEYS[1], 'updatedAt')
if not cur or cur < ARGV[1] then redis.call('HSET', KEYS[1], 'updatedAt', ARGV[1]) end
return {before, redis.call('HGETALL', KEYS[1])}
`;

/**
 * KEYS[1] = kh:<hash>; ARGV = field/value pairs. Nothing when the key does not exist. End times
 * (revokedAt, expiresAt, exposedAt) become min(stored, new): an empty new value changes nothing, and
 * a stored value that is not a real instant is kept (it already counts as ended, fail closed).
 * Valid timestamps compare as strings. A rotation's claim (`__rotatedFrom`, with `rotatedTo`) writes
 * nothing unless the stored rotatedTo is `__rotatedFrom` ('' = none): one claim wins. A patch of
 * scopes or limits on a rotated key (rotatedTo set)
 * writes nothing at all: its restrictions were handed to its successor when rotatedTo was set, in
 * this same script, and must not drift from them. Returns the record after the write.
 */
const UPDATE_KEY = `
local function instant(s)
  local y, mo, d, h, mi, se = string.match(s, '^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)Z$')
  if not y then return false end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo < 1 or mo > 12 or d < 1 or tonumber(h) > 23 or tonumber(mi) > 59 or tonumber(se) > 59 then return false end
  local days = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
  local max = days[mo]
  if mo == 2 and ((y % 4 == 0 and y % 100 ~= 0) or y % 400 == 0) then max = 29 end
  return d <= max
end
if redis.call('HEXISTS', KEYS[1], 'id') == 0 then return false end
local rotated = redis.call('HGET', KEYS[1], 'rotatedTo')
for i = 1, #ARGV, 2 do
  if ARGV[i] == '__rotatedFrom' and (rotated or '') ~= ARGV[i + 1] then return redis.call('HGETALL', KEYS[1]) end
end
if rotated and rotated ~= '' then
  for i = 1, #ARGV, 2 do
    if ARGV[i] == 'scopes' or ARGV[i] == 'limits' then return redis.call('HGETALL', KEYS[1]) end
  end
end
for i = 1, #ARGV, 2 do
  local f, v = ARGV[i], ARGV[i + 1]
  if f == 'revokedAt' or f == 'expiresAt' or f == 'exposedAt' then
    if v ~= '' then
      local cur = redis.call('HGET', KEYS[1], f)
      if not cur or cur == '' or (instant(cur) and v < cur) then redis.call('HSET', KEYS[1], f, v) end
    end
  elseif f ~= '__rotatedFrom' then
    redis.call('HSET', KEYS[1], f, v)
  end
end
return redis.call('HGETALL', KEYS[1])
`;

/** KEYS[1] = kh:<hash>; ARGV[1] = lastUsedAt. Only on an existing key, only ever later. */
const TOUCH_KEY = `
if redis.call('HEXISTS', KEYS[1], 'id') == 0 then return 0 end
local cur = redis.call('HGET', KEYS[1], 'lastUsedAt')
if not cur or cur < ARGV[1] then redis.call('HSET', KEYS[1], 'lastUsedAt', ARGV[1]) end
return 1
`;

/** The scripts above, as ioredis defines them on the client (EVALSHA with a fallback to EVAL). */
interface Scripts {
  ngReserveKeySlot(
    key: string,
    now: number,
    cap: number,
    id: string,
    score: string,
    replaces: string,
  ): Promise<number>;
  ngCreateCompany(key: string, ...fields: string[]): Promise<number>;
  ngUpdateCompany(key: string, now: string, ...fields: string[]): Promise<[string[], string[]] | null>;
  ngUpdateKey(key: string, ...fields: string[]): Promise<string[] | null>;
  ngTouchKey(key: string, at: string): Promise<number>;
}

const KEY_FIELDS = [
  'id',
  'companyId',
  'hash',
  'prefix',
  'label',
  'environment',
  'createdAt',
  'expiresAt',
  'revokedAt',
  'lastUsedAt',
  'exposedAt',
  'rotatedTo',
] as const;

/** Fields held as JSON in a record's hash (`''` = null): scopes and windows. */
const JSON_FIELDS: ReadonlySet<string> = new Set(['scopes', 'limits']);

/**
 * The shared store behind the admin API. Layout (prefix `ng:` by default), one Redis key per
 * command so it works unchanged on Redis Cluster:
 *
 * | key | type | holds |
 * |---|---|---|
 * | `kh:<sha256>` | hash | the key record (hot-path lookup, one HGETALL) |
 * | `k:<keyId>` | string | the key's hash, for lookups by id |
 * | `c:<companyId>` | hash | the company |
 * | `companies` | set | company ids |
 * | `ck:<companyId>` | set | all key ids of a company |
 * | `ca:<companyId>` | zset | active key ids, scored by the time they stop being active |
 * | `audit` | stream | capped audit trail |
 *
 * No command touches two keys (no MULTI, no multi-key Lua), so no hash tags are needed; each
 * instance's cache is kept coherent by pub/sub instead of cross-key transactions. Every
 * read-modify-write of one record is a Lua script on that record's key. Derived keys (`ca:`) are
 * written with commands whose order does not matter (the zset score only ever decreases), so they
 * converge under any interleaving of writers.
 *
 * Invalidations go out on the pub/sub channel `<prefix>invalidate`; a re-subscription (reconnect,
 * failover, another Cluster node) invalidates everything, since messages may have been missed.
 * The subscriptions themselves live in `redis-invalidations.ts`.
 */
export class RedisKeyStore implements KeyStore {
  readonly kind = 'redis' as const;
  readonly writable = true;
  private readonly listeners: ((msg: Invalidation) => void)[] = [];
  private readonly channel: string;
  private invalidations: InvalidationSubscriber | null = null;
  private resubscribes = 0;
  private draining = false;
  private closed = false;
  private readonly heartbeatMs: number;

  /**
   * `subscriber` is a second client of the same topology, used only for invalidations (a subscribed
   * connection cannot run other commands). `opts.heartbeatMs`: how often the subscription is
   * checked with PING (a subscriber on a hung or partitioned node would otherwise miss every
   * invalidation without noticing).
   */
  constructor(
    private readonly client: RedisClient,
    private readonly subscriber: RedisClient,
    private readonly prefix = 'ng:',
    opts: { heartbeatMs?: number } = {},
  ) {
    this.heartbeatMs = opts.heartbeatMs ?? 1000;
    this.channel = `${prefix}invalidate`;
    client.defineCommand('ngReserveKeySlot', { numberOfKeys: 1, lua: RESERVE_KEY_SLOT });
    client.defineCommand('ngCreateCompany', { numberOfKeys: 1, lua: CREATE_COMPANY });
    client.defineCommand('ngUpdateCompany', { numberOfKeys: 1, lua: UPDATE_COMPANY });
    client.defineCommand('ngUpdateKey', { numberOfKeys: 1, lua: UPDATE_KEY });
    client.defineCommand('ngTouchKey', { numberOfKeys: 1, lua: TOUCH_KEY });
  }

  private get scripts(): Scripts {
    return this.client as unknown as Scripts;
  }

  async findKeyByHash(hash: string): Promise<KeyRecord | null> {
    return toKey(await this.client.hgetall(this.prefix + 'kh:' + hash));
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    const hash = await this.client.get(this.prefix + 'k:' + id);
    return hash ? this.findKeyByHash(hash) : null;
  }

  async listKeys(companyId: string): Promise<KeyRecord[]> {
    const ids = await this.client.smembers(this.prefix + 'ck:' + companyId);
    const keys = (await Promise.all(ids.map((id) => this.getKey(id)))).filter(
      (k): k is KeyRecord => k !== null,
    );
    return keys.sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  async createKey(
    record: KeyRecord,
    maxActiveKeys: number,
    now: string,
    replaces?: string,
  ): Promise<CreateKeyResult> {
    if (!(await this.client.exists(this.prefix + 'c:' + record.companyId))) {
      return { ok: false, reason: 'company_not_found' };
    }
    const zkey = this.prefix + 'ca:' + record.companyId;
    // Only a predecessor that names this key and has its revocation scheduled gives up its place
    // (its rotatedTo was claimed for this id, so no other writer can change it back).
    const old = replaces === undefined ? null : await this.getKey(replaces);
    const handover =
      old && old.companyId === record.companyId && old.rotatedTo === record.id && old.revokedAt !== null
        ? old
        : null;
    const giveBack = async () => {
      // A timed-out script may still run later (a paused or failing-over Redis): these commands,
      // sent after it on the same connection, run after it, so no place is leaked or lost.
      await this.client.zrem(zkey, record.id).catch(() => undefined);
      if (handover)
        await this.client.zadd(zkey, 'LT', activeUntil(handover), handover.id).catch(() => undefined);
    };
    const reserved = await this.scripts
      .ngReserveKeySlot(
        zkey,
        Date.parse(now),
        maxActiveKeys,
        record.id,
        activeUntil(record),
        handover?.id ?? '',
      )
      .catch(async (err: unknown) => {
        await giveBack();
        throw err;
      });
    if (reserved !== 1) return { ok: false, reason: 'too_many_keys' };
    try {
      await this.client.hset(this.prefix + 'kh:' + record.hash, fromRecord(record));
      await this.client.set(this.prefix + 'k:' + record.id, record.hash);
      await this.client.sadd(this.prefix + 'ck:' + record.companyId, record.id);
    } catch (err) {
      // Give the place back so a failed create does not eat the company's cap.
      await giveBack();
      throw err;
    }
    return { ok: true };
  }

  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord | null> {
    const hash = await this.client.get(this.prefix + 'k:' + id);
    if (!hash) return null;
    const { rotation, ...fieldsPatch } = patch;
    const fields = Object.entries(fromRecord(fieldsPatch)).flat();
    if (rotation) fields.push('rotatedTo', rotation.to ?? '', '__rotatedFrom', rotation.from ?? '');
    const next = toKey(toHash((await this.scripts.ngUpdateKey(this.prefix + 'kh:' + hash, ...fields)) ?? []));
    if (!next) return null;
    const zkey = this.prefix + 'ca:' + next.companyId;
    const until = activeUntil(next);
    // Only an end time changes the place (a label or an exposure flag must not end a rotation's hold).
    if (patch.revokedAt == null && patch.expiresAt == null) return next;
    // The record's end time only moves earlier, and so does the score: LT never raises it, XX
    // never re-adds a key the cap check already dropped. Writers may reach this line in any order.
    if (until !== '+inf' && Number(until) <= Date.now()) await this.client.zrem(zkey, id);
    else await this.client.zadd(zkey, 'XX', 'LT', until, id);
    return next;
  }

  async touchKey(key: Pick<KeyRecord, 'id' | 'hash'>, at: string): Promise<void> {
    // A script, not HSET: HSET on a deleted key would leave a stray hash behind, and two instances
    // writing out of order could move lastUsedAt back.
    await this.scripts.ngTouchKey(this.prefix + 'kh:' + key.hash, at);
  }

  async getCompany(id: string): Promise<Company | null> {
    return toCompany(await this.client.hgetall(this.prefix + 'c:' + id));
  }

  async listCompanies(): Promise<Company[]> {
    const ids = await this.client.smembers(this.prefix + 'companies');
    const all = await Promise.all(ids.map((id) => this.getCompany(id)));
    return all.filter((c): c is Company => c !== null).sort((a, b) => a.id.localeCompare(b.id));
  }

  async createCompany(company: Company): Promise<boolean> {
    // One script: a reader never sees a company with only some of its fields.
    const fields = Object.entries(companyFields(company)).flat();
    if (!(await this.scripts.ngCreateCompany(this.prefix + 'c:' + company.id, ...fields))) return false;
    await this.client.sadd(this.prefix + 'companies', company.id);
    return true;
  }

  async updateCompany(id: string, patch: CompanyPatch, now: string): Promise<CompanyUpdate | null> {
    const fields = Object.entries(companyFields(patch)).flat();
    const r = await this.scripts.ngUpdateCompany(this.prefix + 'c:' + id, now, ...fields);
    if (!r) return null;
    const before = toCompany(toHash(r[0]));
    const after = toCompany(toHash(r[1]));
    return before && after ? { before, after } : null;
  }

  async appendAudit(entry: AuditEntry): Promise<void> {
    await this.client.xadd(
      this.prefix + 'audit',
      'MAXLEN',
      '~',
      AUDIT_MAXLEN,
      '*',
      'e',
      JSON.stringify(entry),
    );
  }

  async readAudit(q: AuditQuery): Promise<AuditEntry[]> {
    const out: AuditEntry[] = [];
    const key = this.prefix + 'audit';
    const forward = q.after !== undefined;
    // Exclusive bounds (`(id`): each page starts after the last entry of the one before.
    let from = forward ? `(${q.after}` : q.before !== undefined ? `(${q.before}` : '+';
    // Page through the stream until enough entries match or it ends: at most the whole capped
    // stream is read, never more.
    for (let pages = 0; pages <= AUDIT_MAXLEN / AUDIT_PAGE && out.length < q.limit; pages++) {
      const rows = forward
        ? await this.client.xrange(key, from, '+', 'COUNT', AUDIT_PAGE)
        : await this.client.xrevrange(key, from, '-', 'COUNT', AUDIT_PAGE);
      for (const [id, fields] of rows) {
        const entry = { ...(JSON.parse(fields[1] ?? '{}') as AuditEntry), id };
        if (matchesAudit(entry, q)) out.push(entry);
        if (out.length >= q.limit) break;
      }
      if (rows.length < AUDIT_PAGE) break;
      from = `(${rows[rows.length - 1]![0]}`;
    }
    return out;
  }

  async publish(msg: Invalidation): Promise<void> {
    // Apply locally at once (the writer's own instance must not wait for the round trip), then
    // tell every other instance; our own copy of the message arrives later and is harmless.
    // On Cluster, PUBLISH goes to one random master and the cluster bus carries it to every node;
    // if that master is down or hung, another one will do, so try up to 3 of them.
    for (const l of this.listeners) l(msg);
    const text = JSON.stringify(msg);
    const attempts = this.client instanceof Cluster ? 3 : 1;
    for (let i = 1; ; i++) {
      try {
        await this.client.publish(this.channel, text);
        return;
      } catch (err) {
        if (i >= attempts) throw err;
      }
    }
  }

  subscribe(listener: (msg: Invalidation) => void): void {
    this.listeners.push(listener);
    if (this.invalidations) return;
    const deliver = (text: string) => {
      let msg: Invalidation;
      try {
        msg = JSON.parse(text) as Invalidation;
      } catch {
        return;
      }
      for (const l of this.listeners) l(msg);
    };
    const resubscribed = () => void this.invalidateAfterResubscribe();
    this.invalidations = createInvalidationSubscriber(this.subscriber, this.client, {
      channel: this.channel,
      deliver,
      resubscribed,
      heartbeatMs: this.heartbeatMs,
    });
    this.invalidations.start();
  }

  /**
   * Messages published while no subscription was in place are lost: after every re-subscription
   * (not the first), drop every cached record — once the store answers again. After a
   * failover the subscriber is often back before the data client; clearing the caches then would
   * turn cached keys into 503s for nothing, since while the store is unreachable cached copies are
   * served anyway (`cache.staleIfErrorMs`). Re-subscriptions during the wait are covered too.
   */
  private async invalidateAfterResubscribe(): Promise<void> {
    this.resubscribes++;
    if (this.draining) return;
    this.draining = true;
    try {
      let handled = 0;
      while (!this.closed && handled < this.resubscribes) {
        const target = this.resubscribes;
        try {
          await this.storeAnswers();
        } catch {
          await new Promise((r) => setTimeout(r, 200).unref());
          continue;
        }
        handled = target;
        if (!this.closed) for (const l of this.listeners) l({ kind: 'all' });
      }
    } finally {
      this.draining = false;
    }
  }

  /** Single node / Sentinel: PING. Cluster: PING on every master (any of them may hold a key we need). */
  private async storeAnswers(): Promise<void> {
    if (!(this.client instanceof Cluster)) {
      await this.client.ping();
      return;
    }
    const masters = this.client.nodes('master');
    if (!masters.length) throw new Error('no master known');
    await Promise.all(masters.map((m) => m.ping()));
  }

  async ping(): Promise<void> {
    await this.client.ping();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.invalidations?.stop();
    this.subscriber.disconnect();
    this.client.disconnect();
  }
}

/** The zset score: ms when the key stops being active, '+inf' for never; unparseable = already (0). */
function activeUntil(rec: Pick<KeyRecord, 'expiresAt' | 'revokedAt'>): string {
  const times = [rec.expiresAt, rec.revokedAt]
    .filter((t): t is string => t !== null)
    .map((t) => parseInstant(t) ?? 0);
  return times.length ? String(Math.min(...times)) : '+inf';
}

function fromRecord(rec: Partial<KeyRecord>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(rec)) {
    if (v !== undefined) out[k] = v === null ? '' : JSON_FIELDS.has(k) ? JSON.stringify(v) : String(v);
  }
  return out;
}

/** A company or a patch of it as hash fields (only the fields given). */
function companyFields(c: Partial<Company>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(c)) {
    if (v === undefined) continue;
    if (k === 'apiAccess') out[k] = v ? '1' : '0';
    else out[k] = v === null ? '' : JSON_FIELDS.has(k) ? JSON.stringify(v) : String(v);
  }
  return out;
}

/**
 * A JSON field back: `null` when absent or empty. A value that does not parse is a list nobody can
 * pass (`[]`: no scope, no quota), never "everything": it fails closed, like an unparseable end time.
 */
function jsonField<T>(v: string | undefined): T[] | null {
  if (!v) return null;
  try {
    const parsed = JSON.parse(v) as unknown;
    return Array.isArray(parsed) ? (parsed as T[]) : [];
  } catch {
    return [];
  }
}

/** A flat HGETALL reply from a script ([field, value, ...]) as an object. */
function toHash(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}

function toKey(h: Record<string, string>): KeyRecord | null {
  if (!h.id || !h.hash || !h.companyId) return null;
  const rec = {} as Record<string, string | null>;
  for (const f of KEY_FIELDS) rec[f] = h[f] ? h[f] : null;
  rec.prefix = h.prefix ?? '';
  return {
    ...(rec as unknown as KeyRecord),
    // Optional (absent = not disabled): only a disabled key carries it, as the other stores hold it.
    ...(h.disabledAt ? { disabledAt: h.disabledAt } : {}),
    scopes: jsonField(h.scopes),
    limits: jsonField(h.limits),
  };
}

function toCompany(h: Record<string, string>): Company | null {
  if (!h.id || !h.tier) return null;
  return {
    id: h.id,
    name: h.name ?? h.id,
    tier: h.tier,
    status: (h.status ?? 'pending') as Company['status'],
    apiAccess: h.apiAccess === '1',
    createdAt: h.createdAt ?? '',
    updatedAt: h.updatedAt ?? '',
    scopes: jsonField(h.scopes),
    limits: jsonField(h.limits),
  };
}
