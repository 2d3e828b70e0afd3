#!/usr/bin/env node
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { availableParallelism, userInfo } from 'node:os';
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Command, InvalidArgumentError } from 'commander';
import { hashApiKey } from './auth/api-key.js';
import { createKeyRecord } from './auth/key-record.js';
import { maskUrlCredentials, maskUrlsInText, redactConfig } from './redact.js';
import { isoSeconds } from './time.js';
import {
  applyKeyFile,
  exportState,
  formatPlan,
  planView,
  readStoreState,
  type ApplyFailure,
} from './admin/apply.js';
import { findMissingTiers, missingTierAdvice } from './admin/missing-tiers.js';
import { AdminService, type AdminResult } from './admin/service.js';
import { isLoopbackName } from './admin/router.js';
import { loadConfig, type LoadResult } from './config/load.js';
import { findStartupProblems } from './config/preflight.js';
import type { GatewayConfig } from './config/schema.js';
import { environmentSchema, idSchema, labelSchema } from './config/fields.js';
import { escapeRefusedText } from './config/text.js';
import { createExampleBackend } from './demo/backend.js';
import { runDemo } from './demo/run-demo.js';
import { serveClusterMetrics } from './observability/cluster-metrics.js';
import { createLogger } from './observability/logger.js';
import { tracingSettings } from './observability/tracing.js';
import { createRedisClient } from './redis/connection.js';
import { createStore, startGateway, type GatewayHandle } from './server.js';
import { parseKeyFile } from './store/file-store.js';
import { ID_PATTERN, type KeyStore, type RateWindow, type Scope } from './store/types.js';
import { USAGE_FIELDS } from './usage/counts.js';
import { parseUsageRange, readUsage } from './usage/query.js';
import { RedisUsageStore } from './usage/redis-usage-store.js';

/** Who the audit trail names for CLI changes: `cli:<os user>`. */
const CLI_ACTOR = `cli:${osUser()}`;

function osUser(): string {
  try {
    return userInfo().username || 'unknown';
  } catch {
    return process.env.USER ?? 'unknown';
  }
}
import { superviseWorkers, WORKER_CANNOT_START } from './supervisor.js';

/** Exit codes: 0 ok, 1 operation refused or failed, 2 bad usage or config. */
const EXIT_FAIL = 1;
const EXIT_USAGE = 2;

/** Prints to stderr and exits. Every message goes through the URL mask: errors from below quote URLs. */
function fatal(message: string, code = EXIT_FAIL): never {
  process.stderr.write(`notify-gateway: ${maskUrlsInText(message)}\n`);
  process.exit(code);
}

function configOrExit(file: string | undefined): Readonly<GatewayConfig> {
  const r = loadConfig({ file, env: process.env });
  if (!r.ok) invalidConfig(r.file, r.problems);
  return r.config;
}

/**
 * `serve` and `config check`: the schema, then what would keep the config from starting (the same
 * `findStartupProblems` that `startGateway` runs). Exit 2 with every problem, in the same words.
 */
function startableConfigOrExit(file: string | undefined): Extract<LoadResult, { ok: true }> {
  const r = loadConfig({ file, env: process.env });
  if (!r.ok) invalidConfig(r.file, r.problems);
  const problems = findStartupProblems(r.config, { file: r.file, isLoopback: isLoopbackName });
  if (problems.length) invalidConfig(r.file, problems);
  // The key file opens: its content must parse too, or serve would refuse it after all.
  if (r.config.store.type === 'file') {
    const path = r.config.store.file.path;
    const parsed = parseKeyFile(
      readFileSync(path, 'utf8'),
      new Set(r.config.rateLimit.tiers.map((t) => t.name)),
      r.config.routes,
    );
    if (!parsed.ok)
      invalidConfig(
        r.file,
        parsed.problems.map((p) => `store.file.path (${path}): ${p}`),
      );
  }
  return r;
}

function invalidConfig(file: string, problems: string[]): never {
  fatal(`invalid configuration (${file}):\n  - ${problems.join('\n  - ')}`, EXIT_USAGE);
}

const program = new Command()
  .name('notify-gateway')
  .description('API-key gateway for notification backends')
  .showHelpAfterError()
  // Commander exits 1 on a usage error (unknown command or option, missing or bad argument); the
  // documented code is 2. Help and --version still exit 0. Subcommands inherit this.
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : EXIT_USAGE))
  .option('-c, --config <file>', 'config file (default: $GATEWAY_CONFIG or the shipped config/default.yaml)');

// ---- serve
program
  .command('serve')
  .description('run the gateway and the admin API')
  .option(
    '-w, --workers <n>',
    'worker processes (default: CPU count with the redis store, else 1; 1 = no cluster)',
    parsePositive,
  )
  .action(async (o: { workers?: number }) => {
    const config = startableConfigOrExit(program.opts().config).config;
    const tracing = tracingSettings(process.env);
    if (!tracing.ok) fatal(`invalid configuration: ${tracing.problem}`, EXIT_USAGE);
    const workers = o.workers ?? (config.store.type === 'redis' ? availableParallelism() : 1);
    const sharedLimits =
      config.store.type === 'redis' || (config.store.type === 'file' && config.rateLimit.redisUrl);
    if (workers > 1 && !sharedLimits) {
      // Each worker would keep its own keys (memory) or its own rate-limit counts (file): refuse
      // rather than silently multiply every company's limit by the worker count.
      fatal(
        `--workers ${workers} needs rate limits shared between processes: the redis store (REDIS_URL), or the file store with rateLimit.redisUrl; with the ${config.store.type} store${config.store.type === 'file' ? ' and no rateLimit.redisUrl' : ''} every worker would count rate limits on its own`,
        EXIT_USAGE,
      );
    }
    if (workers > 1 && cluster.isPrimary) {
      await runPrimary(workers, config);
      return;
    }
    // Every worker has its own insurance limiter: its share of a limit is per process.
    const instances = config.rateLimit.instances * workers;
    await serveOne({ ...config, rateLimit: { ...config.rateLimit, instances } });
  });

async function serveOne(config: Readonly<GatewayConfig>): Promise<void> {
  // Signals are handled from the first moment: a signal that arrives while the gateway starts (a
  // worker still connecting when the process group gets SIGTERM) stops it once it has started,
  // instead of killing it. process.on, not once: under --workers a process-group signal (systemd,
  // kill -- -PGID, Ctrl+C) reaches this worker and its primary, which forwards another SIGTERM.
  let gw: GatewayHandle | undefined;
  let signalled: string | undefined;
  const stop = (signal: string) => {
    if (signalled) return;
    signalled = signal;
    if (gw) drainAndExit(gw, signal);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  try {
    gw = await startGateway(config);
  } catch (err) {
    if (!cluster.isWorker) fatal((err as Error).message);
    // A worker logs like the rest of the gateway and tells its supervisor not to retry.
    const logger = createLogger({ level: config.log.level });
    logger.fatal(
      { error: maskUrlsInText((err as Error).message), code: (err as NodeJS.ErrnoException).code },
      'worker cannot start',
    );
    logger.flush(() => process.exit(WORKER_CANNOT_START));
    return;
  }
  if (signalled) drainAndExit(gw, signalled);
}

/** Drains the gateway, then exits once the async log destination has written the last lines. */
function drainAndExit(gw: GatewayHandle, signal: string): void {
  gw.logger.info({ signal }, 'shutting down');
  gw.close().then(
    () => gw.logger.flush(() => process.exit(0)),
    () => gw.logger.flush(() => process.exit(EXIT_FAIL)),
  );
}

async function runPrimary(workers: number, config: Readonly<GatewayConfig>): Promise<void> {
  const logger = createLogger({ level: config.log.level });
  // Workers share the listening sockets (node:cluster); state is shared through Redis. The admin
  // API runs in every worker on the same port too, which is fine: it is stateless over the store.
  serveClusterMetrics();
  const code = await superviseWorkers({
    workers,
    logger,
    shutdownTimeoutMs: config.server.shutdownTimeoutMs,
  });
  logger.flush(() => process.exit(code));
}

// ---- demo
program
  .command('demo')
  .description('run the gateway and an example notification backend on the in-memory store, with demo keys')
  .action(async () => {
    const port = process.env.PORT ? parsePort(process.env.PORT) : 8080;
    const adminPort = process.env.ADMIN_PORT ? parsePort(process.env.ADMIN_PORT) : 8081;
    let demo;
    try {
      demo = await runDemo({ port, adminPort, logLevel: process.env.LOG_LEVEL ?? 'warn' });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      fatal(
        e.code === 'EADDRINUSE'
          ? `port in use (${e.message}); set PORT / ADMIN_PORT to free ports`
          : e.message,
      );
    }
    process.stdout.write(demo.instructions);
    const stop = () => void demo.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });

// ---- example backend (docker-compose, Kubernetes examples, local trials)
program
  .command('example-backend')
  .description('run only the example notification backend (GET /notify/v1/health, POST /notify/v1/otps)')
  .option('-p, --port <port>', 'port', '9090')
  .option('--host <host>', 'address to bind', '0.0.0.0')
  .action(async (o: { port: string; host: string }) => {
    const server = createServer(createExampleBackend());
    server.on('error', (err) => fatal(err.message));
    server.listen(parsePort(o.port), o.host, () => {
      process.stdout.write(
        `example backend listening on ${o.host}:${(server.address() as AddressInfo).port}\n`,
      );
    });
    const stop = () => server.close(() => process.exit(0));
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });

// ---- config check
program
  .command('config')
  .description('configuration tools')
  .command('check')
  .description('validate the configuration (file + environment); lists every problem')
  .option('--json', 'print the effective configuration as JSON (secrets hidden)')
  .action(async (o: { json?: boolean }) => {
    const r = startableConfigOrExit(program.opts().config);
    const tracing = tracingSettings(process.env);
    if (!tracing.ok) fatal(`invalid configuration: ${tracing.problem}`, EXIT_USAGE);
    const missing = await storedMissingTiers(r.config);
    if (missing.length) invalidConfig(r.file, missing);
    // Printed from a redacted copy only: no branch below can reach a secret (INVARIANTS #12).
    const shown = redactConfig(r.config);
    process.stdout.write(o.json ? JSON.stringify(shown, null, 2) + '\n' : describeConfig(r.file, shown));
  });

/**
 * With the Redis store, the companies whose tier the config lacks (every one, by tier), as
 * problems of `rateLimit.tiers`; none when Redis cannot be reached (said on stderr: the check is
 * best effort, `serve` logs them too). The file store's own parser already refuses them.
 */
async function storedMissingTiers(config: Readonly<GatewayConfig>): Promise<string[]> {
  if (config.store.type !== 'redis') return [];
  const tiers = new Set(config.rateLimit.tiers.map((t) => t.name));
  const { store } = await createStore(config, createLogger({ level: 'silent' }));
  try {
    const missing = await findMissingTiers(store, tiers);
    return missing.map(
      (m) =>
        `rateLimit.tiers: has no tier "${m.tier}", which companies use: ${m.companies.join(', ')}; ${missingTierAdvice(tiers)}`,
    );
  } catch {
    process.stderr.write("note: Redis could not be read; the companies' tiers were not checked\n");
    return [];
  } finally {
    await store.close();
  }
}

/** The text form of `config check`: what runs where, from an already redacted config. */
function describeConfig(file: string, c: Readonly<GatewayConfig>): string {
  const lines = [
    `configuration OK (${file})`,
    `  store: ${c.store.type}${c.store.type === 'redis' ? ` (${c.store.redis.url})` : ''}`,
    ...(c.rateLimit.redisUrl ? [`  rate-limit redis: ${c.rateLimit.redisUrl}`] : []),
    `  routes: ${c.routes.map((x) => `${x.prefix} -> ${x.target}`).join(', ')}`,
    `  tiers: ${c.rateLimit.tiers.map((t) => `${t.name} ${t.windows.map((w) => `${w.points}/${w.duration}s`).join('+')}`).join(', ')}`,
  ];
  return lines.join('\n') + '\n';
}

// ---- management commands work on the configured store directly (Redis for shared deployments)
async function withService<T>(
  fn: (svc: AdminService, store: KeyStore) => Promise<AdminResult<T>>,
  print: (v: T) => string,
  json: boolean,
  fileStoreNote?: string,
  toJson: (v: T) => unknown = (v) => v,
  after?: (v: T) => void,
): Promise<void> {
  const config = configOrExit(program.opts().config);
  if (config.store.type === 'memory') {
    fatal(
      'the memory store lives inside a running gateway; manage it through its admin API, or use REDIS_URL',
      EXIT_USAGE,
    );
  }
  const logger = createLogger({ level: 'silent' });
  const { store } = await createStore(config, logger).catch((err: Error) => fatal(err.message));
  if (config.store.type === 'redis') {
    try {
      await store.ping();
    } catch {
      await store.close();
      fatal(`cannot reach Redis at ${maskUrlCredentials(config.store.redis.url)}`);
    }
  }
  const svc = new AdminService({
    store,
    tiers: new Set(config.rateLimit.tiers.map((t) => t.name)),
    routes: config.routes,
    maxActiveKeys: config.keys.maxActiveKeys,
    rotationAgeDays: config.keys.rotationAgeDays,
  });
  let result: AdminResult<T>;
  try {
    result = await fn(svc, store);
  } finally {
    await store.close();
  }
  if (!result.ok) {
    if (json) process.stderr.write(JSON.stringify({ error: result.error, details: result.details }) + '\n');
    fatal(
      `${result.error}: ${result.status === 400 ? inCliWords(result.details) : result.details}`,
      result.status === 400 ? EXIT_USAGE : EXIT_FAIL,
    );
  }
  process.stdout.write(json ? JSON.stringify(toJson(result.value), null, 2) + '\n' : print(result.value));
  // On stderr: a note for the reader, never part of what a script parses.
  if (fileStoreNote && config.store.type === 'file') process.stderr.write(`note: ${fileStoreNote}\n`);
  after?.(result.value);
}

/** Scopes and windows in a table cell: `POST /notify/v1/otps, * /media` and `10/1s, 600/60s`. */
function formatList(col: string, v: unknown[]): string {
  if (v.length === 0) return '(none)';
  if (col === 'limits') return (v as RateWindow[]).map((w) => `${w.points}/${w.duration}s`).join(', ');
  return (v as Scope[])
    .map((s) => `${s.methods?.join('|') ?? '*'} ${s.paths?.join('|') ?? s.route}`)
    .join(', ');
}

/**
 * `--scopes`: `all` (every route: null), or a JSON list of `{route, methods?, paths?}`. The service
 * validates the content; only unreadable JSON stops here (exit 2). Wrapped in `{ set }`: commander
 * replaces a parser's `null`.
 */
function parseScopesOption(v: string): { set: unknown } {
  if (v === 'all') return { set: null };
  try {
    return { set: JSON.parse(v) as unknown };
  } catch {
    fatal(
      '--scopes: must be "all" or a JSON list such as [{"route":"/notify/v1","methods":["POST"]}]',
      EXIT_USAGE,
    );
  }
}

/** `--limits`: `tier` / `none` (null), or windows `POINTS/SECONDS[,POINTS/SECONDS...]`, e.g. `10/1,600/60`. */
function parseLimitsOption(v: string): { set: unknown } {
  if (v === 'tier' || v === 'none') return { set: null };
  const windows = v.split(',').map((w) => {
    const m = /^\s*(\d+)\/(\d+)s?\s*$/.exec(w);
    if (!m) fatal('--limits: must be "tier", "none" or POINTS/SECONDS[,...] such as 10/1,600/60', EXIT_USAGE);
    return { points: Number(m[1]), duration: Number(m[2]) };
  });
  return { set: windows };
}

/**
 * What the CLI cannot see with the file store: it reads the key file in its own process, while
 * last use and audit events live in the running gateway's memory (never written to the file).
 */
const FILE_NOTES = {
  companies:
    'the key file records no creation or update time of companies: createdAt/updatedAt are when ' +
    'this command read the file (the running gateway answers when it first loaded them)',
  keys:
    "lastUsedAt is kept in the running gateway's memory, not in the key file: ask its admin API " +
    '(GET /admin/v1/companies/<id>/keys on the admin port); a key without createdAt in the file ' +
    'shows when it was first loaded',
  audit:
    'the audit trail is stored in Redis (store.type: redis); with the file store each event is a log ' +
    'line (msg "audit ...") and sits in the running gateway\'s memory until it stops ' +
    '(GET /admin/v1/audit on its admin port)',
} as const;

/**
 * Plain columns, two spaces apart, one row per line (kept hand-written rather than cli-table3:
 * docs/architecture.md, "CLI tables"). Control, bidi and other invisible format characters in a
 * cell are shown escaped (`\u001b`, `\u202e`): a company name or label must not move the cursor,
 * recolour the terminal, reorder text or forge a row.
 */
function table(rows: object[], cols: string[]): string {
  if (rows.length === 0) return '(none)\n';
  const cells = rows.map((r) =>
    cols.map((c) => {
      const v = (r as Record<string, unknown>)[c];
      if (v === null || v === undefined) return '-';
      if (Array.isArray(v)) return formatList(c, v);
      // Controls (ESC starts terminal escapes; CR and LF could forge rows), bidi and other invisible
      // format characters, unpaired surrogates: escaped (stored before the rule, or by another store).
      return escapeRefusedText(String(v));
    }),
  );
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(cols), ...cells.map(line)].join('\n') + '\n';
}

const companies = program.command('companies').description('manage companies');
const companyCols = [
  'id',
  'name',
  'tier',
  'status',
  'apiAccess',
  'scopes',
  'limits',
  'createdAt',
  'updatedAt',
];
companies
  .command('create <id>')
  .option('--name <name>')
  .option('--tier <tier>', 'a tier of rateLimit.tiers', 'free')
  .option('--status <status>', 'active | pending | suspended', parseStatus, 'active')
  .option('--api-access <on|off>', 'API access', parseOnOff, true)
  .option(
    '--scopes <all|json>',
    'routes its keys may call: all, or a JSON list of {route, methods?, paths?}',
    parseScopesOption,
  )
  .option(
    '--limits <tier|windows>',
    "its own windows, e.g. 10/1,600/60; tier = the tier's",
    parseLimitsOption,
  )
  .option('--json')
  .action(
    (
      id: string,
      o: {
        name?: string;
        tier: string;
        status: string;
        apiAccess: boolean;
        scopes?: { set: unknown };
        limits?: { set: unknown };
        json?: boolean;
      },
    ) =>
      withService(
        (s) =>
          s.createCompany(
            {
              id,
              tier: o.tier,
              status: o.status,
              apiAccess: o.apiAccess,
              ...(o.name ? { name: o.name } : {}),
              ...(o.scopes !== undefined ? { scopes: o.scopes.set } : {}),
              ...(o.limits !== undefined ? { limits: o.limits.set } : {}),
            },
            CLI_ACTOR,
          ),
        (c) => table([c], companyCols),
        !!o.json,
      ),
  );
companies
  .command('get <id>')
  .option('--json')
  .action((id: string, o: { json?: boolean }) =>
    withService(
      (s) => s.getCompany(id),
      (c) => table([c], companyCols),
      !!o.json,
      FILE_NOTES.companies,
    ),
  );
companies
  .command('list')
  .option('--json')
  .action((o: { json?: boolean }) =>
    withService(
      (s) => s.listCompanies(),
      (cs) => table(cs, companyCols),
      !!o.json,
      FILE_NOTES.companies,
    ),
  );
companies
  .command('update <id>')
  .option('--name <name>')
  .option('--tier <tier>')
  .option('--status <status>', 'active | pending | suspended', parseStatus)
  .option('--api-access <on|off>', 'API access', parseOnOff)
  .option(
    '--scopes <all|json>',
    'routes its keys may call: all, or a JSON list of {route, methods?, paths?}',
    parseScopesOption,
  )
  .option(
    '--limits <tier|windows>',
    "its own windows, e.g. 10/1,600/60; tier = the tier's",
    parseLimitsOption,
  )
  .option('--json')
  .action(
    (
      id: string,
      o: {
        name?: string;
        tier?: string;
        status?: string;
        apiAccess?: boolean;
        scopes?: { set: unknown };
        limits?: { set: unknown };
        json?: boolean;
      },
    ) => {
      const patch: Record<string, unknown> = {};
      if (o.scopes !== undefined) patch.scopes = o.scopes.set;
      if (o.limits !== undefined) patch.limits = o.limits.set;
      if (o.name !== undefined) patch.name = o.name;
      if (o.tier !== undefined) patch.tier = o.tier;
      if (o.status !== undefined) patch.status = o.status;
      if (o.apiAccess !== undefined) patch.apiAccess = o.apiAccess;
      return withService(
        (s) => s.updateCompany(id, patch, CLI_ACTOR),
        (c) => table([c], companyCols),
        !!o.json,
      );
    },
  );

const keys = program.command('keys').description('manage API keys');
const keyCols = [
  'id',
  'prefix',
  'label',
  'environment',
  'status',
  'createdAt',
  'lastUsedAt',
  'expiresAt',
  'revokedAt',
  'exposedAt',
  'scopes',
  'limits',
  'rotationDue',
];
keys
  .command('create <companyId>')
  .description('create a key; the key is printed once and never again')
  .option('--label <label>')
  .option('--environment <env>', 'key environment (live, test, ...)', 'live')
  .option('--expires-at <timestamp>', 'UTC YYYY-MM-DDTHH:MM:SSZ')
  .option('--json')
  .action(
    (companyId: string, o: { label?: string; environment: string; expiresAt?: string; json?: boolean }) =>
      withService(
        (s) =>
          s.createKey(
            companyId,
            {
              environment: o.environment,
              ...(o.label ? { label: o.label } : {}),
              ...(o.expiresAt ? { expiresAt: o.expiresAt } : {}),
            },
            CLI_ACTOR,
          ),
        (k) =>
          `key id:  ${k.id}\nprefix:  ${k.prefix}\ncompany: ${k.companyId}\n\n${k.key}\n\nStore this key now: it is not shown again.\n`,
        !!o.json,
      ),
  );
keys
  .command('list <companyId>')
  .option('--json')
  .action((companyId: string, o: { json?: boolean }) =>
    withService(
      (s) => s.listKeys(companyId),
      (ks) => table(ks, keyCols),
      !!o.json,
      FILE_NOTES.keys,
    ),
  );
keys
  .command('update <keyId>')
  .description("narrow a key's scopes (never wider than its company's) or give it its own windows")
  .option(
    '--scopes <all|json>',
    "all (the company's), or a JSON list of {route, methods?, paths?}",
    parseScopesOption,
  )
  .option(
    '--limits <none|windows>',
    "its own windows on top of the company's, e.g. 5/1,100/60; none = no own windows",
    parseLimitsOption,
  )
  .option('--json')
  .action((keyId: string, o: { scopes?: { set: unknown }; limits?: { set: unknown }; json?: boolean }) =>
    withService(
      (s) =>
        s.updateKey(
          keyId,
          {
            ...(o.scopes !== undefined ? { scopes: o.scopes.set } : {}),
            ...(o.limits !== undefined ? { limits: o.limits.set } : {}),
          },
          CLI_ACTOR,
        ),
      (k) => table([k], keyCols),
      !!o.json,
    ),
  );
keys
  .command('revoke <keyId>')
  .option('--json')
  .action((keyId: string, o: { json?: boolean }) =>
    withService(
      (s) => s.revokeKey(keyId, CLI_ACTOR),
      (k) => `revoked ${k.id} (${k.prefix}) at ${k.revokedAt}\n`,
      !!o.json,
    ),
  );
keys
  .command('rotate <keyId>')
  .description(
    'create a new key for the same company; the old key keeps working for the grace period (7 days), or until revoked',
  )
  .option(
    '--grace <seconds>',
    'the old key stops by itself after this many seconds (default 604800: 7 days; 0: at once)',
    parseNonNegative,
  )
  .option('--json')
  .action((keyId: string, o: { grace?: number; json?: boolean }) =>
    withService(
      (s) => s.rotateKey(keyId, o.grace !== undefined ? { gracePeriodSeconds: o.grace } : {}, CLI_ACTOR),
      (k) =>
        `new key id: ${k.id} (replaces ${k.replaces})\nprefix:     ${k.prefix}\n\n${k.key}\n\nStore this key now: it is not shown again.\n` +
        (k.oldKeyRevokesAt
          ? `The old key stops working at ${k.oldKeyRevokesAt}; to stop it sooner: notify-gateway keys revoke ${k.replaces}\n`
          : `The old key keeps working until you revoke it: notify-gateway keys revoke ${k.replaces}\n`),
      !!o.json,
    ),
  );
keys
  .command('generate')
  .description(
    'make a new key offline for the file store: prints the key once, its hash and a keys.yaml entry',
  )
  .option('--environment <env>', 'key environment (live, test, ...)', 'live')
  .option('--id <keyId>', 'key id for the keys.yaml entry')
  .option('--label <label>')
  .option('--json')
  .action((o: { environment: string; id?: string; label?: string; json?: boolean }) => {
    // What the key file will accept (config/fields.ts, the admin API's rules): the printed entry
    // must load as is.
    for (const [flag, schema, v] of [
      ['--environment', environmentSchema, o.environment],
      ['--id', idSchema, o.id],
      ['--label', labelSchema, o.label],
    ] as const) {
      const r = v === undefined ? null : schema.safeParse(v);
      if (r && !r.success) fatal(`${flag}: ${r.error.issues.map((i) => i.message).join('; ')}`, EXIT_USAGE);
    }
    // No company yet: the operator places the entry under its company in the key file.
    const { key, record } = createKeyRecord({
      companyId: '',
      environment: o.environment,
      label: o.label ?? null,
      expiresAt: null,
      createdAt: isoSeconds(),
    });
    const entry = {
      id: o.id ?? record.id,
      hash: record.hash,
      prefix: record.prefix,
      environment: o.environment,
      ...(o.label ? { label: o.label } : {}),
      createdAt: record.createdAt,
    };
    if (o.json) return void process.stdout.write(JSON.stringify({ key, ...entry }, null, 2) + '\n');
    // The label is free text (`#`, `: `, a leading `-` mean something in YAML): written quoted.
    const yaml = Object.entries(entry)
      .map(
        ([k, v], i) => `${i === 0 ? '      - ' : '        '}${k}: ${k === 'label' ? JSON.stringify(v) : v}`,
      )
      .join('\n');
    process.stdout.write(
      `${key}\n\nHand this key to the company now: it is not stored anywhere and not shown again.\n` +
        `Add this entry under the company's keys: in the key file:\n\n${yaml}\n`,
    );
  });
keys
  .command('hash')
  .description('read a key on stdin, print its SHA-256 record hash (for the file store)')
  .action(async () => {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    const key = Buffer.concat(chunks).toString('utf8').trim();
    if (!key) fatal('no key on stdin (e.g. printf %s "$KEY" | notify-gateway keys hash)', EXIT_USAGE);
    process.stdout.write(hashApiKey(key) + '\n');
  });

program
  .command('audit')
  .description('show the audit trail, newest first')
  .option('--company <id>')
  .option('--limit <n>', 'entries', parsePositive, 50)
  .option('--json')
  .action((o: { company?: string; limit: number; json?: boolean }) => {
    // An empty or malformed id is refused, not read as "every company" (as on the admin API).
    if (o.company !== undefined && !ID_PATTERN.test(o.company))
      fatal('--company: must be a company id (1-64 letters, digits, ".", "_" or "-")', EXIT_USAGE);
    return withService(
      (s) => s.readAudit({ limit: o.limit, ...(o.company !== undefined ? { companyId: o.company } : {}) }),
      (es) =>
        table(
          es.map((e) => ({ ...e, details: e.details ? JSON.stringify(e.details) : null })),
          ['at', 'event', 'companyId', 'keyId', 'keyPrefix', 'actor', 'details'],
        ),
      !!o.json,
      FILE_NOTES.audit,
    );
  });

// ---- usage: read from Redis (the store's, or rateLimit.redisUrl); in-memory counts live in the gateway
program
  .command('usage <companyId>')
  .description(
    'requests of a company per hour or day (allowed, rate-limited, scope-denied, upstream classes)',
  )
  .option('--from <time>', 'UTC YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DD (default: 24 hours / 7 days before --to)')
  .option('--to <time>', 'UTC YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DD (default: now)')
  .option('--granularity <hour|day>', 'bucket size', 'hour')
  .option('--json')
  .action(
    async (companyId: string, o: { from?: string; to?: string; granularity: string; json?: boolean }) => {
      const config = configOrExit(program.opts().config);
      const range = parseUsageRange(o, Date.now());
      if (!range.ok) fatal(range.details.replace(/^(\w+):/, '--$1:'), EXIT_USAGE);
      const url = config.store.type === 'redis' ? config.store.redis.url : config.rateLimit.redisUrl;
      if (!url)
        fatal(
          `with the ${config.store.type} store and no rateLimit.redisUrl, usage is counted in each gateway's memory: read it with GET /admin/v1/companies/${companyId}/usage`,
          EXIT_USAGE,
        );
      const client = createRedisClient({ ...config.store.redis, url }, 'notify-gateway-cli');
      client.on('error', () => undefined);
      const reader = new RedisUsageStore(client, config.store.redis.keyPrefix, config.usage.retentionDays);
      await withService(
        async (s) => {
          const company = await s.getCompany(companyId);
          if (!company.ok) return company;
          const value = await readUsage(reader, companyId, range.range, {
            now: Date.now(),
            retentionDays: config.usage.retentionDays,
          });
          return { ok: true, value };
        },
        (r) => table(r.buckets, ['start', ...USAGE_FIELDS]),
        !!o.json,
      ).finally(() => client.disconnect());
    },
  );

// ---- declarative sync of the Redis store with a key file
program
  .command('apply')
  .description('make the Redis store match a key file (companies, keys by hash); prints the diff')
  .requiredOption('-f, --file <file>', 'key file (the file store format)')
  .option('--dry-run', 'print the diff, change nothing')
  .option('--prune', 'also delete what the file does not hold: revoke keys, suspend companies')
  .option('--json')
  .action(async (o: { file: string; dryRun?: boolean; prune?: boolean; json?: boolean }) => {
    const config = configOrExit(program.opts().config);
    if (config.store.type !== 'redis')
      fatal(
        'apply needs the redis store (REDIS_URL); the file store reads its key file by itself',
        EXIT_USAGE,
      );
    let text: string;
    try {
      text = readFileSync(o.file, 'utf8');
    } catch (err) {
      fatal(`cannot read ${o.file}: ${(err as Error).message}`, EXIT_USAGE);
    }
    const dryRun = !!o.dryRun;
    await withService(
      async (svc, store) => {
        const r = await applyKeyFile(text, {
          store,
          tiers: new Set(config.rateLimit.tiers.map((t) => t.name)),
          routes: config.routes,
          maxActiveKeys: config.keys.maxActiveKeys,
          actor: CLI_ACTOR,
          audit: (e) => svc.audit(e),
          prune: !!o.prune,
          dryRun,
        });
        if (!r.ok) fatal(`${o.file} is invalid:\n  - ${r.problems.join('\n  - ')}`, EXIT_USAGE);
        return { ok: true, value: r };
      },
      (r) => formatPlan(r.plan, dryRun),
      !!o.json,
      undefined,
      (r) => ({ ...planView(r.plan), dryRun, failures: r.failures.map(failureText) }),
      (r) => {
        if (r.failures.length)
          fatal(`${r.failures.length} change(s) failed:\n  - ${r.failures.map(failureText).join('\n  - ')}`);
      },
    );
  });

program
  .command('export')
  .description('write the store as a key file (hashes only, no secrets)')
  .option('-o, --output <file>', 'write here (atomically) instead of stdout')
  .action(async (o: { output?: string }) => {
    await withService(
      async (_svc, store) => ({ ok: true, value: exportState(await readStoreState(store)) }),
      (yaml) => {
        if (!o.output) return yaml;
        writeFileSync(`${o.output}.tmp`, yaml, { mode: 0o600 });
        renameSync(`${o.output}.tmp`, o.output);
        return `wrote ${o.output}\n`;
      },
      false,
    );
  });

function failureText(f: ApplyFailure): string {
  return `${f.change.op} ${f.change.kind} ${f.change.id}: ${f.reason}`;
}

function parseOnOff(v: string): boolean {
  if (v === 'on' || v === 'true') return true;
  if (v === 'off' || v === 'false') return false;
  throw new InvalidArgumentError('must be on or off');
}
function parseStatus(v: string): string {
  if (!['active', 'pending', 'suspended'].includes(v))
    throw new InvalidArgumentError('must be active, pending or suspended');
  return v;
}

/** The admin service names fields as the API does; the CLI user typed options and arguments. */
const CLI_WORDS: Readonly<Record<string, string>> = {
  id: '<id>',
  name: '--name',
  tier: '--tier',
  status: '--status',
  apiAccess: '--api-access',
  label: '--label',
  environment: '--environment',
  expiresAt: '--expires-at',
  gracePeriodSeconds: '--grace',
};
/** `expiresAt: must be ...; tier: ...` in the CLI's words: `--expires-at: must be ...`. */
function inCliWords(details: string): string {
  return details.replace(/(^|; )([A-Za-z]+):/g, (m, sep: string, field: string) =>
    CLI_WORDS[field] ? `${sep}${CLI_WORDS[field]}:` : m,
  );
}
function parsePositive(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive whole number');
  return n;
}
function parseNonNegative(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number >= 0');
  return n;
}
function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) fatal(`invalid port: ${v}`, EXIT_USAGE);
  return n;
}

program.parseAsync(process.argv).catch((err: unknown) => fatal((err as Error).message));
