import { readFileSync, stat, statSync, type Stats } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { MemoryKeyStore } from './memory-store.js';
import { INSTANT_MESSAGE, isoSeconds, parseInstant } from '../time.js';
import {
  HASH_PATTERN,
  ID_PATTERN,
  StoreReadOnlyError,
  type AuditEntry,
  type Company,
  type CompanyPatch,
  type CompanyUpdate,
  type CreateKeyResult,
  type Invalidation,
  type KeyPatch,
  type KeyRecord,
  type KeyStore,
} from './types.js';

const id = z.string().regex(ID_PATTERN, 'must be 1-64 letters, digits, ".", "_" or "-"');
const timestamp = z
  .union([z.string(), z.date()])
  .transform((v) => (v instanceof Date ? isoSeconds(v) : v))
  // A real instant, not only the shape: `2027-02-30T00:00:00Z` would otherwise never apply.
  .pipe(z.string().refine((v) => parseInstant(v) !== null, INSTANT_MESSAGE));

const fileKeySchema = z
  .object({
    id,
    hash: z
      .string()
      .transform((h) => h.replace(/^sha256:/, '').toLowerCase())
      .pipe(
        z.string().regex(HASH_PATTERN, 'must be the 64-hex SHA-256 printed by `notify-gateway keys hash`'),
      ),
    prefix: z.string().max(32).optional(),
    label: z.string().max(200).optional(),
    environment: z.string().max(16).optional(),
    createdAt: timestamp.optional(),
    expiresAt: timestamp.optional(),
    revokedAt: timestamp.optional(),
  })
  .strict();

const fileCompanySchema = z
  .object({
    id,
    name: z.string().min(1).max(200).optional(),
    tier: z.string().min(1),
    status: z.enum(['active', 'pending', 'suspended']).default('active'),
    apiAccess: z.boolean().default(true),
    keys: z.array(fileKeySchema).default([]),
  })
  .strict();

const fileSchema = z.object({ companies: z.array(fileCompanySchema).default([]) }).strict();

/** The parsed key file, or every problem found (nothing is applied then). */
export type FileParseResult =
  { ok: true; companies: Company[]; keys: KeyRecord[] } | { ok: false; problems: string[] };

/**
 * Parses the declarative key file. Every problem is listed with its path; nothing is applied when
 * any is found. Tiers must exist in the configured tier table.
 */
export function parseKeyFile(text: string, knownTiers: ReadonlySet<string>): FileParseResult {
  let raw: unknown;
  try {
    raw = text.trim() === '' ? {} : parseYaml(text, { strict: true, uniqueKeys: true });
  } catch (err) {
    return { ok: false, problems: [`YAML: ${(err as Error).message.split('\n')[0]}`] };
  }
  const parsed = fileSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    return {
      ok: false,
      problems: parsed.error.issues.map((i) => `${i.path.join('.') || '(top level)'}: ${i.message}`),
    };
  }
  const problems: string[] = [];
  const companies: Company[] = [];
  const keys: KeyRecord[] = [];
  const companyIds = new Set<string>();
  const keyIds = new Set<string>();
  const hashes = new Set<string>();
  const epoch = '1970-01-01T00:00:00Z';
  parsed.data.companies.forEach((c, ci) => {
    if (companyIds.has(c.id)) problems.push(`companies.${ci}.id: duplicate company id ${c.id}`);
    companyIds.add(c.id);
    if (!knownTiers.has(c.tier))
      problems.push(`companies.${ci}.tier: unknown tier "${c.tier}" (not in rateLimit.tiers)`);
    companies.push({
      id: c.id,
      name: c.name ?? c.id,
      tier: c.tier,
      status: c.status,
      apiAccess: c.apiAccess,
      createdAt: epoch,
      updatedAt: epoch,
    });
    c.keys.forEach((k, ki) => {
      if (keyIds.has(k.id)) problems.push(`companies.${ci}.keys.${ki}.id: duplicate key id ${k.id}`);
      // The position is named, never the hash itself.
      if (hashes.has(k.hash))
        problems.push(`companies.${ci}.keys.${ki}.hash: the same key hash appears twice`);
      keyIds.add(k.id);
      hashes.add(k.hash);
      keys.push({
        id: k.id,
        companyId: c.id,
        hash: k.hash,
        prefix: k.prefix ?? '',
        label: k.label ?? null,
        environment: k.environment ?? null,
        createdAt: k.createdAt ?? epoch,
        expiresAt: k.expiresAt ?? null,
        revokedAt: k.revokedAt ?? null,
        lastUsedAt: null,
        exposedAt: null,
        rotatedTo: null,
      });
    });
  });
  return problems.length ? { ok: false, problems } : { ok: true, companies, keys };
}

/** The key file, the tiers it may name, and how often (and to whom) reloads are reported. */
export interface FileKeyStoreOptions {
  path: string;
  knownTiers: ReadonlySet<string>;
  /** Poll interval for changes (Kubernetes swaps Secret/ConfigMap files through symlinks). */
  watchIntervalMs?: number;
  onReload?: (
    result: { ok: true; companies: number; keys: number } | { ok: false; problems: string[] },
  ) => void;
}

/**
 * Read-only store backed by a declarative YAML file (the embedded default). Reloads when the file
 * changes; a broken file keeps the last good content and reports every problem through `onReload`.
 * `lastUsedAt` and exposure flags are kept in memory only.
 *
 * Holds the file's content in a {@link MemoryKeyStore} (which also keeps the audit trail and the
 * listeners) and forwards reads to it; every write but the exposure flag is refused.
 */
export class FileKeyStore implements KeyStore {
  readonly kind = 'file' as const;
  readonly writable = false;
  private readonly memory = new MemoryKeyStore();
  private readonly opts: FileKeyStoreOptions;
  /** Identity of the file as last seen (inode, size, times): any change triggers a reload. */
  private seen = '';
  private polling = false;
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

  private load(): { ok: true; companies: number; keys: number } | { ok: false; problems: string[] } {
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
    const parsed = parseKeyFile(text, this.opts.knownTiers);
    if (!parsed.ok) return parsed;
    // Carry over what only lives in memory (last use, exposure) for keys that survive the reload.
    this.memory.replaceContents(parsed.companies, parsed.keys, (k, old) => {
      if (old.hash === k.hash) {
        k.lastUsedAt = old.lastUsedAt;
        k.exposedAt = old.exposedAt;
      }
    });
    return { ok: true, companies: parsed.companies.length, keys: parsed.keys.length };
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
  async readAudit(opts: { limit: number; companyId?: string }): Promise<AuditEntry[]> {
    return this.memory.readAudit(opts);
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

function identityOf(st: Stats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
}
