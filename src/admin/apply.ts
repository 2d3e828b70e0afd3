import { stringify } from 'yaml';
import { parseKeyFile } from '../store/file-store.js';
import {
  hasPassed,
  isKeyActive,
  type AuditEntry,
  type Company,
  type CompanyPatch,
  type KeyPatch,
  type KeyRecord,
  type KeyStore,
} from '../store/types.js';
import { isoSeconds, parseInstant } from '../time.js';

/** Companies and keys: what a key file declares (parsed by `parseKeyFile`) or what a store holds. */
export interface StoreState {
  companies: Company[];
  keys: KeyRecord[];
}

/** A field's value before and after a change. */
export type FieldDiff = Record<string, { from: unknown; to: unknown }>;

/**
 * One change of an apply plan. Prune (what the file leaves out) only ever `suspend`s a company
 * (status `suspended`, API access off) and `disable`s a key (`disabledAt`): both undone by
 * declaring them again. `revoke` (final) is planned only when asked for (`--prune-revoke`). The
 * store keeps no-longer-declared records for the audit trail, and they fail closed.
 */
export type Change =
  | { op: 'create'; kind: 'company'; id: string; company: Company }
  | { op: 'update' | 'suspend'; kind: 'company'; id: string; diff: FieldDiff }
  | { op: 'create'; kind: 'key'; id: string; companyId: string; key: KeyRecord }
  | {
      op: 'update' | 'disable' | 'revoke';
      kind: 'key';
      id: string;
      companyId: string;
      hash: string;
      diff: FieldDiff;
    };

/** What prune does with what a file leaves out: nothing, suspend and disable (reversible), or also revoke keys (final). */
export type PruneMode = 'off' | 'disable' | 'revoke';

/** Whether a change is prune's (it touches what the file leaves out). */
export function isPruneChange(c: Change): boolean {
  return c.op === 'suspend' || c.op === 'disable' || c.op === 'revoke';
}

/** What `apply` would do: the changes in the order they run, and what it reports without changing. */
export interface ApplyPlan {
  changes: Change[];
  /** Differences apply leaves alone on purpose (a revocation the file drops, a conflicting id). */
  notes: string[];
}

/** Company fields that are the store's own bookkeeping, never compared or exported. */
const COMPANY_OWN = new Set(['id', 'createdAt', 'updatedAt']);
/** Key fields a file cannot change: identity, and what only the gateway records. */
const KEY_FIXED = new Set([
  'id',
  'hash',
  'companyId',
  'prefix',
  'environment',
  'createdAt',
  'lastUsedAt',
  'exposedAt',
  'rotatedTo',
]);
/** End times: they only ever move earlier (INVARIANTS #2). */
const END_TIMES = new Set(['revokedAt', 'expiresAt']);

/** Reads the whole company and key set of a store. */
export async function readStoreState(store: KeyStore): Promise<StoreState> {
  const companies = await store.listCompanies();
  const keys = (await Promise.all(companies.map((c) => store.listKeys(c.id)))).flat();
  return { companies, keys };
}

/**
 * The changes that make `current` match `desired`: companies and keys (matched by hash) to create
 * and update, and with `prune` the ones `desired` does not hold: companies suspended, keys disabled
 * (`'disable'`) or revoked (`'revoke'`); `true` is `'disable'`. Pure. Fields are
 * compared generically (every field but the store's bookkeeping), so fields added to the key file
 * flow through. A key's `revokedAt`/`expiresAt` only moves earlier: a file that drops or postpones
 * one is reported in `notes`, never applied.
 */
export function planApply(
  current: StoreState,
  desired: StoreState,
  opts: { prune: boolean | PruneMode },
): ApplyPlan {
  const prune: PruneMode = opts.prune === true ? 'disable' : opts.prune === false ? 'off' : opts.prune;
  const changes: Change[] = [];
  const notes: string[] = [];
  const currentCompanies = new Map(current.companies.map((c) => [c.id, c]));
  for (const c of desired.companies) {
    const was = currentCompanies.get(c.id);
    if (!was) changes.push({ op: 'create', kind: 'company', id: c.id, company: c });
    else {
      const diff = diffFields(was, c, COMPANY_OWN);
      if (Object.keys(diff).length) changes.push({ op: 'update', kind: 'company', id: c.id, diff });
    }
  }
  const declared = new Set(desired.companies.map((c) => c.id));
  if (prune !== 'off') {
    for (const c of current.companies) {
      if (declared.has(c.id)) continue;
      const diff = diffFields(c, { ...c, status: 'suspended', apiAccess: false }, COMPANY_OWN);
      if (Object.keys(diff).length) changes.push({ op: 'suspend', kind: 'company', id: c.id, diff });
    }
  }
  planKeys(current.keys, desired.keys, prune, changes, notes);
  return { changes, notes };
}

function planKeys(
  current: KeyRecord[],
  desired: KeyRecord[],
  prune: PruneMode,
  changes: Change[],
  notes: string[],
): void {
  const byHash = new Map(current.map((k) => [k.hash, k]));
  const byId = new Map(current.map((k) => [k.id, k]));
  const creates: Change[] = [];
  for (const k of desired) {
    const was = byHash.get(k.hash);
    if (!was) {
      if (byId.has(k.id)) notes.push(`key ${k.id}: the id is taken by another key in the store; not created`);
      else creates.push({ op: 'create', kind: 'key', id: k.id, companyId: k.companyId, key: k });
      continue;
    }
    if (was.companyId !== k.companyId) {
      notes.push(
        `key ${was.id}: belongs to company ${was.companyId} in the store, not ${k.companyId}; left as is`,
      );
      continue;
    }
    if (was.id !== k.id) notes.push(`key ${was.id}: the file names it ${k.id} (matched by hash)`);
    const diff = diffKey(was, k, notes);
    if (Object.keys(diff).length)
      changes.push({ op: 'update', kind: 'key', id: was.id, companyId: was.companyId, hash: was.hash, diff });
  }
  if (prune !== 'off') {
    const kept = new Set(desired.map((k) => k.hash));
    for (const k of current) {
      if (kept.has(k.hash) || hasPassed(k.revokedAt, Date.now())) continue;
      const ref = { kind: 'key' as const, id: k.id, companyId: k.companyId, hash: k.hash };
      if (prune === 'revoke')
        changes.push({ op: 'revoke', ...ref, diff: { revokedAt: { from: k.revokedAt, to: 'now' } } });
      else if ((k.disabledAt ?? null) === null)
        changes.push({ op: 'disable', ...ref, diff: { disabledAt: { from: null, to: 'now' } } });
    }
  }
  // Revocations first: a create must not hit the active-key cap because of a key being replaced
  // (a disabled key keeps its place: `findPruneCapProblems`).
  changes.push(...creates);
}

/** A key's changes; a dropped or later end time is a note, never a change. */
function diffKey(was: KeyRecord, want: KeyRecord, notes: string[]): FieldDiff {
  const diff = diffFields(was, want, KEY_FIXED);
  for (const field of END_TIMES) {
    const d = diff[field];
    if (!d) continue;
    const from = d.from as string | null;
    const to = d.to as string | null;
    if (from !== null && (to === null || (parseInstant(to) ?? 0) > (parseInstant(from) ?? 0))) {
      delete diff[field];
      notes.push(
        field === 'revokedAt'
          ? `key ${was.id}: revoked at ${from} in the store; the file does not revoke it that early — revocation is final, kept`
          : `key ${was.id}: expires at ${from} in the store; a later or no expiry is not applied, kept`,
      );
    }
  }
  return diff;
}

/** Fields (but `skip`) whose values differ; absent, undefined and null are the same. */
function diffFields(was: object, want: object, skip: ReadonlySet<string>): FieldDiff {
  const a = was as Record<string, unknown>;
  const b = want as Record<string, unknown>;
  const diff: FieldDiff = {};
  for (const f of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (skip.has(f)) continue;
    if (canonical(a[f]) !== canonical(b[f])) diff[f] = { from: a[f] ?? null, to: b[f] ?? null };
  }
  return diff;
}

/** A stable text of a value: object keys sorted, null for absent. */
function canonical(v: unknown): string {
  return JSON.stringify(v ?? null, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([p], [q]) => p.localeCompare(q)))
      : x,
  );
}

/** What running a plan needs: the store, the key cap, who acts, the audit sink, the clock. */
export interface ApplyOptions {
  store: KeyStore;
  maxActiveKeys: number;
  actor: string;
  audit: (entry: Omit<AuditEntry, 'at'>) => Promise<void>;
  now: () => string;
}

/** One change that could not be made (the others are still made). */
export interface ApplyFailure {
  change: Change;
  reason: string;
}

/**
 * Runs a plan against the store, in order: every change is one atomic store write of only the
 * changed fields, audited (`via: apply`) and published, so every instance drops its cached copy.
 * Returns the changes that failed (company gone, key cap reached, ...); infrastructure errors
 * reject (changes made before stay made; a re-run finishes the job, since apply is idempotent).
 */
export async function executePlan(plan: ApplyPlan, opts: ApplyOptions): Promise<ApplyFailure[]> {
  const failures: ApplyFailure[] = [];
  for (const change of plan.changes) {
    const reason =
      change.kind === 'company' ? await applyCompany(change, opts) : await applyKey(change, opts);
    if (reason) failures.push({ change, reason });
  }
  return failures;
}

async function applyCompany(
  change: Extract<Change, { kind: 'company' }>,
  o: ApplyOptions,
): Promise<string | null> {
  const { store, actor } = o;
  if (change.op === 'create') {
    const at = o.now();
    if (!(await store.createCompany({ ...change.company, createdAt: at, updatedAt: at })))
      return 'exists already (created meanwhile)';
    await o.audit({ event: 'company.created', companyId: change.id, actor, details: { via: 'apply' } });
  } else {
    const patch = Object.fromEntries(Object.entries(change.diff).map(([f, d]) => [f, d.to])) as CompanyPatch;
    if (!(await store.updateCompany(change.id, patch, o.now()))) return 'not found (deleted meanwhile)';
    await o.audit({
      event: 'company.updated',
      companyId: change.id,
      actor,
      details: { ...change.diff, via: change.op === 'suspend' ? 'apply --prune' : 'apply' },
    });
  }
  await store.publish({ kind: 'company', id: change.id });
  return null;
}

async function applyKey(change: Extract<Change, { kind: 'key' }>, o: ApplyOptions): Promise<string | null> {
  const { store, actor } = o;
  if (change.op === 'create') {
    const r = await store.createKey(
      { ...change.key, createdAt: change.key.createdAt },
      o.maxActiveKeys,
      o.now(),
    );
    if (!r.ok) return r.reason === 'company_not_found' ? 'company not found' : 'active-key cap reached';
    await o.audit({ event: 'key.created', ...keyRef(change.key), actor, details: { via: 'apply' } });
    await store.publish({ kind: 'key', hash: change.key.hash });
    return null;
  }
  const patch: Record<string, unknown> = {};
  for (const [f, d] of Object.entries(change.diff)) patch[f] = d.to === 'now' ? o.now() : d.to;
  const after = await store.updateKey(change.id, patch as KeyPatch);
  if (!after) return 'not found (deleted meanwhile)';
  const revoked = change.op === 'revoke' || 'revokedAt' in change.diff;
  const enabled = change.diff.disabledAt !== undefined && change.diff.disabledAt.to === null;
  const event = revoked
    ? 'key.revoked'
    : change.op === 'disable'
      ? 'key.disabled'
      : enabled
        ? 'key.enabled'
        : 'key.updated';
  await o.audit({
    event,
    ...keyRef(after),
    actor,
    details: { ...change.diff, via: change.op === 'update' ? 'apply' : 'apply --prune' },
  });
  await store.publish({ kind: 'key', hash: change.hash });
  return null;
}

function keyRef(k: KeyRecord): Pick<AuditEntry, 'companyId' | 'keyId' | 'keyPrefix'> {
  return { companyId: k.companyId, keyId: k.id, keyPrefix: k.prefix };
}

const VERBS: Record<Change['op'], string> = {
  create: 'creating',
  update: 'updating',
  suspend: 'suspending',
  disable: 'disabling',
  revoke: 'revoking',
};

/**
 * The plan as decK prints it: one line per change (`creating`, `updating` with each field's old
 * and new value; prune's `suspending`, `disabling` and `revoking`, each saying whether it can be
 * undone), the notes, and a summary. Never a hash.
 */
export function formatPlan(plan: ApplyPlan, dryRun: boolean): string {
  const lines: string[] = [];
  for (const c of plan.changes) {
    const what = c.kind === 'company' ? `company ${c.id}` : `key ${c.id} (company ${c.companyId})`;
    const fields = () =>
      Object.entries(c.op === 'create' ? {} : c.diff)
        .map(([f, d]) => `${f} ${JSON.stringify(d.from)} -> ${JSON.stringify(d.to)}`)
        .join(', ');
    const extra =
      c.op === 'create'
        ? ''
        : c.op === 'update'
          ? `: ${fields()}`
          : c.op === 'suspend'
            ? ` (not in the file): ${fields()} (undone by declaring it again)`
            : c.op === 'disable'
              ? ' (not in the file): disabled (undone by declaring it again)'
              : ' (not in the file): revoked (final)';
    lines.push(`${VERBS[c.op]} ${what}${extra}`);
  }
  for (const n of plan.notes) lines.push(`note: ${n}`);
  const count = (op: Change['op']) => plan.changes.filter((c) => c.op === op).length;
  lines.push(
    `Summary${dryRun ? ' (dry run: nothing changed)' : ''}:`,
    `  Created: ${count('create')}`,
    `  Updated: ${count('update')}`,
    `  Suspended: ${count('suspend')}`,
    `  Disabled: ${count('disable')}`,
    `  Revoked: ${count('revoke')}`,
  );
  return lines.join('\n') + '\n';
}

/**
 * The state in the key-file format (`companies:` with their `keys:`), with no secret: keys by
 * hash only, and none of what only the gateway records (last use, exposure, rotation). Every other
 * field is written, so fields added to the records flow through; null fields are left out.
 */
export function exportState(state: StoreState): string {
  const companies = [...state.companies]
    .sort((a, b) => a.id.localeCompare(b.id))
    .map((c) => ({
      id: c.id,
      ...present(c, COMPANY_OWN),
      keys: state.keys
        .filter((k) => k.companyId === c.id)
        .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
        .map((k) => ({
          id: k.id,
          hash: k.hash,
          ...present(k, new Set(['id', 'hash', 'companyId', 'lastUsedAt', 'exposedAt', 'rotatedTo'])),
        })),
    }));
  return stringify({ companies }, { lineWidth: 0 });
}

function present(rec: object, skip: ReadonlySet<string>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(rec).filter(([f, v]) => !skip.has(f) && v !== null && v !== undefined && v !== ''),
  );
}

/**
 * `applyKeyFile`'s outcome: the plan, whether it ran and what failed, or every problem of the file
 * (nothing changed). Not `applied`: a dry run, a prune that was not confirmed, or (`stale`) a store
 * that changed while the confirmation was asked for; `plan` is then the current one.
 */
export type ApplyFileResult =
  | { ok: true; plan: ApplyPlan; failures: ApplyFailure[]; applied: boolean; stale?: true }
  | { ok: false; problems: string[] };

/**
 * `notify-gateway apply`: parses `text` with the file store's own parser (same format, same
 * checks), refuses a file that declares more active keys for a company than the cap (keys whose
 * revocation is scheduled are on their way out and do not count), plans against the store, and
 * unless `dryRun` runs the plan. A plan that prunes runs only when `confirm(plan)` says yes (no
 * `confirm`: it does not run); the store is then read again and the plan runs only if it is still
 * the one confirmed (check-and-set against changes made meanwhile). Bad input changes nothing.
 */
export async function applyKeyFile(
  text: string,
  opts: Omit<ApplyOptions, 'now'> & {
    tiers: ReadonlySet<string>;
    /** The configured routes, which scopes must name (as the admin API and the key file check). */
    routes?: Parameters<typeof parseKeyFile>[2];
    /** `true` = `'disable'`. */
    prune: boolean | PruneMode;
    dryRun: boolean;
    /** Asked before a plan that suspends, disables or revokes anything runs. */
    confirm?: (plan: ApplyPlan) => Promise<boolean>;
    now?: () => string;
  },
): Promise<ApplyFileResult> {
  const parsed = parseKeyFile(text, opts.tiers, opts.routes);
  if (!parsed.ok) return parsed;
  const now = Date.now();
  const problems: string[] = [];
  if (opts.maxActiveKeys > 0) {
    for (const c of parsed.companies) {
      // A key whose revocation is scheduled is on its way out (a rotation's grace period, as
      // `export` writes it): it does not count, as under the store's cap.
      const active = parsed.keys.filter(
        (k) => k.companyId === c.id && isKeyActive(k, now) && k.revokedAt === null,
      ).length;
      if (active > opts.maxActiveKeys)
        problems.push(
          `company ${c.id}: ${active} active keys, over keys.maxActiveKeys (${opts.maxActiveKeys})`,
        );
    }
  }
  if (problems.length) return { ok: false, problems };
  const current = await readStoreState(opts.store);
  const plan = planApply(current, parsed, { prune: opts.prune });
  const capProblems = findPruneCapProblems(plan, current, opts.maxActiveKeys, now);
  if (capProblems.length) return { ok: false, problems: capProblems };
  if (opts.dryRun) return { ok: true, plan, failures: [], applied: false };
  if (plan.changes.some(isPruneChange)) {
    if (!opts.confirm || !(await opts.confirm(plan))) return { ok: true, plan, failures: [], applied: false };
    // Confirmed: run it only if it is still what the store needs (a person may take minutes).
    const again = planApply(await readStoreState(opts.store), parsed, { prune: opts.prune });
    if (canonical(planView(again)) !== canonical(planView(plan)))
      return { ok: true, plan: again, failures: [], applied: false, stale: true };
  }
  const failures = await executePlan(plan, { ...opts, now: opts.now ?? (() => isoSeconds()) });
  return { ok: true, plan, failures, applied: true };
}

/**
 * A company that gets new keys while prune only disables some of its others: a disabled key keeps
 * its place under the cap, so when the new keys would not fit the plan is refused (the old keys
 * would be disabled and the new ones not created: the company would be left without a key).
 */
function findPruneCapProblems(plan: ApplyPlan, current: StoreState, cap: number, now: number): string[] {
  if (cap <= 0) return [];
  const problems: string[] = [];
  const disabled = new Set(
    plan.changes.flatMap((c) => (c.kind === 'key' && c.op === 'disable' ? [c.companyId] : [])),
  );
  for (const companyId of disabled) {
    const creates = plan.changes.filter(
      (c) => c.op === 'create' && c.kind === 'key' && c.companyId === companyId && isKeyActive(c.key, now),
    ).length;
    // Keys the file itself revokes (an earlier revokedAt) make room; disabled ones do not.
    const revokedByFile = new Set(
      plan.changes
        .filter((c) => {
          const to = c.op === 'update' && c.kind === 'key' ? c.diff.revokedAt?.to : undefined;
          return typeof to === 'string' && hasPassed(to, now);
        })
        .map((c) => c.id),
    );
    const held = current.keys.filter(
      (k) => k.companyId === companyId && isKeyActive(k, now) && !revokedByFile.has(k.id),
    ).length;
    if (creates > 0 && held + creates > cap)
      problems.push(
        `company ${companyId}: ${creates} new key(s) would not fit under keys.maxActiveKeys (${cap}): the keys the file leaves out are only disabled by --prune and keep their place; revoke them with --prune-revoke (final), or revoke them first (keys revoke ID)`,
      );
  }
  return problems;
}

/** The plan as JSON for `--json`: ids and field changes, never a hash. */
export function planView(plan: ApplyPlan): { changes: object[]; notes: string[] } {
  return {
    changes: plan.changes.map((c) => ({
      op: c.op,
      kind: c.kind,
      id: c.id,
      ...(c.kind === 'key' ? { companyId: c.companyId } : {}),
      ...('diff' in c ? { diff: c.diff } : {}),
    })),
    notes: plan.notes,
  };
}
