import { readFileSync, stat, statSync, type Stats } from 'node:fs';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import {
  companyStatusSchema,
  environmentOfPrefix,
  environmentSchema,
  findPrefixProblem,
  HASH_PATTERN,
  idSchema,
  labelSchema,
  limitsSchema,
  nameSchema,
  prefixSchema,
  scopesSchema,
  tierNameSchema,
  timestampSchema,
} from '../config/fields.js';
import { findScopeProblems, type ScopeRoute } from '../config/limits.js';
import { MemoryKeyStore } from './memory-store.js';
import { maskKeyMaterial } from '../redact.js';
import { isoSeconds, parseInstant } from '../time.js';
import {
  StoreReadOnlyError,
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

// Every field by its one rule (config/fields.ts), as the admin API checks it.
const fileKeySchema = z
  .object({
    id: idSchema,
    hash: z
      .string()
      .transform((h) => h.replace(/^sha256:/, '').toLowerCase())
      .pipe(
        z.string().regex(HASH_PATTERN, 'must be the 64-hex SHA-256 printed by `notify-gateway keys hash`'),
      ),
    prefix: prefixSchema.optional(),
    label: labelSchema.optional(),
    environment: environmentSchema.optional(),
    createdAt: timestampSchema.optional(),
    expiresAt: timestampSchema.optional(),
    revokedAt: timestampSchema.optional(),
    /** Disabled since (reversible; `apply --prune` writes it, `export` keeps it). */
    disabledAt: timestampSchema.optional(),
    scopes: scopesSchema.optional(),
    limits: limitsSchema.nullable().optional(),
  })
  .strict()
  .superRefine((k, ctx) => {
    const problem = k.prefix === undefined ? null : findPrefixProblem(k.prefix, k.environment ?? null);
    if (problem) ctx.addIssue({ code: 'custom', path: ['prefix'], message: problem });
  });

const fileCompanySchema = z
  .object({
    id: idSchema,
    name: nameSchema.optional(),
    tier: tierNameSchema,
    status: companyStatusSchema.default('active'),
    apiAccess: z.boolean().default(true),
    scopes: scopesSchema.optional(),
    limits: limitsSchema.nullable().optional(),
    keys: z.array(fileKeySchema).default([]),
  })
  .strict();

// `companies` is required: an explicit `companies: []` is the only way to declare no companies.
const fileSchema = z.object({ companies: z.array(fileCompanySchema) }).strict();

/** The parsed key file, or every problem found (nothing is applied then). */
export type FileParseResult =
  { ok: true; companies: Company[]; keys: KeyRecord[] } | { ok: false; problems: string[] };

const NO_COMPANIES = 'write `companies: []` to declare no companies';

/**
 * What the key file does not say about a record's times: its `createdAt` (a key's, by hash; a
 * company's, by id). `parseKeyFile` uses the time of the parse unless told otherwise; the file
 * store passes the time it first loaded the record, so a reload does not move it.
 */
export type CreatedAtDefault = (kind: 'company' | 'key', idOrHash: string) => string;

/**
 * Parses the declarative key file. Every problem is listed at once, with its path: YAML errors,
 * shape and schema issues, unknown tiers, duplicate ids or hashes, and scopes that name a route
 * not in `knownRoutes` (when given) or a method it does not forward; nothing is applied when any
 * is found. A problem never quotes a hash or a key. Companies and keys may carry `scopes` (absent
 * or null = every route) and `limits` (windows; absent or null = the tier's, or none for a key).
 * Every field follows its one rule (config/fields.ts), as on the admin API: ids, names and labels
 * hold no key material, a `prefix` has the key format's display shape and names the key's
 * `environment` (which it gives when the entry has none), and every time is a string
 * `YYYY-MM-DDTHH:MM:SSZ` naming a real instant. The document is read with the YAML 1.2 core
 * schema whatever it declares (`%YAML 1.1`): a time is never turned into a date and rolled over
 * (`2027-02-30` into March 2), and a tag the core schema does not know (`!!timestamp`) is a
 * problem, not a value read some other way. A key without `createdAt` gets `createdAtOf`'s time
 * (the parse's, by default), never an invented past.
 *
 * An empty (or whitespace- or comment-only) file, a top level that is not a mapping, a missing
 * `companies` key and `companies:` without a value are broken, not "no companies": that is what a
 * truncated or half-written copy looks like. A copy cut mid-entry fails the schema (a missing
 * `tier` or `hash`, a short hash). A copy cut exactly between two entries or two fields is a
 * valid smaller file (it can drop a `revokedAt`): {@link FileKeyStore} refuses a reload that is
 * its last good content cut short, and only an atomic replace (write, then rename) rules out a
 * cut copy of new content.
 */
export function parseKeyFile(
  text: string,
  knownTiers: ReadonlySet<string>,
  knownRoutes?: readonly ScopeRoute[],
  createdAtOf?: CreatedAtDefault,
): FileParseResult {
  // `schema: 'core'` holds even against a `%YAML 1.1` directive, and without the library's
  // known tags (!!timestamp, !!binary, !!set...) an explicit tag of them is a warning, not a Date.
  const doc = parseDocument(text, {
    strict: true,
    uniqueKeys: true,
    schema: 'core',
    resolveKnownTags: false,
  });
  // Only the first line of a YAML error: the rest is an excerpt of the file.
  const problems = [...doc.errors, ...doc.warnings].map((e) => `YAML: ${e.message.split('\n')[0] ?? ''}`);
  let raw: unknown = null;
  try {
    raw = doc.toJS();
  } catch (err) {
    problems.push(`YAML: ${(err as Error).message.split('\n')[0] ?? ''}`);
  }
  const shape = checkShape(raw, doc.contents === null);
  problems.push(...shape);
  let data: z.infer<typeof fileSchema> | null = null;
  if (shape.length === 0) {
    const parsed = fileSchema.safeParse(raw);
    if (parsed.success) {
      data = parsed.data;
      if (knownRoutes) problems.push(...checkScopes(data, knownRoutes));
    } else
      problems.push(...parsed.error.issues.map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`));
    problems.push(...checkReferences((raw as { companies: unknown }).companies, knownTiers));
  }
  if (problems.length || !data) return { ok: false, problems: problems.map(maskKeyMaterial) };
  const at = isoSeconds();
  return { ok: true, ...toRecords(data, createdAtOf ?? (() => at)) };
}

/** The problems that make a file broken as a whole (checked before the schema, which would only say "Required"). */
function checkShape(raw: unknown, empty: boolean): string[] {
  if (empty) return [`(file): the key file is empty; ${NO_COMPANIES}`];
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    const got = Array.isArray(raw) ? 'a list' : raw === null ? 'nothing' : `a ${typeof raw}`;
    return [`(top level): must be a mapping with a \`companies\` list, got ${got}`];
  }
  if (!('companies' in raw)) return [`companies: missing; ${NO_COMPANIES}`];
  if ((raw as { companies: unknown }).companies === null) return [`companies: has no value; ${NO_COMPANIES}`];
  return [];
}

/**
 * Unknown tiers and duplicate ids or hashes, read from the raw document so that they are listed
 * together with the schema issues of other entries (a schema failure used to hide them).
 */
function checkReferences(companies: unknown, knownTiers: ReadonlySet<string>): string[] {
  if (!Array.isArray(companies)) return [];
  const problems: string[] = [];
  const companyIds = new Set<string>();
  const keyIds = new Set<string>();
  const hashes = new Set<string>();
  companies.forEach((c: unknown, ci) => {
    if (!isRecord(c)) return;
    if (typeof c.id === 'string') {
      if (companyIds.has(c.id)) problems.push(`companies.${ci}.id: duplicate company id ${c.id}`);
      companyIds.add(c.id);
    }
    // A name that breaks the tier rule is the schema's problem; it is not echoed here.
    if (typeof c.tier === 'string' && tierNameSchema.safeParse(c.tier).success && !knownTiers.has(c.tier))
      problems.push(
        `companies.${ci}.tier: unknown tier "${c.tier}" (not in rateLimit.tiers: ${[...knownTiers].join(', ')})`,
      );
    if (!Array.isArray(c.keys)) return;
    c.keys.forEach((k: unknown, ki) => {
      if (!isRecord(k)) return;
      if (typeof k.id === 'string') {
        if (keyIds.has(k.id)) problems.push(`companies.${ci}.keys.${ki}.id: duplicate key id ${k.id}`);
        keyIds.add(k.id);
      }
      if (typeof k.hash !== 'string') return;
      const hash = k.hash.replace(/^sha256:/, '').toLowerCase();
      // The position is named, never the hash itself.
      if (hashes.has(hash)) problems.push(`companies.${ci}.keys.${ki}.hash: the same key hash appears twice`);
      hashes.add(hash);
    });
  });
  return problems;
}

/** Scopes against the configured routes, named by position. */
function checkScopes(data: z.infer<typeof fileSchema>, routes: readonly ScopeRoute[]): string[] {
  const problems: string[] = [];
  data.companies.forEach((c, ci) => {
    for (const p of findScopeProblems(c.scopes ?? [], routes)) problems.push(`companies.${ci}.scopes.${p}`);
    c.keys.forEach((k, ki) => {
      for (const p of findScopeProblems(k.scopes ?? [], routes))
        problems.push(`companies.${ci}.keys.${ki}.scopes.${p}`);
    });
  });
  return problems;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/**
 * Store records from a valid file. What the file does not say: `createdAt` from `createdAtOf`,
 * `updatedAt` the same (the file store moves it when a reload changes the company), the
 * environment from the prefix, the rest null.
 */
function toRecords(
  data: z.infer<typeof fileSchema>,
  createdAtOf: CreatedAtDefault,
): { companies: Company[]; keys: KeyRecord[] } {
  const companies: Company[] = [];
  const keys: KeyRecord[] = [];
  for (const c of data.companies) {
    const createdAt = createdAtOf('company', c.id);
    companies.push({
      id: c.id,
      name: c.name ?? c.id,
      tier: c.tier,
      status: c.status,
      apiAccess: c.apiAccess,
      createdAt,
      updatedAt: createdAt,
      scopes: c.scopes ?? null,
      limits: c.limits ?? null,
    });
    for (const k of c.keys) {
      keys.push({
        id: k.id,
        companyId: c.id,
        hash: k.hash,
        prefix: k.prefix ?? '',
        label: k.label ?? null,
        environment: k.environment ?? (k.prefix === undefined ? null : environmentOfPrefix(k.prefix)),
        createdAt: k.createdAt ?? createdAtOf('key', k.hash),
        expiresAt: k.expiresAt ?? null,
        revokedAt: k.revokedAt ?? null,
        lastUsedAt: null,
        exposedAt: null,
        rotatedTo: null,
        disabledAt: k.disabledAt ?? null,
        scopes: k.scopes ?? null,
        limits: k.limits ?? null,
      });
    }
  }
  return { companies, keys };
}

/**
 * A key whose `revokedAt` a reload removed or moved later. The file is the source of truth, so the
 * reload applies, but this is reported (INVARIANTS #2): it is how a revoked key comes back.
 */
export interface RevocationUndone {
  keyId: string;
  companyId: string;
  /** `revokedAt` before the reload. */
  was: string;
  /** `revokedAt` after it: null when dropped, a later instant when postponed. */
  now: string | null;
}

/** What one (re)load of the key file gave: counts and undone revocations, or every problem. */
export type FileReloadResult =
  | { ok: true; companies: number; keys: number; revocationsUndone: RevocationUndone[] }
  | { ok: false; problems: string[] };

/** The key file, the tiers it may name, and how often (and to whom) reloads are reported. */
export interface FileKeyStoreOptions {
  path: string;
  knownTiers: ReadonlySet<string>;
  /** The configured routes, which scopes must name (unchecked when absent). */
  knownRoutes?: readonly ScopeRoute[];
  /** Poll interval for changes (Kubernetes swaps Secret/ConfigMap files through symlinks). */
  watchIntervalMs?: number;
  onReload?: (result: FileReloadResult) => void;
}

/**
 * Read-only store backed by the declarative YAML key file (the embedded default): reloaded when the
 * file changes; a broken file keeps the last good content and reports every problem.
 */
export class FileKeyStore implements KeyStore {
  readonly kind = 'file' as const;
  readonly writable = false;
  private readonly memory = new MemoryKeyStore();
  private readonly opts: FileKeyStoreOptions;
  /** Identity of the file as last seen (inode, size, times): any change triggers a reload. */
  private seen = '';
  private polling = false;
  /** The last good content and its records, to refuse a copy of it cut short that loosens access. */
  private lastGood: { text: string; companies: Company[]; keys: KeyRecord[] } | null = null;
  /** `revokedAt` by key hash in the last good content, to notice a reload that undoes one. */
  private revoked = new Map<string, string>();
  private readonly timer: NodeJS.Timeout | null;

  /** Throws when the initial file cannot be read or is invalid: a gateway must not start keyless by accident. */
  constructor(opts: FileKeyStoreOptions) {
    this.opts = opts;
    const first = this.load();
    if (!first.ok) throw new Error(`key file ${opts.path} is invalid:\n  ${first.problems.join('\n  ')}`);
    // Not fs.watchFile: it takes its baseline stat asynchronously, after this constructor has read
    // the file, so a replacement landing in between (a Secret update right after start) was never
    // seen. Polling against the stat taken with the read cannot miss it. Polling, not fs.watch:
    // Kubernetes swaps Secret/ConfigMap files through symlinks, which inotify on the old inode misses.
    this.timer =
      opts.watchIntervalMs === 0 ? null : setInterval(() => this.poll(), opts.watchIntervalMs ?? 1000);
    this.timer?.unref();
  }

  /** Re-reads the file now; keeps the previous content on failure. */
  reload(): void {
    const result = this.load();
    if (result.ok) void this.publish({ kind: 'all' });
    this.opts.onReload?.(result);
  }

  private poll(): void {
    if (this.polling) return;
    this.polling = true;
    stat(this.opts.path, (err, st) => {
      this.polling = false;
      // A vanished file is a change too: the reload reports it and keeps the last good content.
      const now = err ? `missing:${err.code ?? ''}` : identityOf(st);
      if (now !== this.seen) this.reload();
    });
  }

  private load(): FileReloadResult {
    let text: string;
    try {
      // Stat before reading: if the file changes in between, the next poll sees a newer stat and
      // reads again; the other order could keep stale content under a current stat.
      this.seen = identityOf(statSync(this.opts.path));
      text = readFileSync(this.opts.path, 'utf8');
    } catch (err) {
      this.seen = `missing:${(err as NodeJS.ErrnoException).code ?? ''}`;
      return { ok: false, problems: [`${this.opts.path}: ${(err as Error).message}`] };
    }
    const parsed = parseKeyFile(text, this.opts.knownTiers, this.opts.knownRoutes, this.firstLoaded());
    if (!parsed.ok) return parsed;
    this.keepUpdatedAt(parsed.companies);
    if (this.lastGood && isCutShort(text, this.lastGood.text)) {
      const loosened = findLoosened(this.lastGood, parsed);
      if (loosened.length) return { ok: false, problems: [CUT_SHORT, ...loosened] };
    }
    this.lastGood = { text, companies: parsed.companies, keys: parsed.keys };
    const revocationsUndone = findUndoneRevocations(this.revoked, parsed.keys);
    this.revoked = new Map(parsed.keys.flatMap((k) => (k.revokedAt ? [[k.hash, k.revokedAt]] : [])));
    // Carry over what only lives in memory (last use, exposure) for keys that survive the reload.
    this.memory.replaceContents(parsed.companies, parsed.keys, (k, old) => {
      if (old.hash === k.hash) {
        k.lastUsedAt = old.lastUsedAt;
        k.exposedAt = old.exposedAt;
      }
    });
    return { ok: true, companies: parsed.companies.length, keys: parsed.keys.length, revocationsUndone };
  }

  /**
   * A record's `createdAt` when the file does not give one: when this store first loaded it (a
   * key by hash, a company by id), else now. Not 1970: an invented past made every such key look
   * due for rotation and sorted it first.
   */
  private firstLoaded(): CreatedAtDefault {
    const at = isoSeconds();
    const keys = new Map(this.lastGood?.keys.map((k) => [k.hash, k.createdAt]));
    const companies = new Map(this.lastGood?.companies.map((c) => [c.id, c.createdAt]));
    return (kind, idOrHash) => (kind === 'key' ? keys : companies).get(idOrHash) ?? at;
  }

  /** A company's `updatedAt`: the previous one when a reload leaves the company as it was, else now. */
  private keepUpdatedAt(companies: Company[]): void {
    const before = new Map(this.lastGood?.companies.map((c) => [c.id, c]));
    const at = isoSeconds();
    const fields = (c: Company) =>
      JSON.stringify([c.name, c.tier, c.status, c.apiAccess, c.scopes, c.limits]);
    for (const c of companies) {
      const old = before.get(c.id);
      c.updatedAt = !old ? c.createdAt : fields(old) === fields(c) ? old.updatedAt : at;
    }
  }

  async findKeyByHash(hash: string): Promise<KeyRecord | null> {
    return this.memory.findKeyByHash(hash);
  }
  async getKey(id: string): Promise<KeyRecord | null> {
    return this.memory.getKey(id);
  }
  async listKeys(companyId: string): Promise<KeyRecord[]> {
    return this.memory.listKeys(companyId);
  }
  async touchKey(key: Pick<KeyRecord, 'id' | 'hash'>, at: string): Promise<void> {
    return this.memory.touchKey(key, at);
  }
  async getCompany(id: string): Promise<Company | null> {
    return this.memory.getCompany(id);
  }
  async listCompanies(): Promise<Company[]> {
    return this.memory.listCompanies();
  }
  async appendAudit(entry: AuditEntry): Promise<void> {
    return this.memory.appendAudit(entry);
  }
  async readAudit(query: AuditQuery): Promise<AuditEntry[]> {
    return this.memory.readAudit(query);
  }
  async publish(msg: Invalidation): Promise<void> {
    return this.memory.publish(msg);
  }
  subscribe(listener: (msg: Invalidation) => void): void {
    this.memory.subscribe(listener);
  }
  async ping(): Promise<void> {
    return this.memory.ping();
  }

  async createKey(_record: KeyRecord, _cap: number, _now: string): Promise<CreateKeyResult> {
    throw new StoreReadOnlyError();
  }
  async createCompany(_company: Company): Promise<boolean> {
    throw new StoreReadOnlyError();
  }
  async updateCompany(_id: string, _patch: CompanyPatch, _now: string): Promise<CompanyUpdate | null> {
    throw new StoreReadOnlyError();
  }
  /** Only the in-memory exposure flag may change; revocation belongs in the file. */
  async updateKey(id: string, patch: KeyPatch): Promise<KeyRecord | null> {
    const keys = Object.keys(patch);
    if (keys.length === 1 && keys[0] === 'exposedAt') return this.memory.updateKey(id, patch);
    throw new StoreReadOnlyError();
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.memory.close();
  }
}

const CUT_SHORT =
  '(file): the content is the last good content cut short (a truncated or half-written copy) and ' +
  'would loosen access; to make that change on purpose, also end the file with a comment line';

/**
 * What a cut-short copy would loosen: a key that keeps its entry but loses (or postpones) its
 * `revokedAt` or `expiresAt`, a company that keeps its entry but becomes active or regains API
 * access, a company or key that loses its `scopes` or `limits`. Entries that vanish altogether lose access (fail closed), so that alone is no reason to
 * refuse: deleting the last key of the file is how an operator may remove it. Positions are named
 * by id, never by hash.
 */
function findLoosened(
  before: { companies: Company[]; keys: KeyRecord[] },
  after: { companies: Company[]; keys: KeyRecord[] },
): string[] {
  const problems: string[] = [];
  const oldKeys = new Map(before.keys.map((k) => [k.hash, k]));
  for (const k of after.keys) {
    const old = oldKeys.get(k.hash);
    if (!old) continue;
    for (const field of ['revokedAt', 'expiresAt'] as const) {
      const was = old[field];
      const now = k[field];
      if (was !== null && (now === null || (parseInstant(now) ?? 0) > (parseInstant(was) ?? 0)))
        problems.push(`key ${k.id}: ${field} would be dropped or postponed`);
    }
    problems.push(...droppedAccessRules(`key ${k.id}`, old, k));
  }
  const oldCompanies = new Map(before.companies.map((c) => [c.id, c]));
  for (const c of after.companies) {
    const old = oldCompanies.get(c.id);
    if (!old) continue;
    if (old.status !== 'active' && c.status === 'active')
      problems.push(`company ${c.id}: would become active`);
    if (!old.apiAccess && c.apiAccess) problems.push(`company ${c.id}: would regain API access`);
    problems.push(...droppedAccessRules(`company ${c.id}`, old, c));
  }
  return problems;
}

/** Scopes or windows that a cut would drop (a dropped list means every route, or the tier's limits). */
function droppedAccessRules(
  who: string,
  before: Pick<Company, 'scopes' | 'limits'>,
  after: Pick<Company, 'scopes' | 'limits'>,
): string[] {
  const out: string[] = [];
  if (before.scopes !== null && after.scopes === null) out.push(`${who}: scopes would be dropped`);
  if (before.limits !== null && after.limits === null) out.push(`${who}: limits would be dropped`);
  return out;
}

/**
 * Whether `next` is `previous` cut short. A cut at an entry boundary, or between a key's `hash`
 * and its `revokedAt`, or a company's `tier` and its `status`, is valid YAML that drops the
 * revocation or the suspension: the schema cannot see it, the previous content can.
 */
function isCutShort(next: string, previous: string): boolean {
  return next.length < previous.length && previous.startsWith(next);
}

/**
 * Keys (matched by hash: the secret, whatever its id now) whose revocation the new content drops
 * or moves later. A value that does not parse counts as already ended, like everywhere else.
 */
function findUndoneRevocations(before: ReadonlyMap<string, string>, keys: KeyRecord[]): RevocationUndone[] {
  const undone: RevocationUndone[] = [];
  for (const k of keys) {
    const was = before.get(k.hash);
    if (was === undefined) continue;
    const wasAt = parseInstant(was) ?? -Infinity;
    const nowAt = k.revokedAt === null ? Infinity : (parseInstant(k.revokedAt) ?? -Infinity);
    if (nowAt > wasAt) undone.push({ keyId: k.id, companyId: k.companyId, was, now: k.revokedAt });
  }
  return undone;
}

function identityOf(st: Stats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}
