import { randomBytes } from 'node:crypto';
import type { RedisClient } from '../redis/connection.js';
import {
  STORE_LIMITS,
  type ClaimedDelivery,
  type EnqueueResult,
  type EventStore,
  type OnceKey,
  type QueueDepth,
  type Settlement,
} from './store.js';
import type { CompanyWebhook, DeliveryRecord } from './types.js';

// Every key shares the hash tag `{ev}`, so each script's keys sit in one Redis Cluster slot.
// jobs: HASH id → record JSON. due: ZSET id → due time (Redis clock, ms), pending and in flight.
// claims: HASH id → the current claim's token. dead / done: ZSET id → when it got there.
// once:<key>: a deduplication key. hooks:<companyId>: HASH webhook id → endpoint JSON.
// hooked: SET of the companies that have endpoints.

/** Current time in ms from Redis's clock: every instance schedules by the same clock. */
const NOW = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * KEYS: jobs, due, once (or the same `due` when there is no once-key). ARGV: max pending, once mode
 * (`px`, `pxat` or `-`), its argument, then id and JSON per delivery. Returns 1 queued, 0 duplicate,
 * -1 full: the once-key is claimed and the deliveries queued in one step, so a process that dies
 * between the two cannot lose the event nor let a second process queue it again.
 */
const ENQUEUE = `${NOW}
if ARGV[2] ~= '-' then
  if not redis.call('set', KEYS[3], '1', string.upper(ARGV[2]), ARGV[3], 'NX') then return 0 end
end
local n = (#ARGV - 3) / 2
if redis.call('zcard', KEYS[2]) + n > tonumber(ARGV[1]) then
  if ARGV[2] ~= '-' then redis.call('del', KEYS[3]) end
  return -1
end
for i = 4, #ARGV, 2 do
  redis.call('hset', KEYS[1], ARGV[i], ARGV[i + 1])
  redis.call('zadd', KEYS[2], now, ARGV[i])
end
return 1`;

/**
 * KEYS: jobs, due, claims, dead. ARGV: max, lease ms, token. Takes the due deliveries (score ≤ now)
 * and pushes each one's score to now + lease (its visibility timeout) in one step, so no two
 * processes take the same delivery; one whose process dies is due again when the lease ends.
 * Returns {pending, dead, id, json, id, json, ...}.
 */
const CLAIM = `${NOW}
local ids = redis.call('zrangebyscore', KEYS[2], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local out = {redis.call('zcard', KEYS[2]), redis.call('zcard', KEYS[4])}
for _, id in ipairs(ids) do
  local json = redis.call('hget', KEYS[1], id)
  if json then
    redis.call('zadd', KEYS[2], now + tonumber(ARGV[2]), id)
    redis.call('hset', KEYS[3], id, ARGV[3])
    out[#out + 1] = id
    out[#out + 1] = json
  else
    redis.call('zrem', KEYS[2], id)
  end
end
return out`;

/**
 * KEYS: jobs, due, claims, dead, done. ARGV: kind, id, token, json, delay ms, cap. Only the current
 * claim may settle (a process whose lease ended and whose delivery was taken by another changes
 * nothing). `done`/`dead` keep the newest `cap` entries; older ones leave the jobs hash too.
 */
const SETTLE = `${NOW}
local id = ARGV[2]
if redis.call('hget', KEYS[3], id) ~= ARGV[3] then return 0 end
redis.call('hdel', KEYS[3], id)
local kind = ARGV[1]
if kind == 'release' then
  redis.call('zadd', KEYS[2], now, id)
  return 1
end
redis.call('hset', KEYS[1], id, ARGV[4])
if kind == 'retry' then
  redis.call('zadd', KEYS[2], now + tonumber(ARGV[5]), id)
  return 1
end
redis.call('zrem', KEYS[2], id)
local set = KEYS[5]
if kind == 'dead' then set = KEYS[4] end
redis.call('zadd', set, now, id)
local over = redis.call('zcard', set) - tonumber(ARGV[6])
if over > 0 then
  local old = redis.call('zrange', set, 0, over - 1)
  redis.call('zremrangebyrank', set, 0, over - 1)
  for _, o in ipairs(old) do redis.call('hdel', KEYS[1], o) end
end
return 1`;

/**
 * KEYS: jobs, due, dead. ARGV: id, now (timestamp text). A dead letter back to the queue, due now,
 * attempts from 0: the ZREM decides, so two concurrent retries queue it once. Returns the new JSON
 * or false.
 */
const REQUEUE = `${NOW}
if redis.call('zrem', KEYS[3], ARGV[1]) == 0 then return false end
local r = cjson.decode(redis.call('hget', KEYS[1], ARGV[1]))
r.status = 'pending'
r.attempts = 0
r.nextAttemptAt = ARGV[2]
local json = cjson.encode(r)
redis.call('hset', KEYS[1], ARGV[1], json)
redis.call('zadd', KEYS[2], now, ARGV[1])
return json`;

/**
 * KEYS: hooks, hooked. ARGV: id, json, max, company id. Adds unless the company has `max` endpoints
 * (check and add at once), and notes the company in `hooked` (the companies with endpoints).
 */
const ADD_WEBHOOK = `
if redis.call('hlen', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('hset', KEYS[1], ARGV[1], ARGV[2])
redis.call('sadd', KEYS[2], ARGV[4])
return 1`;

/** KEYS: hooks, hooked. ARGV: id, company id. Removes one endpoint; its JSON goes to the one caller that removed it. */
const DELETE_WEBHOOK = `
local json = redis.call('hget', KEYS[1], ARGV[1])
if not json then return false end
redis.call('hdel', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) == 0 then redis.call('srem', KEYS[2], ARGV[2]) end
return json`;

type EventRedis = RedisClient & {
  ngEvEnqueue(n: number, ...a: (string | number)[]): Promise<number>;
  ngEvClaim(n: number, ...a: (string | number)[]): Promise<(string | number)[]>;
  ngEvSettle(n: number, ...a: (string | number)[]): Promise<number>;
  ngEvRequeue(n: number, ...a: (string | number)[]): Promise<string | null>;
  ngEvAddWebhook(n: number, ...a: (string | number)[]): Promise<number>;
  ngEvDeleteWebhook(n: number, ...a: (string | number)[]): Promise<string | null>;
};

/**
 * The event store in Redis (the key store's Redis, or `rateLimit.redisUrl`): one queue, one set of
 * once-keys and one set of company endpoints for the whole deployment, kept across restarts. Each
 * check-and-change is one Lua script (above); all keys share one Cluster slot.
 */
export class RedisEventStore implements EventStore {
  readonly kind = 'redis' as const;
  private readonly redis: EventRedis;
  private readonly k: { jobs: string; due: string; claims: string; dead: string; done: string };

  constructor(
    client: RedisClient,
    private readonly prefix: string,
  ) {
    const redis = client as EventRedis;
    if (typeof redis.ngEvEnqueue !== 'function') {
      redis.defineCommand('ngEvEnqueue', { lua: ENQUEUE });
      redis.defineCommand('ngEvClaim', { lua: CLAIM });
      redis.defineCommand('ngEvSettle', { lua: SETTLE });
      redis.defineCommand('ngEvRequeue', { lua: REQUEUE });
      redis.defineCommand('ngEvAddWebhook', { lua: ADD_WEBHOOK });
      redis.defineCommand('ngEvDeleteWebhook', { lua: DELETE_WEBHOOK });
    }
    this.redis = redis;
    const p = `${prefix}{ev}:`;
    this.k = { jobs: `${p}jobs`, due: `${p}due`, claims: `${p}claims`, dead: `${p}dead`, done: `${p}done` };
  }

  async enqueue(records: readonly DeliveryRecord[], once?: OnceKey): Promise<EnqueueResult> {
    const mode = !once ? '-' : 'ttlMs' in once ? 'px' : 'pxat';
    const arg = !once ? 0 : 'ttlMs' in once ? Math.max(1, once.ttlMs) : Math.max(1, once.untilMs);
    const onceKey = once ? this.onceKey(once.key) : this.k.due;
    const args: (string | number)[] = [this.k.jobs, this.k.due, onceKey, STORE_LIMITS.maxPending, mode, arg];
    for (const r of records) args.push(r.id, JSON.stringify(r));
    const r = Number(await this.redis.ngEvEnqueue(3, ...args));
    return r === 1 ? 'queued' : r === 0 ? 'duplicate' : 'full';
  }

  async claimOnce(key: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(this.onceKey(key), '1', 'PX', Math.max(1, ttlMs), 'NX')) === 'OK';
  }

  async claimDue(max: number, leaseMs: number): Promise<{ claimed: ClaimedDelivery[]; depth: QueueDepth }> {
    const token = randomBytes(8).toString('hex');
    const { jobs, due, claims, dead } = this.k;
    const out = await this.redis.ngEvClaim(4, jobs, due, claims, dead, max, leaseMs, token);
    const claimed: ClaimedDelivery[] = [];
    for (let i = 2; i < out.length; i += 2)
      claimed.push({ record: JSON.parse(String(out[i + 1])) as DeliveryRecord, token });
    return { claimed, depth: { pending: Number(out[0]), dead: Number(out[1]) } };
  }

  async settle(claim: ClaimedDelivery, s: Settlement): Promise<boolean> {
    const { jobs, due, claims, dead, done } = this.k;
    const record = s.kind === 'release' ? claim.record : s.record;
    const cap = s.kind === 'dead' ? STORE_LIMITS.maxDead : STORE_LIMITS.maxDelivered;
    const delay = s.kind === 'retry' ? Math.max(0, Math.round(s.delayMs)) : 0;
    const r = await this.redis.ngEvSettle(
      5,
      jobs,
      due,
      claims,
      dead,
      done,
      s.kind,
      record.id,
      claim.token,
      JSON.stringify(record),
      delay,
      cap,
    );
    return Number(r) === 1;
  }

  async listDeliveries(status: DeliveryRecord['status'], limit: number): Promise<DeliveryRecord[]> {
    const ids =
      status === 'pending'
        ? await this.redis.zrange(this.k.due, 0, limit - 1)
        : await this.redis.zrange(status === 'dead' ? this.k.dead : this.k.done, 0, limit - 1, 'REV');
    if (ids.length === 0) return [];
    const rows = await this.redis.hmget(this.k.jobs, ...ids);
    return rows.filter((r): r is string => r !== null).map((r) => JSON.parse(r) as DeliveryRecord);
  }

  async requeueDead(id: string, now: string): Promise<DeliveryRecord | null> {
    const json = await this.redis.ngEvRequeue(3, this.k.jobs, this.k.due, this.k.dead, id, now);
    return json ? (JSON.parse(json) as DeliveryRecord) : null;
  }

  async addWebhook(w: CompanyWebhook, max: number): Promise<boolean> {
    const keys = [this.hooksKey(w.companyId), this.hookedKey()];
    return (
      Number(await this.redis.ngEvAddWebhook(2, ...keys, w.id, JSON.stringify(w), max, w.companyId)) === 1
    );
  }

  async listWebhooks(companyId: string): Promise<CompanyWebhook[]> {
    const all = await this.redis.hgetall(this.hooksKey(companyId));
    return Object.values(all)
      .map((j) => JSON.parse(j) as CompanyWebhook)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id));
  }

  async deleteWebhook(companyId: string, id: string): Promise<CompanyWebhook | null> {
    const keys = [this.hooksKey(companyId), this.hookedKey()];
    const json = await this.redis.ngEvDeleteWebhook(2, ...keys, id, companyId);
    return json ? (JSON.parse(json) as CompanyWebhook) : null;
  }

  async hasWebhooks(): Promise<boolean> {
    return (await this.redis.scard(this.hookedKey())) > 0;
  }

  /** The Redis client belongs to the store or the limiter, which close it. */
  close(): Promise<void> {
    return Promise.resolve();
  }

  private onceKey(key: string): string {
    return `${this.prefix}{ev}:once:${key}`;
  }

  private hookedKey(): string {
    return `${this.prefix}{ev}:hooked`;
  }

  private hooksKey(companyId: string): string {
    return `${this.prefix}{ev}:hooks:${companyId}`;
  }
}
