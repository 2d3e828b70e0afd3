import { createHash, randomBytes, randomInt } from 'node:crypto';
import { z } from 'zod';
import { emailSchema, nameSchema } from '../config/fields.js';
import { memberInviteSchema } from '../admin/schemas.js';
import { ERRORS, type ErrorCode } from '../errors.js';
import type { AdminFailure, AdminResult, AdminService, CreatedKey, KeyView } from '../admin/service.js';
import { queryUsage, type UsageQueryDeps } from '../admin/usage-query.js';
import type { EventSink } from '../events/types.js';
import type { AuditEntry, Company } from '../store/types.js';
import { isoSeconds } from '../time.js';
import type { UsageReport } from '../usage/query.js';
import type { Mailer } from './mail.js';
import type { DashboardStore, Member, MemberRole, Registration } from './store.js';

/** A sign-in code lives 10 minutes and allows 5 tries (fixed: the issue's and the threat model's numbers). */
export const CODE_TTL_MS = 10 * 60_000;
export const CODE_MAX_TRIES = 5;
const HOUR_MS = 3_600_000;

/** The settings of `dashboard.*` the service needs. */
export interface DashboardSettings {
  registration: 'open' | 'closed';
  /** Where members open the dashboard (links in mails). */
  publicOrigin: string;
  idleMs: number;
  absoluteMs: number;
  resendCooldownMs: number;
  perAddressPerHour: number;
  perClientPerHour: number;
  /** The tier a registered company gets. */
  tier: string;
}

export interface DashboardServiceOptions {
  admin: AdminService;
  store: DashboardStore;
  mailer: Mailer;
  usage: UsageQueryDeps | null;
  settings: DashboardSettings;
  events?: EventSink;
  /** A mail that could not be sent (logged by the caller; the answer never depends on it). */
  onMailError?: (err: unknown) => void;
  now?: () => number;
}

/** Who a live session acts for: one member of one company. */
export interface SignedIn {
  companyId: string;
  companyName: string;
  email: string;
  role: MemberRole;
}

const registerSchema = z.object({ companyName: nameSchema, email: emailSchema }).strict();
const codeRequestSchema = z.object({ email: emailSchema }).strict();
const signInSchema = z
  .object({ email: emailSchema, code: z.string().regex(/^\d{6}$/, 'must be the 6 digits of the mail') })
  .strict();
const keyCreateSchema = z
  .object({ label: z.unknown().optional(), environment: z.enum(['live', 'test']).default('live') })
  .strict();
const keyRotateSchema = z
  .object({ gracePeriodSeconds: z.unknown().optional(), label: z.unknown().optional() })
  .strict();

const PENDING_ANSWER = {
  status: 'received',
  message:
    'Thank you. An operator reviews each registration; the contact address gets a mail when the company is approved.',
};
const CODE_ANSWER = {
  status: 'sent',
  message:
    'If this address belongs to a member of an approved company, a 6-digit code is on its way. It works for 10 minutes.',
};

/**
 * The company dashboard's rules: registration, sign-in by a code sent by mail, sessions, and what a
 * signed-in member may do. Every key action goes through the admin service (cap, audit, events,
 * publish) with the actor `member:<address>`, and only ever on the session's own company: an id
 * of another company answers exactly as an unknown id. Expected failures are values.
 */
export class DashboardService {
  private readonly now: () => number;
  constructor(private readonly o: DashboardServiceOptions) {
    this.now = o.now ?? Date.now;
  }

  get settings(): Readonly<DashboardSettings> {
    return this.o.settings;
  }

  /** The origin of links in mails, once the listener knows its port (when `publicOrigin` is not set). */
  useOrigin(origin: string): void {
    if (!this.o.settings.publicOrigin) this.o.settings.publicOrigin = origin;
  }

  // ---- without a session

  /**
   * A company asks to join: created `pending` with the contact as its owner. The answer is the same
   * when the address is a member already (that address gets a mail saying so), so the form tells
   * nobody which addresses exist.
   */
  async register(input: unknown, clientIp: string): Promise<AdminResult<typeof PENDING_ANSWER>> {
    if (this.o.settings.registration === 'closed') return fail('DASHBOARD_REGISTRATION_CLOSED');
    const parsed = parse(registerSchema, input);
    if (!parsed.ok) return parsed;
    const { companyName, email } = parsed.value;
    const limited = await this.limit(`reg:${clientIp}`, this.o.settings.perClientPerHour);
    if (limited) return limited;
    if (await this.o.store.findMember(email)) {
      this.mail(email, 'Your notify-gateway registration', alreadyMemberText(this.o.settings.publicOrigin));
      return { ok: true, value: PENDING_ANSWER };
    }
    const id = companyIdFor(companyName);
    const actor = `registration:${email}`;
    const created = await this.o.admin.createCompany(
      { id, name: companyName, tier: this.o.settings.tier, status: 'pending', apiAccess: true },
      actor,
    );
    if (!created.ok) return created;
    if ((await this.o.store.addMember(member(id, email, 'owner', 'registration'))) === 'taken')
      return { ok: true, value: PENDING_ANSWER };
    const at = isoSeconds(this.now());
    await this.o.store.addRegistration({
      id,
      companyName,
      email,
      status: 'pending',
      createdAt: at,
      decidedAt: null,
      decidedBy: null,
    });
    this.o.events?.emit('registration.pending', {
      companyId: id,
      name: companyName,
      email,
      registeredAt: at,
    });
    return { ok: true, value: PENDING_ANSWER };
  }

  /**
   * Sends a sign-in code. The same answer, and the same store work, for every address: a code is
   * stored for any address (only a member's is mailed, in the background, so the mail's time does
   * not show); the limits and the cooldown count for any address too.
   */
  async requestCode(input: unknown, clientIp: string): Promise<AdminResult<typeof CODE_ANSWER> | RetryAfter> {
    const parsed = parse(codeRequestSchema, input);
    if (!parsed.ok) return parsed;
    const { email } = parsed.value;
    const limited = await this.limit(`ip:${clientIp}`, this.o.settings.perClientPerHour);
    if (limited) return limited;
    const now = this.now();
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const stored = await this.o.store.putCode(
      email,
      { hash: codeHash(email, code), expiresAt: now + CODE_TTL_MS, sentAt: now },
      this.o.settings.resendCooldownMs,
      now,
    );
    if (stored.retryAfterMs > 0)
      return tooMany(stored.retryAfterMs, 'A code was sent moments ago; wait before asking for another');
    // Counted after the cooldown: asks it refused never use up the address's hour (else a burst
    // of asks would lock the address out). Over the limit, the new code is never mailed.
    const perAddress = await this.limit(`addr:${email}`, this.o.settings.perAddressPerHour);
    if (perAddress) return perAddress;
    const m = await this.o.store.findMember(email);
    const company = await this.o.admin.getCompany(m?.companyId ?? '-');
    if (m && company.ok && company.value.status === 'active')
      this.mail(
        email,
        `Your sign-in code: ${code}`,
        codeText(code, company.value.name, this.o.settings.publicOrigin),
      );
    return { ok: true, value: CODE_ANSWER };
  }

  /**
   * Checks a code (one try of 5) and starts a new session: its id is returned once, only its
   * SHA-256 is stored. Every refusal is the same answer, whether the address is known or not.
   */
  async signIn(
    input: unknown,
    clientIp: string,
  ): Promise<AdminResult<{ sessionId: string; expiresAt: string }> | RetryAfter> {
    const parsed = parse(signInSchema, input);
    if (!parsed.ok) return parsed;
    const { email, code } = parsed.value;
    const limited = await this.limit(`ip:${clientIp}`, this.o.settings.perClientPerHour);
    if (limited) return limited;
    const now = this.now();
    const checked = await this.o.store.checkCode(email, codeHash(email, code), CODE_MAX_TRIES, now);
    const m = await this.o.store.findMember(email);
    const company = await this.o.admin.getCompany(m?.companyId ?? '-');
    if (checked !== 'ok' || !m || !company.ok || company.value.status !== 'active')
      return fail('DASHBOARD_CODE_REFUSED');
    const sessionId = randomBytes(32).toString('base64url');
    const expiresAt = now + this.o.settings.absoluteMs;
    await this.o.store.createSession(
      sessionHash(sessionId),
      { companyId: m.companyId, email, createdAt: now, expiresAt },
      this.o.settings.idleMs,
    );
    await this.o.admin.audit({ event: 'member.signed_in', companyId: m.companyId, actor: actorOf(email) });
    return { ok: true, value: { sessionId, expiresAt: isoSeconds(expiresAt) } };
  }

  /**
   * The member a session id acts for, or null. Checked on every request against the store: a
   * removed member or a company no longer active ends the session at once, on every instance.
   */
  async resolveSession(sessionId: string | undefined): Promise<SignedIn | null> {
    if (!sessionId || !/^[A-Za-z0-9_-]{43}$/.test(sessionId)) return null;
    const hash = sessionHash(sessionId);
    const s = await this.o.store.touchSession(hash, this.o.settings.idleMs, this.now());
    if (!s) return null;
    const m = await this.o.store.findMember(s.email);
    const company = m && m.companyId === s.companyId ? await this.o.admin.getCompany(s.companyId) : null;
    if (!m || !company?.ok || company.value.status !== 'active') {
      await this.o.store.deleteSession(hash);
      return null;
    }
    return { companyId: m.companyId, companyName: company.value.name, email: m.email, role: m.role };
  }

  async signOut(sessionId: string | undefined): Promise<void> {
    if (sessionId) await this.o.store.deleteSession(sessionHash(sessionId));
  }

  // ---- a signed-in member, on its own company only

  async listKeys(who: SignedIn): Promise<AdminResult<KeyView[]>> {
    return this.o.admin.listKeys(who.companyId);
  }

  /** A new key (`label`, `environment` live|test) under the cap, audited as the member. */
  async createKey(who: SignedIn, input: unknown): Promise<AdminResult<CreatedKey>> {
    const parsed = parse(keyCreateSchema, input ?? {});
    if (!parsed.ok) return parsed;
    return capMessage(await this.o.admin.createKey(who.companyId, parsed.value, actorOf(who.email)));
  }

  /** The spec's rotation: a new key; the old one works until the grace period ends. */
  async rotateKey(
    who: SignedIn,
    keyId: string,
    input: unknown,
  ): Promise<AdminResult<CreatedKey & { replaces: string; oldKeyRevokesAt: string | null }>> {
    const parsed = parse(keyRotateSchema, input ?? {});
    if (!parsed.ok) return parsed;
    const own = await this.ownKey(who, keyId);
    if (!own.ok) return own;
    return capMessage(await this.o.admin.rotateKey(keyId, parsed.value, actorOf(who.email)));
  }

  async revokeKey(who: SignedIn, keyId: string): Promise<AdminResult<KeyView>> {
    const own = await this.ownKey(who, keyId);
    if (!own.ok) return own;
    return this.o.admin.revokeKey(keyId, actorOf(who.email));
  }

  /** Requests per day over the last 30 days (allowed, rate-limited, ...). */
  async usage(who: SignedIn): Promise<AdminResult<UsageReport>> {
    const from = isoSeconds(Math.floor(this.now() / 86_400_000) * 86_400_000 - 29 * 86_400_000);
    return queryUsage(this.o.admin, this.o.usage, who.companyId, { granularity: 'day', from });
  }

  async listMembers(who: SignedIn): Promise<AdminResult<Member[]>> {
    return { ok: true, value: await this.o.store.listMembers(who.companyId) };
  }

  async inviteMember(who: SignedIn, input: unknown): Promise<AdminResult<Member>> {
    if (who.role !== 'owner') return fail('DASHBOARD_OWNER_ONLY');
    return this.addMember(who.companyId, input, actorOf(who.email));
  }

  async removeMember(who: SignedIn, email: string): Promise<AdminResult<{ removed: string }>> {
    if (who.role !== 'owner') return fail('DASHBOARD_OWNER_ONLY');
    return this.dropMember(who.companyId, email, actorOf(who.email));
  }

  /** The company's own audit entries, newest first (at most 100). */
  async activity(who: SignedIn): Promise<AdminResult<AuditEntry[]>> {
    return this.o.admin.readAudit({ companyId: who.companyId, limit: '100' });
  }

  // ---- operators (the admin API)

  async listRegistrations(): Promise<AdminResult<Registration[]>> {
    return { ok: true, value: await this.o.store.listRegistrations() };
  }

  /** Approves a pending registration once: the company becomes active and the contact is mailed. */
  async decideRegistration(
    id: string,
    decision: 'approved' | 'rejected',
    actor: string,
  ): Promise<AdminResult<Registration>> {
    const r = await this.o.store.decideRegistration(id, decision, isoSeconds(this.now()), actor);
    if (r === null) return fail('DASHBOARD_NOT_FOUND', 'registration not found');
    if (r === 'decided') return fail('DASHBOARD_REGISTRATION_DECIDED');
    await this.o.admin.audit({ event: `registration.${decision}`, companyId: id, actor });
    if (decision === 'approved') {
      const updated = await this.o.admin.updateCompany(id, { status: 'active' }, actor);
      if (!updated.ok) return updated;
      this.mail(
        r.email,
        'Your company is approved',
        approvedText(r.companyName, this.o.settings.publicOrigin),
      );
    } else {
      // A rejected registration holds no address: its contact may be invited elsewhere.
      await this.o.store.releaseMember(id, r.email);
      this.mail(r.email, 'Your registration', rejectedText(r.companyName));
    }
    return { ok: true, value: r };
  }

  async operatorListMembers(companyId: string): Promise<AdminResult<Member[]>> {
    const c = await this.o.admin.getCompany(companyId);
    if (!c.ok) return c;
    return { ok: true, value: await this.o.store.listMembers(companyId) };
  }

  async operatorInvite(companyId: string, input: unknown, actor: string): Promise<AdminResult<Member>> {
    const c = await this.o.admin.getCompany(companyId);
    if (!c.ok) return c;
    return this.addMember(companyId, input, actor);
  }

  async operatorRemove(
    companyId: string,
    email: string,
    actor: string,
  ): Promise<AdminResult<{ removed: string }>> {
    return this.dropMember(companyId, email, actor);
  }

  // ---- shared steps

  private async addMember(companyId: string, input: unknown, actor: string): Promise<AdminResult<Member>> {
    const parsed = parse(memberInviteSchema, input);
    if (!parsed.ok) return parsed;
    const m = member(companyId, parsed.value.email, parsed.value.role, actor);
    if ((await this.o.store.addMember(m)) === 'taken') return fail('DASHBOARD_ADDRESS_TAKEN');
    await this.o.admin.audit({
      event: 'member.added',
      companyId,
      actor,
      details: { email: m.email, role: m.role },
    });
    const company = await this.o.admin.getCompany(companyId);
    if (company.ok)
      this.mail(m.email, 'You are invited', invitedText(company.value, m.role, this.o.settings.publicOrigin));
    return { ok: true, value: m };
  }

  private async dropMember(
    companyId: string,
    email: string,
    actor: string,
  ): Promise<AdminResult<{ removed: string }>> {
    const addr = emailSchema.safeParse(email);
    if (!addr.success) return fail('DASHBOARD_NOT_FOUND', 'member not found');
    const r = await this.o.store.removeMember(companyId, addr.data);
    if (r === 'not_found') return fail('DASHBOARD_NOT_FOUND', 'member not found');
    if (r === 'last_owner') return fail('DASHBOARD_LAST_OWNER');
    await this.o.admin.audit({ event: 'member.removed', companyId, actor, details: { email: addr.data } });
    return { ok: true, value: { removed: addr.data } };
  }

  /** The key, if it belongs to the member's company; else the answer an unknown id gets. */
  private async ownKey(who: SignedIn, keyId: string): Promise<AdminResult<KeyView>> {
    const k = await this.o.admin.getKey(keyId);
    if (!k.ok || k.value.companyId !== who.companyId) return fail('DASHBOARD_NOT_FOUND', 'key not found');
    return k;
  }

  /** One attempt in the hour's window of `bucket`; the refusal when it is over `limit`. */
  private async limit(bucket: string, limit: number): Promise<RetryAfter | null> {
    const h = await this.o.store.hit(bucket, limit, HOUR_MS, this.now());
    return h.ok ? null : tooMany(h.retryAfterMs);
  }

  /** Sends in the background: an answer never waits for (or shows) the mail server. */
  private mail(to: string, subject: string, text: string): void {
    // After the answer is written: the mailer's own work (building the message, the SMTP
    // connection) must not show in the answer's timing (invariant 19).
    setImmediate(() => {
      this.o.mailer.send({ to, subject, text }).catch((err: unknown) => this.o.onMailError?.(err));
    });
  }
}

/** A 429 with the seconds to wait (the HTTP layer sets `Retry-After`). */
export type RetryAfter = AdminFailure & { retryAfterSeconds: number };

function tooMany(ms: number, details?: string): RetryAfter {
  return {
    ...fail('DASHBOARD_TOO_MANY_ATTEMPTS', details),
    retryAfterSeconds: Math.max(1, Math.ceil(ms / 1000)),
  };
}

/** The audit trail's actor for a member. */
export function actorOf(email: string): string {
  return `member:${email}`;
}

/** SHA-256 of a session id: the store never holds the id a cookie carries. */
export function sessionHash(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}

/** SHA-256 of address and code: the store never holds a code. */
function codeHash(email: string, code: string): string {
  return createHash('sha256').update(`${email}\n${code}`).digest('hex');
}

/** A company id from its name: a slug and 6 random characters (`acme-corp-x1y2z3`). */
export function companyIdFor(name: string): string {
  const slug = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '');
  return `${slug || 'company'}-${randomBytes(4).toString('hex').slice(0, 6)}`;
}

function member(companyId: string, email: string, role: MemberRole, addedBy: string): Member {
  return { companyId, email, role, createdAt: isoSeconds(Date.now()), addedBy };
}

/** The cap's refusal in a company's words: what to do about it. */
function capMessage<T>(r: AdminResult<T>): AdminResult<T> {
  if (r.ok || r.code !== 'ADMIN_KEY_CAP_REACHED') return r;
  return fail(
    'ADMIN_KEY_CAP_REACHED',
    'Your company has the most active keys allowed. Revoke a key you no longer use, or rotate one, then generate again.',
  );
}

function fail(code: ErrorCode, details?: string): AdminFailure {
  const e = ERRORS[code];
  return { ok: false, code, status: e.status, error: e.error, details: details ?? e.details };
}

/** Validation that names fields but never echoes a value (an address or code must not come back). */
function parse<T extends z.ZodTypeAny>(schema: T, input: unknown): AdminResult<z.infer<T>> {
  const r = schema.safeParse(input ?? {});
  if (r.success) return { ok: true, value: r.data };
  const details = r.error.issues
    .map((i) => {
      if (i.code === 'unrecognized_keys') return 'unknown field(s)';
      const message = i.code === 'invalid_enum_value' ? `must be one of ${i.options.join(', ')}` : i.message;
      return i.path.length ? `${i.path.join('.')}: ${message}` : message;
    })
    .join('; ');
  return fail('ADMIN_INVALID_REQUEST', details);
}

function codeText(code: string, companyName: string, origin: string): string {
  return [
    `Your code to sign in to the ${companyName} dashboard is:`,
    '',
    `    ${code}`,
    '',
    `It works once, for 10 minutes, at ${origin}/`,
    'If you did not ask for it, ignore this mail: nobody can sign in without the code.',
  ].join('\n');
}

function approvedText(companyName: string, origin: string): string {
  return `${companyName} is approved. Sign in with this address at ${origin}/ to create your API keys.`;
}

function rejectedText(companyName: string): string {
  return `The registration of ${companyName} was not approved. Reply to the operator if you think this is a mistake.`;
}

function alreadyMemberText(origin: string): string {
  return `Someone tried to register a company with this address, which already belongs to a member. Sign in at ${origin}/ instead.`;
}

function invitedText(c: Company, role: MemberRole, origin: string): string {
  return `You are now a member (${role}) of ${c.name}. Sign in with this address at ${origin}/`;
}
