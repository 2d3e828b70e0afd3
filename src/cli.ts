#!/usr/bin/env node
import { availableParallelism } from 'node:os';
import cluster from 'node:cluster';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Command, InvalidArgumentError } from 'commander';
import { ENVIRONMENT_PATTERN, hashApiKey } from './auth/api-key.js';
import { createKeyRecord } from './auth/key-record.js';
import { maskUrlCredentials, maskUrlsInText, redactConfig } from './redact.js';
import { isoSeconds } from './time.js';
import { AdminService, type AdminResult } from './admin/service.js';
import { loadConfig } from './config/load.js';
import type { GatewayConfig } from './config/schema.js';
import { createExampleBackend } from './demo/backend.js';
import { runDemo } from './demo/run-demo.js';
import { serveClusterMetrics } from './observability/cluster-metrics.js';
import { createLogger } from './observability/logger.js';
import { createStore, startGateway, type GatewayHandle } from './server.js';

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
  if (!r.ok) fatal(`invalid configuration (${r.file}):\n  - ${r.problems.join('\n  - ')}`, EXIT_USAGE);
  return r.config;
}

const program = new Command()
  .name('notify-gateway')
  .description('API-key gateway for notification backends')
  .showHelpAfterError()
  .option('-c, --config <file>', 'config file (default: $GATEWAY_CONFIG or the shipped config/default.yaml)');

// ---- serve
program
  .command('serve')
  .description('run the gateway and the admin API')
  .option('-w, --workers <n>', 'worker processes (default: CPU count; 1 = no cluster)', parsePositive)
  .action(async (o: { workers?: number }) => {
    const config = configOrExit(program.opts().config);
    const workers = o.workers ?? (config.store.type === 'redis' ? availableParallelism() : 1);
    const sharedLimits =
      config.store.type === 'redis' || (config.store.type === 'file' && config.rateLimit.redisUrl);
    if (workers > 1 && !sharedLimits) {
      // Each worker would keep its own keys (memory) or its own rate-limit counts (file): refuse
      // rather than silently multiply every company's limit by the worker count.
      fatal(
        `--workers ${workers} needs the redis store (REDIS_URL): with the ${config.store.type} store every worker would count rate limits on its own`,
        EXIT_USAGE,
      );
    }
    if (workers > 1 && cluster.isPrimary) {
      runPrimary(workers, config);
      return;
    }
    // Every worker has its own insurance limiter: its share of a limit is per process.
    const instances = config.rateLimit.instances * workers;
    await serveOne({ ...config, rateLimit: { ...config.rateLimit, instances } });
  });

async function serveOne(config: Readonly<GatewayConfig>): Promise<void> {
  let gw: GatewayHandle;
  try {
    gw = await startGateway(config);
  } catch (err) {
    fatal((err as Error).message);
  }
  const stop = (signal: string) => {
    gw.logger.info({ signal }, 'shutting down');
    gw.close().then(
      () => process.exit(0),
      () => process.exit(EXIT_FAIL),
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

function runPrimary(workers: number, config: Readonly<GatewayConfig>): void {
  const logger = createLogger({ level: config.log.level });
  // Workers share the listening sockets (node:cluster); state is shared through Redis. The admin
  // API runs in every worker on the same port too, which is fine: it is stateless over the store.
  logger.info({ workers }, 'starting workers');
  serveClusterMetrics();
  let stopping = false;
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, 'worker died; starting a new one');
    setTimeout(() => cluster.fork(), 500);
  });
  const stop = () => {
    stopping = true;
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    setTimeout(() => process.exit(0), config.server.shutdownTimeoutMs + 2000).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
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
  .action((o: { json?: boolean }) => {
    const r = loadConfig({ file: program.opts().config, env: process.env });
    if (!r.ok) fatal(`invalid configuration (${r.file}):\n  - ${r.problems.join('\n  - ')}`, EXIT_USAGE);
    // Printed from a redacted copy only: no branch below can reach a secret (INVARIANTS #12).
    const shown = redactConfig(r.config);
    process.stdout.write(o.json ? JSON.stringify(shown, null, 2) + '\n' : describeConfig(r.file, shown));
  });

/** The text form of `config check`: what runs where, from an already redacted config. */
function describeConfig(file: string, c: Readonly<GatewayConfig>): string {
  const lines = [
    `configuration OK (${file})`,
    `  store: ${c.store.type}${c.store.type === 'redis' ? ` (${c.store.redis.url})` : ''}`,
    ...(c.rateLimit.redisUrl ? [`  rate-limit redis: ${c.rateLimit.redisUrl}`] : []),
    `  routes: ${c.routes.map((x) => `${x.prefix} -> ${x.target}`).join(', ')}`,
    `  tiers: ${c.rateLimit.tiers.map((t) => `${t.name} ${t.points}/${t.duration}s`).join(', ')}`,
  ];
  return lines.join('\n') + '\n';
}

// ---- management commands work on the configured store directly (Redis for shared deployments)
async function withService<T>(
  fn: (svc: AdminService) => Promise<AdminResult<T>>,
  print: (v: T) => string,
  json: boolean,
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
    maxActiveKeys: config.keys.maxActiveKeys,
    rotationAgeDays: config.keys.rotationAgeDays,
  });
  let result: AdminResult<T>;
  try {
    result = await fn(svc);
  } finally {
    await store.close();
  }
  if (!result.ok) {
    if (json) process.stderr.write(JSON.stringify({ error: result.error, details: result.details }) + '\n');
    fatal(`${result.error}: ${result.details}`, result.status === 400 ? EXIT_USAGE : EXIT_FAIL);
  }
  process.stdout.write(json ? JSON.stringify(result.value, null, 2) + '\n' : print(result.value));
}

function table(rows: object[], cols: string[]): string {
  if (rows.length === 0) return '(none)\n';
  const cells = rows.map((r) =>
    cols.map((c) => {
      const v = (r as Record<string, unknown>)[c];
      return v === null || v === undefined ? '-' : String(v);
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
const companyCols = ['id', 'name', 'tier', 'status', 'apiAccess', 'createdAt', 'updatedAt'];
companies
  .command('create <id>')
  .option('--name <name>')
  .option('--tier <tier>', 'a tier of rateLimit.tiers', 'free')
  .option('--status <status>', 'active | pending | suspended', 'active')
  .option('--api-access <on|off>', 'API access', 'on')
  .option('--json')
  .action(
    (id: string, o: { name?: string; tier: string; status: string; apiAccess: string; json?: boolean }) =>
      withService(
        (s) =>
          s.createCompany(
            {
              id,
              tier: o.tier,
              status: o.status,
              apiAccess: onOff(o.apiAccess),
              ...(o.name ? { name: o.name } : {}),
            },
            'cli',
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
    ),
  );
companies
  .command('update <id>')
  .option('--name <name>')
  .option('--tier <tier>')
  .option('--status <status>', 'active | pending | suspended')
  .option('--api-access <on|off>')
  .option('--json')
  .action(
    (
      id: string,
      o: { name?: string; tier?: string; status?: string; apiAccess?: string; json?: boolean },
    ) => {
      const patch: Record<string, unknown> = {};
      if (o.name !== undefined) patch.name = o.name;
      if (o.tier !== undefined) patch.tier = o.tier;
      if (o.status !== undefined) patch.status = o.status;
      if (o.apiAccess !== undefined) patch.apiAccess = onOff(o.apiAccess);
      return withService(
        (s) => s.updateCompany(id, patch, 'cli'),
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
            'cli',
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
    ),
  );
keys
  .command('revoke <keyId>')
  .option('--json')
  .action((keyId: string, o: { json?: boolean }) =>
    withService(
      (s) => s.revokeKey(keyId, 'cli'),
      (k) => `revoked ${k.id} (${k.prefix}) at ${k.revokedAt}\n`,
      !!o.json,
    ),
  );
keys
  .command('rotate <keyId>')
  .description('create a new key for the same company; the old key keeps working until revoked')
  .option('--grace <seconds>', 'revoke the old key by itself after this many seconds', parseNonNegative)
  .option('--json')
  .action((keyId: string, o: { grace?: number; json?: boolean }) =>
    withService(
      (s) => s.rotateKey(keyId, o.grace !== undefined ? { gracePeriodSeconds: o.grace } : {}, 'cli'),
      (k) =>
        `new key id: ${k.id} (replaces ${k.replaces})\nprefix:     ${k.prefix}\n\n${k.key}\n\nStore this key now: it is not shown again.\n` +
        (k.oldKeyRevokesAt
          ? `The old key stops working at ${k.oldKeyRevokesAt}.\n`
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
    if (!ENVIRONMENT_PATTERN.test(o.environment))
      fatal('--environment must be 2-16 lowercase letters or digits', EXIT_USAGE);
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
    const yaml = Object.entries(entry)
      .map(([k, v], i) => `${i === 0 ? '      - ' : '        '}${k}: ${v}`)
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
  .action((o: { company?: string; limit: number; json?: boolean }) =>
    withService(
      (s) => s.readAudit({ limit: o.limit, ...(o.company ? { companyId: o.company } : {}) }),
      (es) =>
        table(
          es.map((e) => ({ ...e, details: e.details ? JSON.stringify(e.details) : null })),
          ['at', 'event', 'companyId', 'keyId', 'keyPrefix', 'actor', 'details'],
        ),
      !!o.json,
    ),
  );

function onOff(v: string): boolean | string {
  return v === 'on' || v === 'true' ? true : v === 'off' || v === 'false' ? false : v;
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
