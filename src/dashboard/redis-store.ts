import type { RedisClient } from '../redis/connection.js';
import type {
  CodeCheck,
  DashboardStore,
  Member,
  Registration,
  RemoveMemberResult,
  Session,
  StoredCode,
} from './store.js';

// Every script touches ONE Redis key (KEYS[1]), like the key store's, so the layout works
// unchanged on Redis Cluster. A rule that depends on stored state is checked inside the script
// that writes.

/** KEYS[1] = d:r:<id>; ARGV = status, at, by. Only a pending registration is decided. */
const DECIDE_REGISTRATION = `
local s = redis.call('HGET', KEYS[1], 'status')
if not s then return false end
if s ~= 'pending' then return 'decided' end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'decidedAt', ARGV[2], 'decidedBy', ARGV[3])
return redis.call('HGETALL', KEYS[1])
`;

/** KEYS[1] = the record's key; ARGV = field/value pairs. Written whole, only if new. */
const CREATE_IF_NEW = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
`;

/**
 * KEYS[1] = d:cm:<companyId> (address → role); ARGV[1] = address. Never the last owner: the
 * owners are counted in the same step that removes.
 */
const REMOVE_MEMBER = `
local role = redis.call('HGET', KEYS[1], ARGV[1])
if not role then return 'not_found' end
if role == 'owner' then
  local owners = 0
  local all = redis.call('HVALS', KEYS[1])
  for i = 1, #all do if all[i] == 'owner' then owners = owners + 1 end end
  if owners <= 1 then return 'last_owner' end
end
redis.call('HDEL', KEYS[1], ARGV[1])
return 'removed'
`;

/** KEYS[1] = d:m:<address>; ARGV[1] = companyId. Deletes the address's member record if it is that company's. */
const DELETE_MEMBER_RECORD = `
if redis.call('HGET', KEYS[1], 'companyId') == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
`;

/**
 * KEYS[1] = d:c:<address>; ARGV = hash, expiresAt, sentAt, cooldown ms, now. A new code (tries 0)
 * unless the live one was sent within the cooldown; returns ms to wait (0 = stored).
 */
const PUT_CODE = `
local sent = tonumber(redis.call('HGET', KEYS[1], 'sentAt') or '0')
local exp = tonumber(redis.call('HGET', KEYS[1], 'expiresAt') or '0')
local now = tonumber(ARGV[5])
if exp > now and sent + tonumber(ARGV[4]) > now then return sent + tonumber(ARGV[4]) - now end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'hash', ARGV[1], 'expiresAt', ARGV[2], 'sentAt', ARGV[3], 'tries', 0)
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 0
`;

/**
 * KEYS[1] = d:c:<address>; ARGV = hash, max tries, now. One try: counted, then the code is deleted
 * on a match or when the tries are used up.
 */
const CHECK_CODE = `
local h = redis.call('HGET', KEYS[1], 'hash')
if not h or tonumber(redis.call('HGET', KEYS[1], 'expiresAt')) <= tonumber(ARGV[3]) then return 'none' end
local tries = redis.call('HINCRBY', KEYS[1], 'tries', 1)
if h == ARGV[1] then redis.call('DEL', KEYS[1]) return 'ok' end
if tries >= tonumber(ARGV[2]) then redis.call('DEL', KEYS[1]) return 'burnt' end
return 'wrong'
`;

/** KEYS[1] = d:h:<bucket>; ARGV = window ms. A fixed window: {count, ms left}. */
const HIT = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) ttl = tonumber(ARGV[1]) end
return {n, ttl}
`;

/** KEYS[1] = d:s:<idHash>; ARGV = idle ms, now. The live session, its idle timer reset. */
const TOUCH_SESSION = `
local s = redis.call('HGETALL', KEYS[1])
if #s == 0 then return false end
local h = {}
for i = 1, #s, 2 do h[s[i]] = s[i + 1] end
local left = tonumber(h.expiresAt) - tonumber(ARGV[2])
if left <= 0 then redis.call('DEL', KEYS[1]) return false end
redis.call('PEXPIRE', KEYS[1], math.min(left, tonumber(ARGV[1])))
return s
`;

interface Scripts {
  ngdDecide(key: string, status: string, at: string, by: string): Promise<string[] | 'decided' | null>;
  ngdCreate(key: string, ...fields: string[]): Promise<number>;
  ngdRemoveMember(key: string, email: string): Promise<RemoveMemberResult>;
  ngdDeleteMember(key: string, companyId: string): Promise<number>;
  ngdPutCode(
    key: string,
    hash: string,
    exp: number,
    sent: number,
    cooldown: number,
    now: number,
  ): Promise<number>;
  ngdCheckCode(key: string, hash: string, maxTries: number, now: number): Promise<CodeCheck>;
  ngdHit(key: string, windowMs: number): Promise<[number, number]>;
  ngdTouchSession(key: string, idleMs: number, now: number): Promise<string[] | null>;
}

/**
 * The dashboard's records in Redis, beside the key store's (prefix `ng:` by default):
 *
 * | key | type | holds |
 * |---|---|---|
 * | `d:r:<companyId>` | hash | a registration |
 * | `d:regs` | set | registration ids |
 * | `d:m:<address>` | hash | a member (one company per address) |
 * | `d:cm:<companyId>` | hash | the company's members: address → role |
 * | `d:c:<address>` | hash | the live sign-in code: SHA-256, end, sent at, tries (expires with it) |
 * | `d:h:<bucket>` | string | an attempt counter (expires with its window) |
 * | `d:s:<sha256 of the session id>` | hash | a session (expires when idle) |
 */
export class RedisDashboardStore implements DashboardStore {
  private readonly p: string;
  constructor(
    private readonly client: RedisClient,
    prefix = 'ng:',
  ) {
    this.p = `${prefix}d:`;
    client.defineCommand('ngdDecide', { numberOfKeys: 1, lua: DECIDE_REGISTRATION });
    client.defineCommand('ngdCreate', { numberOfKeys: 1, lua: CREATE_IF_NEW });
    client.defineCommand('ngdRemoveMember', { numberOfKeys: 1, lua: REMOVE_MEMBER });
    client.defineCommand('ngdDeleteMember', { numberOfKeys: 1, lua: DELETE_MEMBER_RECORD });
    client.defineCommand('ngdPutCode', { numberOfKeys: 1, lua: PUT_CODE });
    client.defineCommand('ngdCheckCode', { numberOfKeys: 1, lua: CHECK_CODE });
    client.defineCommand('ngdHit', { numberOfKeys: 1, lua: HIT });
    client.defineCommand('ngdTouchSession', { numberOfKeys: 1, lua: TOUCH_SESSION });
  }

  private get s(): Scripts {
    return this.client as unknown as Scripts;
  }

  async addRegistration(r: Registration): Promise<boolean> {
    const created = await this.s.ngdCreate(this.p + 'r:' + r.id, ...fields(r));
    if (created) await this.client.sadd(this.p + 'regs', r.id);
    return created === 1;
  }

  async getRegistration(id: string): Promise<Registration | null> {
    return toRegistration(await this.client.hgetall(this.p + 'r:' + id));
  }

  async listRegistrations(): Promise<Registration[]> {
    const ids = await this.client.smembers(this.p + 'regs');
    const all = await Promise.all(ids.map((id) => this.getRegistration(id)));
    return all
      .filter((r): r is Registration => r !== null)
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id));
  }

  async decideRegistration(
    id: string,
    status: 'approved' | 'rejected',
    at: string,
    by: string,
  ): Promise<Registration | 'decided' | null> {
    const r = await this.s.ngdDecide(this.p + 'r:' + id, status, at, by);
    if (r === null || r === 'decided') return r;
    return toRegistration(toHash(r));
  }

  async addMember(m: Member): Promise<'added' | 'taken'> {
    // The address is claimed first (one company per address), then the company's roster.
    if (!(await this.s.ngdCreate(this.p + 'm:' + m.email, ...fields(m)))) return 'taken';
    try {
      await this.client.hset(this.p + 'cm:' + m.companyId, m.email, m.role);
    } catch (err) {
      await this.s.ngdDeleteMember(this.p + 'm:' + m.email, m.companyId).catch(() => undefined);
      throw err;
    }
    return 'added';
  }

  async findMember(email: string): Promise<Member | null> {
    return toMember(await this.client.hgetall(this.p + 'm:' + email));
  }

  async listMembers(companyId: string): Promise<Member[]> {
    const emails = await this.client.hkeys(this.p + 'cm:' + companyId);
    const all = await Promise.all(emails.map((e) => this.findMember(e)));
    return all
      .filter((m): m is Member => m !== null && m.companyId === companyId)
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.email.localeCompare(b.email));
  }

  async removeMember(companyId: string, email: string): Promise<RemoveMemberResult> {
    const r = await this.s.ngdRemoveMember(this.p + 'cm:' + companyId, email);
    if (r === 'removed') await this.s.ngdDeleteMember(this.p + 'm:' + email, companyId);
    return r;
  }

  async releaseMember(companyId: string, email: string): Promise<void> {
    await this.client.hdel(this.p + 'cm:' + companyId, email);
    await this.s.ngdDeleteMember(this.p + 'm:' + email, companyId);
  }

  async putCode(
    email: string,
    code: StoredCode,
    cooldownMs: number,
    now: number,
  ): Promise<{ retryAfterMs: number }> {
    const wait = await this.s.ngdPutCode(
      this.p + 'c:' + email,
      code.hash,
      code.expiresAt,
      code.sentAt,
      cooldownMs,
      now,
    );
    return { retryAfterMs: Number(wait) };
  }

  async checkCode(email: string, hash: string, maxTries: number, now: number): Promise<CodeCheck> {
    return this.s.ngdCheckCode(this.p + 'c:' + email, hash, maxTries, now);
  }

  async hit(
    bucket: string,
    limit: number,
    windowMs: number,
    _now: number,
  ): Promise<{ ok: boolean; retryAfterMs: number }> {
    const [n, ttl] = await this.s.ngdHit(this.p + 'h:' + bucket, windowMs);
    return { ok: n <= limit, retryAfterMs: ttl };
  }

  async createSession(idHash: string, s: Session, idleMs: number): Promise<void> {
    const key = this.p + 's:' + idHash;
    await this.client.hset(key, {
      companyId: s.companyId,
      email: s.email,
      createdAt: String(s.createdAt),
      expiresAt: String(s.expiresAt),
    });
    await this.client.pexpire(key, Math.max(1, Math.min(idleMs, s.expiresAt - s.createdAt)));
  }

  async touchSession(idHash: string, idleMs: number, now: number): Promise<Session | null> {
    const r = await this.s.ngdTouchSession(this.p + 's:' + idHash, idleMs, now);
    if (!r) return null;
    const h = toHash(r);
    if (!h.companyId || !h.email) return null;
    return {
      companyId: h.companyId,
      email: h.email,
      createdAt: Number(h.createdAt),
      expiresAt: Number(h.expiresAt),
    };
  }

  async deleteSession(idHash: string): Promise<void> {
    await this.client.del(this.p + 's:' + idHash);
  }
}

/** A record as hash field/value pairs (`null` as ''). */
function fields(o: object): string[] {
  return Object.entries(o).flatMap(([k, v]) => [k, v === null || v === undefined ? '' : String(v)]);
}

function toHash(flat: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}

function toRegistration(h: Record<string, string>): Registration | null {
  if (!h.id || !h.status) return null;
  return {
    id: h.id,
    companyName: h.companyName ?? '',
    email: h.email ?? '',
    status: h.status as Registration['status'],
    createdAt: h.createdAt ?? '',
    decidedAt: h.decidedAt || null,
    decidedBy: h.decidedBy || null,
  };
}

function toMember(h: Record<string, string>): Member | null {
  if (!h.email || !h.companyId) return null;
  return {
    companyId: h.companyId,
    email: h.email,
    role: h.role === 'owner' ? 'owner' : 'developer',
    createdAt: h.createdAt ?? '',
    addedBy: h.addedBy ?? '',
  };
}
