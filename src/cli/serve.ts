import { availableParallelism } from 'node:os';
import type { Command } from 'commander';
import type { GatewayConfig } from '../config/schema.js';
import { maskUrlsInText } from '../redact.js';
import type { GatewayHandle } from '../server.js';
import { EXIT_FAIL, EXIT_OK, EXIT_USAGE, fail, type CliContext, type CliIo } from './io.js';
import { parsePositive } from './options.js';

/** `serve [--workers N]`: the gateway and its admin API, until SIGTERM or SIGINT. */
export function registerServeCommand(program: Command, ctx: CliContext): void {
  program
    .command('serve')
    .description('run the gateway and the admin API')
    .option(
      '-w, --workers <n>',
      'worker processes (default: CPU count with the redis store, else 1; 1 = no cluster)',
      parsePositive,
    )
    .action((o: { workers?: number }) => serve(ctx, o.workers));
}

async function serve(ctx: CliContext, workersOption: number | undefined): Promise<void> {
  const { checkTracingSettings, loadStartableConfig } = await import('./load-config.js');
  const { config } = await loadStartableConfig(ctx);
  checkTracingSettings(ctx);
  const workers = workersOption ?? (config.store.type === 'redis' ? availableParallelism() : 1);
  checkWorkers(workers, config);
  const { default: cluster } = await import('node:cluster');
  if (workers > 1 && cluster.isPrimary) return runPrimary(ctx.io, workers, config);
  // Every worker has its own insurance limiter: its share of a limit is per process.
  const instances = config.rateLimit.instances * workers;
  await serveOne(ctx.io, { ...config, rateLimit: { ...config.rateLimit, instances } }, cluster.isWorker);
}

/**
 * More than one worker needs rate limits shared between processes. Refused (exit 2) rather than
 * silently multiplying every company's limit by the worker count: with the memory store each
 * worker would keep its own keys, with the file store and no `rateLimit.redisUrl` its own counts.
 */
function checkWorkers(workers: number, config: Readonly<GatewayConfig>): void {
  const type = config.store.type;
  const sharedLimits = type === 'redis' || (type === 'file' && config.rateLimit.redisUrl);
  if (workers > 1 && !sharedLimits) {
    fail(
      `--workers ${workers} needs rate limits shared between processes: the redis store (REDIS_URL), or the file store with rateLimit.redisUrl; with the ${type} store${type === 'file' ? ' and no rateLimit.redisUrl' : ''} every worker would count rate limits on its own`,
      EXIT_USAGE,
    );
  }
}

/** One gateway process (alone, or a worker of `--workers`): started, then drained on a signal. */
async function serveOne(io: CliIo, config: Readonly<GatewayConfig>, isWorker: boolean): Promise<void> {
  // Signals are handled from the first moment: a signal that arrives while the gateway starts (a
  // worker still connecting when the process group gets SIGTERM) stops it once it has started,
  // instead of killing it. `on`, not `once`: under --workers a process-group signal (systemd,
  // kill -- -PGID, Ctrl+C) reaches this worker and its primary, which forwards another SIGTERM.
  let gw: GatewayHandle | undefined;
  let signalled: string | undefined;
  const stop = (signal: string) => {
    if (signalled) return;
    signalled = signal;
    if (gw) drainAndExit(io, gw, signal);
  };
  io.signals.on('SIGTERM', () => stop('SIGTERM'));
  io.signals.on('SIGINT', () => stop('SIGINT'));
  const { startGateway } = await import('../server.js');
  try {
    gw = await startGateway(config);
  } catch (err) {
    if (!isWorker) fail((err as Error).message);
    return workerCannotStart(io, config, err as NodeJS.ErrnoException);
  }
  if (signalled) drainAndExit(io, gw, signalled);
}

/** A worker logs like the rest of the gateway and tells its supervisor not to retry. */
async function workerCannotStart(
  io: CliIo,
  config: Readonly<GatewayConfig>,
  err: NodeJS.ErrnoException,
): Promise<void> {
  const [{ createLogger }, { WORKER_CANNOT_START }] = await Promise.all([
    import('../observability/logger.js'),
    import('../supervisor.js'),
  ]);
  const logger = createLogger({ level: config.log.level });
  logger.fatal({ error: maskUrlsInText(err.message), code: err.code }, 'worker cannot start');
  logger.flush(() => io.exit(WORKER_CANNOT_START));
}

/** Drains the gateway, then exits once the async log destination has written the last lines. */
function drainAndExit(io: CliIo, gw: GatewayHandle, signal: string): void {
  gw.logger.info({ signal }, 'shutting down');
  gw.close().then(
    () => gw.logger.flush(() => io.exit(EXIT_OK)),
    () => gw.logger.flush(() => io.exit(EXIT_FAIL)),
  );
}

/**
 * The `--workers` primary: forks and supervises the workers, and exits with the supervisor's code.
 * Workers share the listening sockets (node:cluster); state is shared through Redis. The admin API
 * runs in every worker on the same port too, which is fine: it is stateless over the store.
 */
async function runPrimary(io: CliIo, workers: number, config: Readonly<GatewayConfig>): Promise<void> {
  const [{ createLogger }, { superviseWorkers }, { serveClusterMetrics }] = await Promise.all([
    import('../observability/logger.js'),
    import('../supervisor.js'),
    import('../observability/cluster-metrics.js'),
  ]);
  const logger = createLogger({ level: config.log.level });
  serveClusterMetrics();
  const code = await superviseWorkers({
    workers,
    logger,
    shutdownTimeoutMs: config.server.shutdownTimeoutMs,
  });
  logger.flush(() => io.exit(code));
}
