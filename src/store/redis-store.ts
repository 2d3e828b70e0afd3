import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/connection.js';
import { createInvalidationSubscriber, type InvalidationSubscriber } from './redis-invalidations.js';
import type {
  AuditEntry,
  Company,
  CompanyPatch,
  CreateKeyResult,
  Invalidation,
  KeyRecord,
  KeyStore,
} from './types.js';

const AUDIT_MAXLEN = 10_000;

/**
 * Atomic cap check on one key (so it is Cluster-safe): drop entries whose expiry/revocation time has
 * passed, refuse when the company already has `cap` active keys, else add the new one.
 * KEYS[1] = active-key zset; ARGV = now ms, cap, key id, score (ms when it stops being active, or +inf).
 */
const RESERVE_KEY_SLOT = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local cap = tonumber(ARGV[2])
if cap > 0 and redis.call('ZCARD', KEYS[1]) >= cap then return 0 end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
return 1
`;

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
 * instance's cache is kept coherent by pub/sub instead of cross-key transactions.
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

  async createKey(record: KeyRecord, maxActiveKeys: number, now: string): Promise<CreateKeyResult> {
    if (!(await this.client.exists(this.prefix + 'c:' + record.companyId))) {
      return { ok: false, reason: 'company_not_found' };
    }
    const zkey = this.prefix + 'ca:' + record.companyId;
    const reserved = await (
      this.client as unknown as { ngReserveKeySlot(...args: (string | number)[]): Promise<number> }
    ).ngReserveKeySlot(zkey, Date.parse(now), maxActiveKeys, record.id, activeUntil(record));
    if (reserved !== 1) return { ok: false, reason: 'too_many_keys' };
    try {
      await this.client.hset(this.prefix + 'kh:' + record.hash, fromRecord(record));
      await this.client.set(this.prefix + 'k:' + record.id, record.hash);
      await this.client.sadd(this.prefix + 'ck:' + record.companyId, record.id);
    } catch (err) {
      // Give the slot back so a failed create does not eat the company's cap.
      await this.client.zrem(zkey, record.id).catch(() => undefined);
      throw err;
    }
    return { ok: true };
  }

  async updateKey(id: string, patch: Partial<KeyRecord>): Promise<KeyRecord | null> {
    const current = await this.getKey(id);
    if (!current) return null;
    const next = { ...current, ...patch };
    await this.client.hset(this.prefix + 'kh:' + current.hash, fromRecord(patch));
    const until = activeUntil(next);
    const zkey = this.prefix + 'ca:' + current.companyId;
    if (until !== '+inf' && Number(until) <= Date.now()) await this.client.zrem(zkey, id);
    else await this.client.zadd(zkey, 'XX', until, id);
    return next;
  }

  async touchKey(key: Pick<KeyRecord, 'id' | 'hash'>, at: string): Promise<void> {
    // HSETNX-free and unconditional: writes are at most once a minute per key and instance, and a
    // few seconds of disagreement between instances does not matter for "has this key gone quiet?".
    await this.client.hset(this.prefix + 'kh:' + key.hash, 'lastUsedAt', at);
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
    const key = this.prefix + 'c:' + company.id;
    // HSETNX on the id field claims the company atomically; the rest follows.
    if (!(await this.client.hsetnx(key, 'id', company.id))) return false;
    await this.client.hset(key, { ...company, apiAccess: company.apiAccess ? '1' : '0' });
    await this.client.sadd(this.prefix + 'companies', company.id);
    return true;
  }

  async updateCompany(id: string, patch: CompanyPatch, now: string): Promise<Company | null> {
    const current = await this.getCompany(id);
    if (!current) return null;
    const next: Company = { ...current, ...patch, updatedAt: now };
    await this.client.hset(this.prefix + 'c:' + id, { ...next, apiAccess: next.apiAccess ? '1' : '0' });
    return next;
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

  async readAudit(opts: { limit: number; companyId?: string }): Promise<AuditEntry[]> {
    const out: AuditEntry[] = [];
    let end = '+';
    // Page backwards until enough entries of the wanted company are found or the stream ends.
    for (let pages = 0; pages < 20 && out.length < opts.limit; pages++) {
      const rows = await this.client.xrevrange(this.prefix + 'audit', end, '-', 'COUNT', 500);
      for (const [id, fields] of rows) {
        if (end !== '+' && id === end) continue;
        const entry = { ...(JSON.parse(fields[1] ?? '{}') as AuditEntry), id };
        if (!opts.companyId || entry.companyId === opts.companyId) out.push(entry);
        if (out.length >= opts.limit) break;
      }
      if (rows.length < 500) break;
      end = rows[rows.length - 1]![0];
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

function activeUntil(rec: Pick<KeyRecord, 'expiresAt' | 'revokedAt'>): string {
  const times = [rec.expiresAt, rec.revokedAt]
    .filter((t): t is string => t !== null)
    .map((t) => Date.parse(t));
  return times.length ? String(Math.min(...times)) : '+inf';
}

function fromRecord(rec: Partial<KeyRecord>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(rec)) out[k] = v === null || v === undefined ? '' : String(v);
  return out;
}

function toKey(h: Record<string, string>): KeyRecord | null {
  if (!h.id || !h.hash || !h.companyId) return null;
  const rec = {} as Record<string, string | null>;
  for (const f of KEY_FIELDS) rec[f] = h[f] ? h[f] : null;
  rec.prefix = h.prefix ?? '';
  return rec as unknown as KeyRecord;
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
  };
}
