import type { z } from 'zod';
import { createKeyRecord } from '../auth/key-record.js';
import { holdsKeyMaterial, unknownTierMessage } from '../config/fields.js';
import { findScopeProblems, type ScopeRoute } from '../config/limits.js';
import { ERRORS, type ErrorCode } from '../errors.js';
import type { EventSink } from '../events/types.js';
import {
  hasPassed,
  ID_PATTERN,
  isKeyActive,
  isStoreOutage,
  ROTATION_HOLD_MS,
  StoreReadOnlyError,
  type AuditEntry,
  type Company,
  type Invalidation,
  type KeyRecord,
  type KeyStore,
} from '../store/types.js';
import { isoSeconds, parseInstant } from '../time.js';
import { exportAudit, parseAuditQuery, type AuditQueryInput } from './audit-query.js';
import {
  companyCreateSchema,
  companyPatchSchema,
  keyCreateSchema,
  keyPatchSchema,
  keyRotateSchema,
  type createdKeySchema,
  type keyViewSchema,
} from './schemas.js';

/** A failed admin operation: a registry code (src/errors.ts), its HTTP status and the spec's error body. */
export interface AdminFailure {
  ok: false;
  code: ErrorCode;
  status: number;
  error: string;
  details: string;
}
/** An admin operation's outcome: the value, or an {@link AdminFailure}. */
export type AdminResult<T> = { ok: true; value: T } | AdminFailure;

/** Where a key was seen exposed: the request's client address, matched route and request id. */
export interface ExposureContext {
  clientIp?: string;
  route?: string;
  requestId?: string;
}

/** What lists show of a key: never the key, never its hash (schema: `keyViewSchema`). */
export type KeyView = z.infer<typeof keyViewSchema>;

/** The create/rotate answer: the only place the plaintext key ever appears (`createdKeySchema`). */
export type CreatedKey = z.infer<typeof createdKeySchema>;

/** The store, the configured tiers and key policy (cap, rotation age), and an audit hook. */
export interface AdminServiceOptions {
  store: KeyStore;
  tiers: ReadonlySet<string>;
  /** The configured routes, which scopes must name (any route prefix is accepted when absent). */
  routes?: readonly ScopeRoute[];
  maxActiveKeys: number;
  rotationAgeDays: number;
  /** Every audit event also goes here (a structured log line). */
  onAudit?: (entry: AuditEntry) => void;
  /** Events for webhooks (src/events/): revocations, suspensions, exposed keys, grace periods. */
  events?: EventSink;
  now?: () => number;
  /**
   * After a write fails with a store outage (it may still land: a timed-out Lua script runs when
   * Redis is back), how often and how long the record is re-read to audit and publish a late
   * landing. Default every 1000 ms for 30000 ms.
   */
  reconcile?: { intervalMs: number; forMs: number };
}

/**
 * What to do after a write failed with a store outage: the invalidation to publish at once (a
 * spurious one is harmless), and a check that re-reads the record, audits and publishes when the
 * write has landed after all, and answers true when there is nothing left to wait for.
 */
interface Reconcile {
  invalidation: Invalidation;
  settle: () => Promise<boolean>;
}

/**
 * Company and key lifecycle, shared by the admin API and the CLI. Pure domain: no HTTP. Expected
 * failures (bad input, unknown id, cap reached, read-only store) are values; only infrastructure
 * failures reject. Every change is audited and published so all instances drop cached copies.
 */
export class AdminService {
  private readonly now: () => number;
  constructor(private readonly opts: AdminServiceOptions) {
    this.now = opts.now ?? Date.now;
  }

  // ---- companies

  async createCompany(input: unknown, actor = 'admin'): Promise<AdminResult<Company>> {
    const parsed = parse(companyCreateSchema, input);
    if (!parsed.ok) return parsed;
    const v = parsed.value;
    if (!this.opts.tiers.has(v.tier)) return badTier(v.tier, this.opts.tiers);
    const scopeFailure = this.checkScopes(v.scopes);
    if (scopeFailure) return scopeFailure;
    const at = isoSeconds(this.now());
    const company: Company = {
      id: v.id,
      name: v.name ?? v.id,
      tier: v.tier,
      status: v.status,
      apiAccess: v.apiAccess,
      createdAt: at,
      updatedAt: at,
      scopes: v.scopes ?? null,
      limits: v.limits ?? null,
    };
    const details = {
      tier: company.tier,
      status: company.status,
      apiAccess: company.apiAccess,
      ...(company.scopes ? { scopes: company.scopes } : {}),
      ...(company.limits ? { limits: company.limits } : {}),
    };
    const created = await this.write(
      () => this.opts.store.createCompany(company),
      () => ({
        invalidation: { kind: 'company', id: company.id },
        settle: async () => {
          const c = await this.opts.store.getCompany(company.id);
          if (!c) return false;
          // Ours only if it carries this attempt's creation time; otherwise someone else made it.
          if (c.createdAt === company.createdAt && c.tier === company.tier)
            await this.audit({
              event: 'company.created',
              companyId: company.id,
              actor,
              details: { ...details, late: true },
            });
          return true;
        },
      }),
    );
    if (!created.ok) return created;
    if (!created.value) return fail('ADMIN_DUPLICATE_COMPANY', `company ${v.id} already exists`);
    await this.audit({ event: 'company.created', companyId: company.id, actor, details });
    return { ok: true, value: company };
  }

  async getCompany(id: string): Promise<AdminResult<Company>> {
    const c = await this.opts.store.getCompany(id);
    return c ? { ok: true, value: c } : notFound('company', id);
  }

  async listCompanies(): Promise<AdminResult<Company[]>> {
    return { ok: true, value: await this.opts.store.listCompanies() };
  }

  async updateCompany(id: string, input: unknown, actor = 'admin'): Promise<AdminResult<Company>> {
    const parsed = parse(companyPatchSchema, input);
    if (!parsed.ok) return parsed;
    if (parsed.value.tier !== undefined && !this.opts.tiers.has(parsed.value.tier))
      return badTier(parsed.value.tier, this.opts.tiers);
    const scopeFailure = this.checkScopes(parsed.value.scopes);
    if (scopeFailure) return scopeFailure;
    // One atomic store write of the patched fields; no read before it (a read-merge-write lost
    // concurrent changes). The audit diff comes from that same write, so it cannot misreport.
    const patch = parsed.value;
    const updated = await this.write(
      () => this.opts.store.updateCompany(id, patch, isoSeconds(this.now())),
      () => ({
        invalidation: { kind: 'company', id },
        settle: async () => {
          const c = await this.opts.store.getCompany(id);
          if (!c) return true;
          if (!hasFields(c, patch)) return false;
          await this.audit({
            event: 'company.updated',
            companyId: id,
            actor,
            details: { ...landed(patch), late: true },
          });
          await this.opts.store.publish({ kind: 'company', id });
          return true;
        },
      }),
    );
    if (!updated.ok) return updated;
    if (!updated.value) return notFound('company', id);
    const { before, after } = updated.value;
    const changes = diff(parsed.value, before, after);
    // Audited as soon as it is stored: a publish that fails afterwards does not hide the change.
    await this.audit({ event: 'company.updated', companyId: id, actor, details: changes });
    if (after.status === 'suspended' && before.status !== 'suspended')
      this.opts.events?.emit('company.suspended', { companyId: id, previousStatus: before.status, actor });
    await this.opts.store.publish({ kind: 'company', id });
    return { ok: true, value: after };
  }

  // ---- keys

  async createKey(companyId: string, input: unknown, actor = 'admin'): Promise<AdminResult<CreatedKey>> {
    const parsed = parse(keyCreateSchema, input ?? {});
    if (!parsed.ok) return parsed;
    if (parsed.value.expiresAt && hasPassed(parsed.value.expiresAt, this.now())) {
      return fail('ADMIN_INVALID_REQUEST', 'expiresAt: must be in the future');
    }
    const { key, record } = createKeyRecord({
      companyId,
      environment: parsed.value.environment,
      label: parsed.value.label ?? null,
      expiresAt: parsed.value.expiresAt ?? null,
      createdAt: isoSeconds(this.now()),
    });
    const created = await this.storeKey(record, key, actor);
    if (!created.ok) return created;
    await this.audit({
      event: 'key.created',
      companyId,
      keyId: created.value.id,
      keyPrefix: created.value.prefix,
      actor,
    });
    return created;
  }

  async listKeys(companyId: string): Promise<AdminResult<KeyView[]>> {
    if (!(await this.opts.store.getCompany(companyId))) return notFound('company', companyId);
    const now = this.now();
    return { ok: true, value: (await this.opts.store.listKeys(companyId)).map((k) => this.view(k, now)) };
  }

  async getKey(keyId: string): Promise<AdminResult<KeyView>> {
    const k = await this.opts.store.getKey(keyId);
    return k ? { ok: true, value: this.view(k, this.now()) } : notFound('key', keyId);
  }

  /**
   * Keys of every company whose display prefix starts with `prefix` (a support lookup), newest
   * first, at most 50. Reads every company's key list (one store read per company and key): a
   * cost for a person's search, never for the request path. A value longer than any display prefix,
   * or holding key material, is refused without being echoed: search by the prefix, never the key.
   */
  async findKeys(prefix: unknown): Promise<AdminResult<KeyView[]>> {
    if (typeof prefix !== 'string' || !KEY_PREFIX_SEARCH.test(prefix) || holdsKeyMaterial(prefix))
      return fail(
        'ADMIN_INVALID_REQUEST',
        'prefix: must be the start of a display prefix (such as nk_live_AbC123: nk_, the environment, _ and at most 6 characters), never a key',
      );
    const companies = await this.opts.store.listCompanies();
    const lists = await Promise.all(companies.map((c) => this.opts.store.listKeys(c.id)));
    const now = this.now();
    const found = lists
      .flat()
      .filter((k) => k.prefix.startsWith(prefix))
      .sort((a, b) => b.createdAt.localeCompare(a.createdAt) || a.id.localeCompare(b.id))
      .slice(0, 50);
    return { ok: true, value: found.map((k) => this.view(k, now)) };
  }

  /**
   * Revokes at once. Final: the store keeps the earliest revocation time, so nothing later can
   * undo or postpone it. Revoking a revoked key answers 200 and publishes the invalidation again
   * (a retry after a failed publish must reach every instance), without a second audit event.
   */
  async revokeKey(keyId: string, actor = 'admin', reason = 'revoked'): Promise<AdminResult<KeyView>> {
    // Existence first, so an unknown id is a 404 also on the read-only file store.
    const before = await this.opts.store.getKey(keyId);
    if (!before) return notFound('key', keyId);
    const now = this.now();
    const revokedAt = isoSeconds(now);
    const updated = await this.write(
      () => this.opts.store.updateKey(keyId, { revokedAt }),
      () => ({
        invalidation: { kind: 'key', hash: before.hash },
        settle: async () => {
          const k = await this.opts.store.getKey(keyId);
          if (!k) return true;
          // Landed when the stored time is this attempt's (the store keeps the earliest); an
          // earlier one was another revocation, audited by whoever made it.
          if (k.revokedAt === revokedAt && !hasPassed(before.revokedAt, now)) {
            await this.audit({
              event: 'key.revoked',
              companyId: k.companyId,
              keyId,
              keyPrefix: k.prefix,
              actor,
              details: { reason, late: true },
            });
            this.emitRevoked(k, reason, actor);
          } else if (!hasPassed(k.revokedAt, this.now())) return false;
          await this.opts.store.publish({ kind: 'key', hash: k.hash });
          return true;
        },
      }),
    );
    if (!updated.ok) return updated;
    const k = updated.value;
    if (!k) return notFound('key', keyId);
    // Audited as soon as it is stored, so a publish that fails afterwards does not hide it.
    if (!hasPassed(before.revokedAt, now)) {
      await this.audit({
        event: 'key.revoked',
        companyId: k.companyId,
        keyId,
        keyPrefix: k.prefix,
        actor,
        details: { reason },
      });
      this.emitRevoked(k, reason, actor);
    }
    await this.opts.store.publish({ kind: 'key', hash: k.hash });
    return { ok: true, value: this.view(k, now) };
  }

  /**
   * A new key for the same company. The old key keeps working for the grace period
   * (`gracePeriodSeconds`, 7 days when absent, 0 = revoked at once), or until revoked sooner;
   * every rotation schedules its revocation. From the rotation on, the old key is on its way out:
   * it no longer counts against `keys.maxActiveKeys`, its place passes to the new key (so rotation
   * works at the cap), and once every grace period has ended the cap holds again. A key is
   * rotated once: a second rotation answers 409 naming its successor (rotate that one), unless
   * that successor no longer works.
   *
   * The steps, each one atomic store write: (1) the claim, on the old key: `rotatedTo` (only if
   * nobody claimed it meanwhile) and its revocation, at the end of the grace period but at least
   * `ROTATION_HOLD_MS` away (min(stored, that): a DELETE that won the race stays in force); (2) the
   * new key, with the restrictions the claim saw, in the old key's place under the cap; (3) for a
   * grace period shorter than the hold, the old key's revocation brought forward to its end. After
   * (1) the store refuses to change the old key's scopes and limits (a PATCH answers 409), so the
   * new key takes over exactly its final restrictions: company, environment, expiry, scopes and
   * limits (the body can change none of them, only the label). Not carried: `revokedAt`,
   * `exposedAt`, `lastUsedAt`, `rotatedTo`. When (2) fails the claim is given back (the scheduled
   * revocation stays: it is final), so the rotation can be made again.
   */
  async rotateKey(
    keyId: string,
    input: unknown,
    actor = 'admin',
  ): Promise<AdminResult<CreatedKey & { replaces: string; oldKeyRevokesAt: string | null }>> {
    const parsed = parse(keyRotateSchema, input ?? {});
    if (!parsed.ok) return parsed;
    const old = await this.opts.store.getKey(keyId);
    if (!old) return notFound('key', keyId);
    const now = this.now();
    if (!isKeyActive(old, now))
      return fail('ADMIN_KEY_INACTIVE', `key ${keyId} is no longer active; create a new key instead`);
    const rotated = await this.rotatedAlready(old, now);
    if (rotated) return rotated;
    const { key, record } = createKeyRecord({
      companyId: old.companyId,
      environment: old.environment ?? 'live',
      label: parsed.value.label ?? old.label,
      expiresAt: old.expiresAt,
      createdAt: isoSeconds(now),
    });
    const ends = revocationAt(now, parsed.value.gracePeriodSeconds);
    const held = isoSeconds(Math.max(Date.parse(ends), Math.ceil((now + ROTATION_HOLD_MS) / 1000) * 1000));
    const claim = await this.claimRotation(old, record.id, held, actor);
    if (!claim.ok) return claim;
    const committed = claim.value;
    if (!committed) return notFound('key', keyId);
    if (committed.rotatedTo !== record.id) return this.alreadyRotated(committed);
    // What the claim froze: the new key is never wider than the old key's final restrictions.
    record.scopes = committed.scopes;
    record.limits = committed.limits;
    record.expiresAt = committed.expiresAt;
    const giveBack = () => this.giveBackClaim(old, record.id);
    const created = await this.storeKey(record, key, actor, keyId).catch(async (err: unknown) => {
      await giveBack();
      throw err;
    });
    if (!created.ok) {
      await giveBack();
      return created;
    }
    const oldKeyRevokesAt = await this.bringForward(committed, ends).catch((err: unknown) => {
      // The old key's change did not reach every instance: the answer is an error, so the new
      // key is never delivered and is revoked in the background.
      this.reconcileLater(this.undelivered(record.id, record.hash, actor, false));
      throw err;
    });
    await this.audit({
      event: 'key.rotated',
      companyId: old.companyId,
      keyId,
      keyPrefix: old.prefix,
      actor,
      details: { newKeyId: created.value.id, newKeyPrefix: created.value.prefix, oldKeyRevokesAt },
    });
    if (oldKeyRevokesAt && hasPassed(oldKeyRevokesAt, this.now()))
      this.emitRevoked({ ...old, revokedAt: oldKeyRevokesAt }, 'rotated without a grace period', actor);
    else if (oldKeyRevokesAt)
      // The events decide when to send it (a day before); a short grace period is announced now.
      this.opts.events?.emit('key.grace_ending', {
        companyId: old.companyId,
        keyId,
        keyPrefix: old.prefix,
        revokesAt: oldKeyRevokesAt,
        replacedBy: created.value.id,
      });
    return { ok: true, value: { ...created.value, replaces: keyId, oldKeyRevokesAt } };
  }

  /**
   * 409 when `old` was rotated already and its successor works (rotate that one instead) or is
   * still being stored; null when the rotation may go on (never rotated, or its successor no
   * longer works).
   */
  private async rotatedAlready(old: KeyRecord, now: number): Promise<AdminFailure | null> {
    if (old.rotatedTo === null) return null;
    const successor = await this.opts.store.getKey(old.rotatedTo);
    if (successor && !isKeyActive(successor, now)) return null;
    return this.alreadyRotated(old, successor === null);
  }

  private alreadyRotated(old: KeyRecord, pending = false): AdminFailure {
    const to = old.rotatedTo ?? 'another key';
    return fail(
      'ADMIN_KEY_INACTIVE',
      pending
        ? `key ${old.id} is being rotated to ${to} by another request; list the keys again in a minute`
        : `key ${old.id} was rotated to ${to}${old.revokedAt ? `, and stops working at ${old.revokedAt}` : ''}; rotate ${to} instead`,
    );
  }

  /**
   * Step (1) of a rotation: claims the old key for `newId` and schedules its revocation at
   * `revokedAt`, in one atomic write; the record right after it (its `rotatedTo` is someone
   * else's when the claim lost). A claim that lands after a store outage has no new key behind
   * it: it is audited, given back and published when it shows up.
   */
  private async claimRotation(
    old: KeyRecord,
    newId: string,
    revokedAt: string,
    actor: string,
  ): Promise<AdminResult<KeyRecord | null>> {
    return this.write(
      () => this.opts.store.updateKey(old.id, { rotation: { to: newId, from: old.rotatedTo }, revokedAt }),
      () => ({
        invalidation: { kind: 'key', hash: old.hash },
        settle: async () => {
          const k = await this.opts.store.getKey(old.id);
          if (!k || k.rotatedTo === old.rotatedTo) return false;
          if (k.rotatedTo === newId) {
            await this.audit({
              event: 'key.rotated',
              companyId: k.companyId,
              keyId: k.id,
              keyPrefix: k.prefix,
              actor,
              details: { newKeyId: newId, oldKeyRevokesAt: k.revokedAt, late: true, newKeyStored: false },
            });
            await this.giveBackClaim(k, newId);
          }
          await this.opts.store.publish({ kind: 'key', hash: k.hash });
          return true;
        },
      }),
    );
  }

  /** Gives a rotation's claim on `old` back (best effort: a failure leaves it to the next rotation's 409). */
  private async giveBackClaim(old: KeyRecord, newId: string): Promise<void> {
    await this.opts.store
      .updateKey(old.id, { rotation: { to: old.rotatedTo === newId ? null : old.rotatedTo, from: newId } })
      .then(() => this.opts.store.publish({ kind: 'key', hash: old.hash }))
      .catch(() => undefined);
  }

  /**
   * Step (3): the old key's revocation at the end of a grace period shorter than the claim's hold.
   * Answers when the old key really stops working (the claim's time if this write fails: the old
   * key still stops, a minute later). Then publishes the old key (rejects when that fails: a
   * revocation must reach every instance).
   */
  private async bringForward(committed: KeyRecord, ends: string): Promise<string | null> {
    let at = committed.revokedAt;
    if (at !== null && (parseInstant(ends) ?? 0) < (parseInstant(at) ?? 0)) {
      const k = await this.opts.store.updateKey(committed.id, { revokedAt: ends }).catch(() => null);
      if (k) at = k.revokedAt;
    }
    await this.opts.store.publish({ kind: 'key', hash: committed.hash });
    return at;
  }

  /**
   * Sets a key's own scopes (they narrow the company's: a request must pass both) and windows (on
   * top of the company's). One atomic write of the given fields; audited with before and after;
   * published, so every instance applies it within the invalidation delay. A rotated key's
   * scopes and limits went to its successor and no longer change: 409 naming the successor
   * (change that key; revoke this one to end its grace period at once).
   */
  async updateKey(keyId: string, input: unknown, actor = 'admin'): Promise<AdminResult<KeyView>> {
    const parsed = parse(keyPatchSchema, input);
    if (!parsed.ok) return parsed;
    const scopeFailure = this.checkScopes(parsed.value.scopes);
    if (scopeFailure) return scopeFailure;
    const before = await this.opts.store.getKey(keyId);
    if (!before) return notFound('key', keyId);
    const patch = parsed.value;
    const updated = await this.write(
      () => this.opts.store.updateKey(keyId, patch),
      () => ({
        invalidation: { kind: 'key', hash: before.hash },
        settle: async () => {
          const k = await this.opts.store.getKey(keyId);
          if (!k) return true;
          if (!hasFields(k, patch)) return false;
          await this.audit({
            event: 'key.updated',
            companyId: k.companyId,
            keyId,
            keyPrefix: k.prefix,
            actor,
            details: { ...landed(patch), late: true },
          });
          await this.opts.store.publish({ kind: 'key', hash: k.hash });
          return true;
        },
      }),
    );
    if (!updated.ok) return updated;
    const after = updated.value;
    if (!after) return notFound('key', keyId);
    // The store writes no restriction on a rotated key, in the same atomic step that reads rotatedTo.
    if (after.rotatedTo !== null)
      return fail(
        'ADMIN_KEY_INACTIVE',
        `key ${keyId} was rotated to ${after.rotatedTo}, which took over its scopes and limits; change that key instead, and revoke this one to end its grace period now`,
      );
    await this.audit({
      event: 'key.updated',
      companyId: after.companyId,
      keyId,
      keyPrefix: after.prefix,
      actor,
      details: diff(parsed.value, before, after),
    });
    await this.opts.store.publish({ kind: 'key', hash: after.hash });
    return { ok: true, value: this.view(after, this.now()) };
  }

  /**
   * A valid key was seen in a URL: flag it, and revoke it when the policy says so. `context` (the
   * request's client address, route and id) goes into the audit entry and the `key.exposed` event.
   */
  async markExposed(key: KeyRecord, revoke: boolean, context?: ExposureContext): Promise<void> {
    const at = isoSeconds(this.now());
    if (key.exposedAt === null) {
      await this.opts.store.updateKey(key.id, { exposedAt: at });
      await this.opts.store.publish({ kind: 'key', hash: key.hash });
    }
    await this.audit({
      event: 'key.exposed',
      companyId: key.companyId,
      keyId: key.id,
      keyPrefix: key.prefix,
      actor: 'gateway',
      details: { revoke, ...context },
    });
    const revoked = revoke && this.opts.store.writable;
    const { clientIp = '-', route = '-', requestId = '-' } = context ?? {};
    const ref = { companyId: key.companyId, keyId: key.id, keyPrefix: key.prefix };
    this.opts.events?.emit('key.exposed', { ...ref, clientIp, route, requestId, revoked });
    if (revoked) await this.revokeKey(key.id, 'gateway', 'exposed in a URL');
  }

  /**
   * The audit trail (`parseAuditQuery`: limit, company, events, time range, cursors); 400 naming
   * the parameter for a bad query, which reads nothing. An empty `companyId` means every company.
   */
  async readAudit(opts: AuditQueryInput): Promise<AdminResult<AuditEntry[]>> {
    const parsed = parseAuditQuery({
      ...opts,
      companyId: opts.companyId === '' ? undefined : opts.companyId,
    });
    if (!parsed.ok) return fail('ADMIN_INVALID_REQUEST', parsed.details);
    return { ok: true, value: await this.opts.store.readAudit(parsed.query) };
  }

  /**
   * The audit trail as an export reads it: oldest first, page by page, from after `after` (or
   * the oldest entry kept), with the same filters as `readAudit` (no `limit`, no `before`). 400
   * naming the parameter for a bad query.
   */
  exportAudit(opts: Omit<AuditQueryInput, 'limit' | 'before'>): AdminResult<AsyncGenerator<AuditEntry[]>> {
    const parsed = parseAuditQuery(opts);
    if (!parsed.ok) return fail('ADMIN_INVALID_REQUEST', parsed.details);
    const { limit: _limit, ...query } = parsed.query;
    return { ok: true, value: exportAudit(this.opts.store, query) };
  }

  /** `key.revoked` for a key this service revoked (once per revocation; the events deduplicate). */
  private emitRevoked(k: KeyRecord, reason: string, actor: string): void {
    this.opts.events?.emit('key.revoked', {
      companyId: k.companyId,
      keyId: k.id,
      keyPrefix: k.prefix,
      revokedAt: k.revokedAt ?? isoSeconds(this.now()),
      reason,
      actor,
    });
  }

  /** Records an audit event (store stream + log line). Failures to store are swallowed after logging. */
  async audit(e: Omit<AuditEntry, 'at'>): Promise<void> {
    const entry: AuditEntry = { at: isoSeconds(this.now()), ...e };
    this.opts.onAudit?.(entry);
    await this.opts.store.appendAudit(entry).catch(() => undefined);
  }

  /**
   * Stores a new key under the cap (in the place of `replaces`, a rotation's predecessor) and
   * answers it with its plaintext. A store outage still rejects; a key that lands afterwards is
   * revoked when it shows up (nobody holds its plaintext).
   */
  private async storeKey(
    record: KeyRecord,
    key: string,
    actor: string,
    replaces?: string,
  ): Promise<AdminResult<CreatedKey>> {
    const result = await this.write(
      () => this.opts.store.createKey(record, this.opts.maxActiveKeys, record.createdAt, replaces),
      () => this.undelivered(record.id, record.hash, actor, true),
    );
    if (!result.ok) return result;
    if (!result.value.ok) {
      if (result.value.reason === 'company_not_found') return notFound('company', record.companyId);
      return fail(
        'ADMIN_KEY_CAP_REACHED',
        `company ${record.companyId} already has ${this.opts.maxActiveKeys} active keys (keys.maxActiveKeys); revoke one first`,
      );
    }
    // A negative cache entry for this hash is impossible in practice (fresh random key), but a
    // publish keeps the rule simple: every write invalidates. Best effort: the key is stored and
    // its plaintext must now be delivered.
    await this.opts.store.publish({ kind: 'key', hash: record.hash }).catch(() => undefined);
    const { id, prefix, companyId, label, environment, createdAt, expiresAt } = record;
    return {
      ok: true,
      value: { id, key, prefix, companyId, label, environment: environment ?? 'live', createdAt, expiresAt },
    };
  }

  /** Scopes must name configured routes and methods they forward (when the routes are known). */
  private checkScopes(scopes: KeyRecord['scopes'] | undefined): AdminFailure | null {
    if (!scopes || !this.opts.routes) return null;
    const problems = findScopeProblems(scopes, this.opts.routes);
    return problems.length
      ? fail('ADMIN_INVALID_REQUEST', problems.map((p) => `scopes.${p}`).join('; '))
      : null;
  }

  private view(k: KeyRecord, now: number): KeyView {
    // An unparseable stored time counts as passed (fail closed), as in isKeyActive.
    const revoked = hasPassed(k.revokedAt, now);
    const expired = hasPassed(k.expiresAt, now);
    const disabled = (k.disabledAt ?? null) !== null;
    const status = revoked
      ? 'revoked'
      : expired
        ? 'expired'
        : disabled
          ? 'disabled'
          : k.revokedAt !== null
            ? 'revoking'
            : 'active';
    return {
      id: k.id,
      companyId: k.companyId,
      prefix: k.prefix,
      label: k.label,
      environment: k.environment,
      status,
      createdAt: k.createdAt,
      lastUsedAt: k.lastUsedAt,
      expiresAt: k.expiresAt,
      revokedAt: k.revokedAt,
      exposedAt: k.exposedAt,
      rotatedTo: k.rotatedTo,
      ...(k.disabledAt ? { disabledAt: k.disabledAt } : {}),
      scopes: k.scopes,
      limits: k.limits,
      rotationDue:
        status !== 'revoked' &&
        status !== 'expired' &&
        now - Date.parse(k.createdAt) > this.opts.rotationAgeDays * 86_400_000,
    };
  }

  /**
   * Runs a store write. A store outage still rejects (the caller answers 503), but the write may
   * land later: a timed-out command is not a cancelled one (a Lua script queued behind a Redis
   * `CLIENT PAUSE WRITE` or a failover runs when the server resumes). So the invalidation is
   * published at once and `reconcile` re-reads the record in the background.
   */
  private async write<T>(op: () => Promise<T>, reconcile?: () => Reconcile): Promise<AdminResult<T>> {
    try {
      return { ok: true, value: await op() };
    } catch (err) {
      if (err instanceof StoreReadOnlyError) return fail('ADMIN_READ_ONLY_STORE', err.message);
      if (reconcile && isStoreOutage(err)) this.reconcileLater(reconcile());
      throw err;
    }
  }

  /**
   * Best effort, bounded, in the background: publish the invalidation now (a spurious one is
   * harmless), then settle every `intervalMs` until it answers true or `forMs` have passed. Every
   * failure (the store still down) only means "try again at the next tick".
   */
  private reconcileLater(r: Reconcile): void {
    const { intervalMs, forMs } = this.opts.reconcile ?? { intervalMs: 1000, forMs: 30_000 };
    this.opts.store.publish(r.invalidation).catch(() => undefined);
    const until = Date.now() + forMs;
    const tick = (): void => {
      r.settle().then(
        (done) => next(done),
        () => next(false),
      );
    };
    const next = (done: boolean): void => {
      if (done || Date.now() + intervalMs > until) return;
      setTimeout(tick, intervalMs).unref();
    };
    setTimeout(tick, intervalMs).unref();
  }

  /**
   * A key stored by a create or rotation whose answer was an error: nobody holds its plaintext, so
   * when it turns up it is revoked at once (it would only count against the cap) and both events
   * are audited.
   */
  private undelivered(keyId: string, hash: string, actor: string, created: boolean): Reconcile {
    return {
      invalidation: { kind: 'key', hash },
      settle: async () => {
        const k = await this.opts.store.getKey(keyId);
        if (!k) return false;
        const revoked = await this.opts.store.updateKey(keyId, { revokedAt: isoSeconds(this.now()) });
        if (created)
          await this.audit({
            event: 'key.created',
            companyId: k.companyId,
            keyId,
            keyPrefix: k.prefix,
            actor,
            details: { late: true },
          });
        await this.audit({
          event: 'key.revoked',
          companyId: k.companyId,
          keyId,
          keyPrefix: k.prefix,
          actor,
          details: { reason: 'stored after a store outage; the key was never delivered', late: true },
        });
        await this.opts.store.publish({ kind: 'key', hash: (revoked ?? k).hash });
        return true;
      },
    };
  }
}

/**
 * When a rotation's grace period of `graceSeconds` ends: stored with one-second precision, so
 * rounded up (a grace period never ends earlier than asked); 0 is now, rounded down like a
 * revocation, not up to a second later.
 */
function revocationAt(now: number, graceSeconds: number): string {
  return isoSeconds(graceSeconds === 0 ? now : Math.ceil((now + graceSeconds * 1000) / 1000) * 1000);
}

/** Whether `record` holds every field of `patch` (compared by value). */
function hasFields(record: object, patch: object): boolean {
  const r = record as Record<string, unknown>;
  return Object.entries(patch).every(([k, v]) => JSON.stringify(r[k]) === JSON.stringify(v));
}

/** A late-landed patch as the audit shows it: `{ field: { to } }` (the value before is unknown). */
function landed(patch: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(patch).map(([k, v]) => [k, { to: v }]));
}

/** The fields of `patch` whose value a write changed, as `{ from, to }` (compared by value). */
function diff<T extends object>(patch: object, before: T, after: T): Record<string, unknown> {
  const changes: Record<string, unknown> = {};
  for (const k of Object.keys(patch) as (keyof T)[]) {
    if (JSON.stringify(before[k]) !== JSON.stringify(after[k]))
      changes[k as string] = { from: before[k], to: after[k] };
  }
  return changes;
}

function parse<T extends z.ZodTypeAny>(schema: T, input: unknown): AdminResult<z.infer<T>> {
  const r = schema.safeParse(input);
  if (r.success) return { ok: true, value: r.data };
  // Never echo what the caller sent (zod's enum messages quote the value; unknown field names are
  // the caller's text): a key pasted by mistake must not come back in a body or a log line.
  const details = r.error.issues
    .map((i) => {
      const path = i.path.join('.'); // the schema's own field names
      if (i.code === 'unrecognized_keys')
        return `unknown field(s): ${i.keys.map((k) => shownName(k)).join(', ')}`;
      const message = i.code === 'invalid_enum_value' ? `must be one of ${i.options.join(', ')}` : i.message;
      return path ? `${path}: ${message}` : message;
    })
    .join('; ');
  return fail('ADMIN_INVALID_REQUEST', details);
}

/**
 * What a key search takes: the start of a display prefix (`nk_`, `nk_live`, `nk_live_AbC`, up to
 * the 6 characters of the key that a prefix shows), or of a legacy key's (up to 4 characters). No
 * more of a key than its prefix shows: a pasted key is refused, not searched for.
 */
const KEY_PREFIX_SEARCH =
  /^(?:n|nk|nk_[a-z0-9]{0,16}|nk_[a-z][a-z0-9]{1,15}_[0-9A-Za-z]{0,6}|(?!nk_)[\x21-\x2b\x2d-\x7e]{1,4})$/;

/** An admin failure from the registry; `details` replaces the registry's default wording. */
function fail(code: ErrorCode, details?: string): AdminFailure {
  const e = ERRORS[code];
  return { ok: false, code, status: e.status, error: e.error, details: details ?? e.details };
}

function notFound(kind: 'company' | 'key', id: string): AdminFailure {
  // Echo the id only when it is a plain id: a key pasted by mistake must not come back in a body.
  const shown = ID_PATTERN.test(id) && !holdsKeyMaterial(id) ? ` ${id}` : '';
  return fail('ADMIN_UNKNOWN_ID', `${kind}${shown} not found`);
}

function badTier(tier: string, tiers: ReadonlySet<string>): AdminFailure {
  return fail('ADMIN_INVALID_REQUEST', `tier: ${unknownTierMessage(tier, tiers)}`);
}

/** A caller-supplied name as is when it is a short plain identifier; otherwise not shown. */
function shownName(name: string): string {
  return isShown(name) ? name : '(a name that is not shown)';
}
function isShown(name: string): boolean {
  return /^[A-Za-z0-9_.-]{1,32}$/.test(name) && !holdsKeyMaterial(name);
}
