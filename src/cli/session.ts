import type { AdminResult, AdminService } from '../admin/service.js';
import type { GatewayConfig } from '../config/schema.js';
import type { KeyStore } from '../store/types.js';
import { EXIT_FAIL, EXIT_USAGE, fail, type CliContext } from './io.js';
import { inCliWords, jsonText } from './output.js';

// How a management command reaches what it manages. Each command group states the little it needs
// as an interface (`CompaniesAccess`, `KeysAccess`, `AuditAccess`); today the admin service over
// the configured store serves them all (`store-session.ts`). An admin API client implementing the
// same interfaces is all that talking to a running gateway's admin API would need.

/** What `companies create|get|list|update` need. */
export type CompaniesAccess = Pick<
  AdminService,
  'createCompany' | 'getCompany' | 'listCompanies' | 'updateCompany'
>;

/** What `keys create|list|update|revoke|rotate` need. */
export type KeysAccess = Pick<
  AdminService,
  'createKey' | 'listKeys' | 'updateKey' | 'revokeKey' | 'rotateKey'
>;

/** What `audit` needs, and `apply` to record its changes. */
export type AuditAccess = Pick<AdminService, 'readAudit' | 'audit'>;

/** An open connection to what the management commands manage; `close()` when done. */
export interface Session {
  config: Readonly<GatewayConfig>;
  companies: CompaniesAccess;
  keys: KeysAccess;
  audit: AuditAccess;
  /** The store itself, for what only direct store access does (`apply`, `export`). */
  store: KeyStore;
  /** Who the audit trail names for the changes: `cli:<os user>`. */
  actor: string;
  close(): Promise<void>;
}

/** How a command prints its answer. */
export interface Output<T> {
  /** `--json`: print `toJson(value)` (default: the value) as JSON instead of `text(value)`. */
  json: boolean;
  text(value: T): string;
  toJson?(value: T): unknown;
  /**
   * A note for the reader on stderr when the store is the file store (never part of what a script
   * parses): what the CLI cannot see from the key file.
   */
  fileStoreNote?: string;
  /** Runs after the answer is printed (`apply` fails here when some of its changes failed). */
  after?(value: T): void;
}

/**
 * Runs one management command: opens a session on the configured store (exit 2 on an invalid
 * config or the memory store, exit 1 when the store cannot be reached), runs `run`, closes the
 * session and prints the answer. A refused answer prints `<error>: <details>` on stderr (and the
 * `{error, details}` JSON there too with `--json`) and exits 2 for invalid input (status 400), else 1.
 *
 * @example
 * await manage(ctx, (s) => s.companies.getCompany(id), { json: false, text: (c) => table([c], cols) });
 */
export async function manage<T>(
  ctx: CliContext,
  run: (session: Session) => Promise<AdminResult<T>>,
  out: Output<T>,
): Promise<void> {
  // The store's code (zod, yaml, ioredis) loads when a command runs, never for --help.
  const { openStoreSession } = await import('./store-session.js');
  const session = await openStoreSession(ctx);
  let result: AdminResult<T>;
  try {
    result = await run(session);
  } finally {
    await session.close();
  }
  printResult(ctx, session.config, result, out);
}

function printResult<T>(
  ctx: CliContext,
  config: Readonly<GatewayConfig>,
  result: AdminResult<T>,
  out: Output<T>,
): void {
  if (!result.ok) {
    if (out.json) ctx.io.stderr(JSON.stringify({ error: result.error, details: result.details }) + '\n');
    const invalid = result.status === 400;
    fail(
      `${result.error}: ${invalid ? inCliWords(result.details) : result.details}`,
      invalid ? EXIT_USAGE : EXIT_FAIL,
    );
  }
  const value = result.value;
  ctx.io.stdout(out.json ? jsonText(out.toJson ? out.toJson(value) : value) : out.text(value));
  if (out.fileStoreNote && config.store.type === 'file') ctx.io.stderr(`note: ${out.fileStoreNote}\n`);
  out.after?.(value);
}
