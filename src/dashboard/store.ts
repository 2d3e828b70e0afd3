/**
 * The company dashboard's records (registrations, members, sign-in codes, sessions, attempt
 * counters) and the port that keeps them: `MemoryDashboardStore` here (tests, the demo),
 * `RedisDashboardStore` for real (single node, Sentinel, Cluster). The file store has none: the
 * dashboard needs writes. Every rule that depends on stored state (a code's tries, the resend
 * cooldown, the last owner, one company per address, a registration decided once) is checked in
 * the same atomic step as its write. Timestamps are ms since the epoch inside the port.
 */

/** A company's request to join: the company is created `pending`, an operator decides. */
export interface Registration {
  /** The company id created for it (the registration's id too). */
  id: string;
  companyName: string;
  email: string;
  status: 'pending' | 'approved' | 'rejected';
  createdAt: string;
  decidedAt: string | null;
  decidedBy: string | null;
}

/** `owner`: members, keys; `developer`: keys. */
export type MemberRole = 'owner' | 'developer';

/** One person of one company, known by e-mail address (an address belongs to one company). */
export interface Member {
  companyId: string;
  email: string;
  role: MemberRole;
  createdAt: string;
  /** Who added it: `registration`, `member:<address>` or an admin token's name. */
  addedBy: string;
}

/** A sign-in code as stored: its SHA-256 only, when it ends, how many tries it has used. */
export interface StoredCode {
  hash: string;
  /** ms: the code stops working. */
  expiresAt: number;
  /** ms: when it was sent (for the resend cooldown). */
  sentAt: number;
}

/** A server-side session, stored under the SHA-256 of its id (the cookie holds the id). */
export interface Session {
  companyId: string;
  email: string;
  /** ms */
  createdAt: number;
  /** ms: the absolute end, whatever the activity. */
  expiresAt: number;
}

/** What checking a code gives: `ok` (the code is gone now), `wrong` (a try used), `burnt`, `none`. */
export type CodeCheck = 'ok' | 'wrong' | 'burnt' | 'none';

/** Outcome of removing a member. */
export type RemoveMemberResult = 'removed' | 'not_found' | 'last_owner';

/** The dashboard's storage port; every method rejects only on infrastructure failure. */
export interface DashboardStore {
  /** Stores a new registration; false when its id exists. */
  addRegistration(r: Registration): Promise<boolean>;
  getRegistration(id: string): Promise<Registration | null>;
  /** Every registration, newest first. */
  listRegistrations(): Promise<Registration[]>;
  /**
   * Decides a pending registration, once: answers the record after the write, `decided` when it was
   * not pending any more (nothing written), null when unknown.
   */
  decideRegistration(
    id: string,
    status: 'approved' | 'rejected',
    at: string,
    by: string,
  ): Promise<Registration | 'decided' | null>;

  /** Adds a member unless its address belongs to a member already (of any company): `taken`. */
  addMember(m: Member): Promise<'added' | 'taken'>;
  /** The member an address belongs to, if any. */
  findMember(email: string): Promise<Member | null>;
  listMembers(companyId: string): Promise<Member[]>;
  /** Removes a member of `companyId`; never the company's last owner. */
  removeMember(companyId: string, email: string): Promise<RemoveMemberResult>;
  /** Frees an address held by `companyId`, owner or not (a rejected registration's contact). */
  releaseMember(companyId: string, email: string): Promise<void>;

  /**
   * Stores a new code for an address (replacing any earlier one, tries back to 0), unless the
   * earlier one was sent less than `cooldownMs` ago: then nothing is written and the answer says
   * how long to wait.
   */
  putCode(
    email: string,
    code: StoredCode,
    cooldownMs: number,
    now: number,
  ): Promise<{ retryAfterMs: number }>;
  /**
   * One try: the code is deleted when `hash` matches (`ok`), or when this try used up
   * `maxTries` (`burnt`); else the try is counted (`wrong`). `none`: no live code.
   */
  checkCode(email: string, hash: string, maxTries: number, now: number): Promise<CodeCheck>;

  /**
   * Counts one attempt in a fixed window of `windowMs` for `bucket`; answers whether it is within
   * `limit` (the attempt is counted either way) and when the window ends.
   */
  hit(
    bucket: string,
    limit: number,
    windowMs: number,
    now: number,
  ): Promise<{ ok: boolean; retryAfterMs: number }>;

  createSession(idHash: string, s: Session, idleMs: number): Promise<void>;
  /** The session if it is live (not idle for `idleMs`, not past its absolute end); refreshes its idle timer. */
  touchSession(idHash: string, idleMs: number, now: number): Promise<Session | null>;
  deleteSession(idHash: string): Promise<void>;
}

interface Expiring<T> {
  value: T;
  until: number;
}

/** In-process dashboard store (tests, the demo). Single-threaded: each method is atomic. */
export class MemoryDashboardStore implements DashboardStore {
  private registrations = new Map<string, Registration>();
  private members = new Map<string, Member>();
  private codes = new Map<string, StoredCode & { tries: number }>();
  private counters = new Map<string, Expiring<number>>();
  private sessions = new Map<string, Expiring<Session>>();

  constructor(private readonly clock: () => number = Date.now) {}

  async addRegistration(r: Registration): Promise<boolean> {
    if (this.registrations.has(r.id)) return false;
    this.registrations.set(r.id, { ...r });
    return true;
  }

  async getRegistration(id: string): Promise<Registration | null> {
    const r = this.registrations.get(id);
    return r ? { ...r } : null;
  }

  async listRegistrations(): Promise<Registration[]> {
    return [...this.registrations.values()]
      .map((r) => ({ ...r }))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id));
  }

  async decideRegistration(
    id: string,
    status: 'approved' | 'rejected',
    at: string,
    by: string,
  ): Promise<Registration | 'decided' | null> {
    const r = this.registrations.get(id);
    if (!r) return null;
    if (r.status !== 'pending') return 'decided';
    Object.assign(r, { status, decidedAt: at, decidedBy: by });
    return { ...r };
  }

  async addMember(m: Member): Promise<'added' | 'taken'> {
    if (this.members.has(m.email)) return 'taken';
    this.members.set(m.email, { ...m });
    return 'added';
  }

  async findMember(email: string): Promise<Member | null> {
    const m = this.members.get(email);
    return m ? { ...m } : null;
  }

  async listMembers(companyId: string): Promise<Member[]> {
    return [...this.members.values()]
      .filter((m) => m.companyId === companyId)
      .map((m) => ({ ...m }))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.email.localeCompare(b.email));
  }

  async removeMember(companyId: string, email: string): Promise<RemoveMemberResult> {
    const m = this.members.get(email);
    if (!m || m.companyId !== companyId) return 'not_found';
    const owners = [...this.members.values()].filter((x) => x.companyId === companyId && x.role === 'owner');
    if (m.role === 'owner' && owners.length <= 1) return 'last_owner';
    this.members.delete(email);
    return 'removed';
  }

  async releaseMember(companyId: string, email: string): Promise<void> {
    if (this.members.get(email)?.companyId === companyId) this.members.delete(email);
  }

  async putCode(
    email: string,
    code: StoredCode,
    cooldownMs: number,
    now: number,
  ): Promise<{ retryAfterMs: number }> {
    const old = this.codes.get(email);
    if (old && old.expiresAt > now && old.sentAt + cooldownMs > now)
      return { retryAfterMs: old.sentAt + cooldownMs - now };
    if (this.codes.size >= 1000)
      for (const [k, v] of this.codes) if (v.expiresAt <= now) this.codes.delete(k);
    this.codes.set(email, { ...code, tries: 0 });
    return { retryAfterMs: 0 };
  }

  async checkCode(email: string, hash: string, maxTries: number, now: number): Promise<CodeCheck> {
    const c = this.codes.get(email);
    if (!c || c.expiresAt <= now) return 'none';
    c.tries += 1;
    if (c.hash === hash) {
      this.codes.delete(email);
      return 'ok';
    }
    if (c.tries >= maxTries) {
      this.codes.delete(email);
      return 'burnt';
    }
    return 'wrong';
  }

  async hit(
    bucket: string,
    limit: number,
    windowMs: number,
    now: number,
  ): Promise<{ ok: boolean; retryAfterMs: number }> {
    let c = this.counters.get(bucket);
    if (!c || c.until <= now) {
      c = { value: 0, until: now + windowMs };
      this.counters.set(bucket, c);
      this.sweep(this.counters, now);
    }
    c.value += 1;
    return { ok: c.value <= limit, retryAfterMs: c.until - now };
  }

  async createSession(idHash: string, s: Session, idleMs: number): Promise<void> {
    this.sweep(this.sessions, this.clock());
    this.sessions.set(idHash, { value: { ...s }, until: Math.min(s.expiresAt, s.createdAt + idleMs) });
  }

  async touchSession(idHash: string, idleMs: number, now: number): Promise<Session | null> {
    const e = this.sessions.get(idHash);
    if (!e || e.until <= now || e.value.expiresAt <= now) {
      this.sessions.delete(idHash);
      return null;
    }
    e.until = Math.min(e.value.expiresAt, now + idleMs);
    return { ...e.value };
  }

  async deleteSession(idHash: string): Promise<void> {
    this.sessions.delete(idHash);
  }

  /** Drops expired entries once a map grows (memory stays bounded by live entries). */
  private sweep<T>(map: Map<string, Expiring<T>>, now: number): void {
    if (map.size < 1000) return;
    for (const [k, v] of map) if (v.until <= now) map.delete(k);
  }
}
