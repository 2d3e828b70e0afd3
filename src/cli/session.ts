import { readFileSync } from 'node:fs';
import type { AdminResult, AdminService } from '../admin/service.js';
import type { GatewayConfig } from '../config/schema.js';
import type { KeyStore } from '../store/types.js';
import type { UsageReport } from '../usage/query.js';
import { EXIT_FAIL, EXIT_USAGE, fail, type CliContext } from './io.js';
import { inCliWords, jsonText } from './output.js';

// How a management command reaches what it manages. Each command group states the little it needs
// as an interface (`CompaniesAccess`, `KeysAccess`, `AuditAccess`, `UsageAccess`), which two
// sessions implement: the admin service over the configured store (`store-session.ts`: root, for
// bootstrapping) and a running gateway's admin API (`api-session.ts`: `--admin-url`/`ADMIN_URL`
// and a token, whose role and name then apply and are audited).

/** A command's answer: the value, or the spec's error body with its HTTP status. */
export type Answer<T> =
  { ok: true; value: T } | { ok: false; status: number; error: string; details: string };

/** An admin service method as a session offers it: the same arguments, an `Answer`. */
type Offered<F> = F extends (...args: infer A) => Promise<AdminResult<infer T>>
  ? (...args: A) => Promise<Answer<T>>
  : never;
type Access<K extends keyof AdminService> = { [P in K]: Offered<AdminService[P]> };

/**
 * What `companies create|get|list|update` need. The `actor` argument names who acts in the audit
 * trail on the store; the admin API ignores it and names the token instead.
 */
export type CompaniesAccess = Access<'createCompany' | 'getCompany' | 'listCompanies' | 'updateCompany'>;

/** What `keys create|list|update|revoke|rotate` need. */
export type KeysAccess = Access<'createKey' | 'listKeys' | 'updateKey' | 'revokeKey' | 'rotateKey'>;

/** What `audit` needs. */
export type AuditAccess = Access<'readAudit'>;

/** What `usage` needs through the admin API (on the store, `usage.ts` reads Redis itself). */
export interface UsageAccess {
  /** `from`, `to`, `granularity` as typed; the admin API checks them (400 naming the one at fault). */
  readUsage(companyId: string, query: Record<string, string>): Promise<Answer<UsageReport>>;
}

/** An open connection to what the management commands manage; `close()` when done. */
export interface Session {
  companies: CompaniesAccess;
  keys: KeysAccess;
  audit: AuditAccess;
  /** Who the audit trail names: `cli:<os user>` on the store; the admin API names the token itself. */
  actor: string;
  /** Where the commands act: the key file, Redis, or a gateway's admin API. */
  via: 'file' | 'redis' | 'admin-api';
  close(): Promise<void>;
}

/** A session through a gateway's admin API. */
export interface ApiSession extends Session {
  via: 'admin-api';
  usage: UsageAccess;
}

/** A session on the store itself (root): what only direct store access does (`apply`, `export`). */
export interface StoreSession extends Session {
  via: 'file' | 'redis';
  config: Readonly<GatewayConfig>;
  store: KeyStore;
  /** The admin service, for `apply` to audit its changes. */
  service: AdminService;
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
 * Runs one management command: through the admin API when `--admin-url` or `ADMIN_URL` is given
 * (exit 2 for a bad URL or token file, exit 1 when it cannot be reached), else on the configured
 * store (exit 2 on an invalid config or the memory store, exit 1 when the store cannot be
 * reached); runs `run`, closes the session and prints the answer. A refused answer prints
 * `<error>: <details>` on stderr (and the `{error, details}` JSON there too with `--json`) and
 * exits 2 for invalid input (status 400), else 1 (a 403 names the role the token lacks).
 *
 * @example
 * await manage(ctx, (s) => s.companies.getCompany(id), { json: false, text: (c) => table([c], cols) });
 */
export async function manage<T>(
  ctx: CliContext,
  run: (session: Session) => Promise<Answer<T>>,
  out: Output<T>,
): Promise<void> {
  const target = adminApiTarget(ctx);
  // What a session needs (fetch only, or the store's zod, yaml and ioredis) loads when a command
  // runs, never for --help.
  const session: Session = target
    ? (await import('./api-session.js')).openApiSession(target, ctx.io)
    : await (await import('./store-session.js')).openStoreSession(ctx);
  await runIn(ctx, session, run, out);
}

/**
 * Runs a command that needs the store itself (`apply`, `export`: key hashes, which the admin API
 * never takes or shows). Refused (exit 2) when an admin API is named: these run as root, on the
 * store, and must not seem to run as the token.
 */
export async function manageStore<T>(
  ctx: CliContext,
  run: (session: StoreSession) => Promise<Answer<T>>,
  out: Output<T>,
): Promise<void> {
  refuseAdminApi(ctx);
  const { openStoreSession } = await import('./store-session.js');
  await runIn(ctx, await openStoreSession(ctx), run, out);
}

/**
 * Stops a command that needs the store itself when an admin API is named (exit 2): it would run
 * as root, not as the token.
 */
export function refuseAdminApi(ctx: CliContext): void {
  if (adminApiTarget(ctx))
    fail(
      'apply and export work on the store itself (root): they read and write key hashes, which the admin API never takes or shows. Run them without --admin-url and ADMIN_URL, with the store configured (REDIS_URL)',
      EXIT_USAGE,
    );
}

async function runIn<S extends Session, T>(
  ctx: CliContext,
  session: S,
  run: (session: S) => Promise<Answer<T>>,
  out: Output<T>,
): Promise<void> {
  let result: Answer<T>;
  try {
    result = await run(session);
  } finally {
    await session.close();
  }
  printResult(ctx, session.via, result, out);
}

/** Where the admin API is, and the token to show it, when the CLI is to use one. */
export interface AdminApiTarget {
  /** `--admin-url`, else `ADMIN_URL`, as given (checked when the session opens). */
  url: string;
  /** From `--token-file`, else `ADMIN_TOKEN`; null: none (a tokenless loopback admin API). */
  token: string | null;
}

/**
 * The admin API to use: `--admin-url` (else `ADMIN_URL`) and the token of `--token-file` (else
 * `ADMIN_TOKEN`); null when neither URL is given. A token file without a URL, or one that cannot
 * be read or is empty, is exit 2. The token is never printed.
 */
export function adminApiTarget(ctx: CliContext): AdminApiTarget | null {
  const url = ctx.adminUrl?.() ?? (ctx.io.env.ADMIN_URL || undefined);
  const tokenFile = ctx.tokenFile?.();
  if (!url) {
    if (tokenFile !== undefined)
      fail('--token-file needs --admin-url (or ADMIN_URL): the token is for the admin API', EXIT_USAGE);
    return null;
  }
  return { url, token: tokenFile !== undefined ? readToken(tokenFile) : ctx.io.env.ADMIN_TOKEN || null };
}

function readToken(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    // The reason (ENOENT, EACCES), never the content.
    fail(
      `cannot read --token-file ${file}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`,
      EXIT_USAGE,
    );
  }
  const token = text.trim();
  if (!token || /\s/.test(token))
    fail(`--token-file ${file}: must hold one token (one line, no spaces)`, EXIT_USAGE);
  return token;
}

function printResult<T>(ctx: CliContext, via: Session['via'], result: Answer<T>, out: Output<T>): void {
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
  if (out.fileStoreNote && via === 'file') ctx.io.stderr(`note: ${out.fileStoreNote}\n`);
  out.after?.(value);
}
