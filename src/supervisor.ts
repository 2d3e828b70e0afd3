import cluster, { type Worker } from 'node:cluster';
import type { Logger } from './observability/logger.js';

/**
 * Exit code of a worker that could not start (`startGateway` threw: a port in use or not
 * allowed, unreadable TLS files...). Such a failure repeats on every restart, so the supervisor
 * gives up at once instead of backing off (78 is `EX_CONFIG` of sysexits.h).
 */
export const WORKER_CANNOT_START = 78;

/** How the supervisor restarts dying workers, and how long it waits for them to drain. */
export interface SupervisorOptions {
  /** Worker processes to keep running. */
  workers: number;
  logger: Logger;
  /** A worker's own drain budget (`server.shutdownTimeoutMs`); the supervisor waits that plus `graceMs`. */
  shutdownTimeoutMs: number;
  /** Extra wait past `shutdownTimeoutMs` before the workers still running are killed. Default 5000. */
  graceMs?: number;
  /** Unexpected deaths tolerated within `failureWindowMs`; one more and the supervisor gives up. Default 5. */
  maxRestarts?: number;
  /** The window in which deaths count. Default 60 000 ms. */
  failureWindowMs?: number;
  /** First restart delay, doubled for each recent death up to `maxBackoffMs`. Default 500 ms. */
  backoffMs?: number;
  /** Default 10 000 ms. */
  maxBackoffMs?: number;
  /** The signals that start a drain. Default SIGTERM and SIGINT. */
  signals?: readonly NodeJS.Signals[];
}

/**
 * The `serve --workers N` primary (node:cluster): forks N workers and restarts a dying one after a
 * back-off that doubles with each recent death. It gives up (stops every worker, resolves 1) after
 * `maxRestarts` deaths within `failureWindowMs`, or at once when a worker exits with
 * `WORKER_CANNOT_START`. On SIGTERM/SIGINT it asks every worker to drain and resolves once they all
 * exited: 0, or 1 when some had to be killed after `shutdownTimeoutMs + graceMs`. The caller exits
 * with the resolved code. Repeated signals (a process-group signal reaches the workers too) never
 * cut a drain short.
 *
 * @example
 * process.exit(await superviseWorkers({ workers: 4, logger, shutdownTimeoutMs: 10_000 }));
 */
export function superviseWorkers(opts: SupervisorOptions): Promise<number> {
  const s = new Supervisor(opts);
  return s.run();
}

class Supervisor {
  private readonly o: Required<SupervisorOptions>;
  private readonly deaths: number[] = [];
  private stopping = false;
  private exitCode = 0;
  private readonly pendingForks = new Set<NodeJS.Timeout>();
  private resolve: (code: number) => void = () => undefined;

  constructor(opts: SupervisorOptions) {
    this.o = {
      graceMs: 5000,
      maxRestarts: 5,
      failureWindowMs: 60_000,
      backoffMs: 500,
      maxBackoffMs: 10_000,
      signals: ['SIGTERM', 'SIGINT'],
      ...opts,
    };
  }

  run(): Promise<number> {
    const done = new Promise<number>((r) => (this.resolve = r));
    const onSignal = (signal: NodeJS.Signals) => this.stop(0, { signal }, 'shutting down: draining workers');
    for (const sig of this.o.signals) process.on(sig, onSignal);
    const onExit = (w: Worker, code: number | null, signal: string | null) =>
      this.onWorkerExit(w, code, signal);
    cluster.on('exit', onExit);
    this.o.logger.info({ workers: this.o.workers }, 'starting workers');
    for (let i = 0; i < this.o.workers; i++) cluster.fork();
    return done.finally(() => {
      for (const sig of this.o.signals) process.off(sig, onSignal);
      cluster.off('exit', onExit);
    });
  }

  private living(): Worker[] {
    return Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
  }

  private onWorkerExit(w: Worker, code: number | null, signal: string | null): void {
    const pid = w.process.pid;
    if (this.stopping) {
      this.o.logger.info({ pid, code, signal }, 'worker stopped');
      if (this.living().length === 0) this.finish();
      return;
    }
    if (code === WORKER_CANNOT_START) {
      return this.stop(1, { pid, code }, 'a worker cannot start (see its log line); giving up');
    }
    const now = Date.now();
    this.deaths.push(now);
    while (this.deaths.length > 0 && this.deaths[0]! <= now - this.o.failureWindowMs) this.deaths.shift();
    const recent = this.deaths.length;
    if (recent > this.o.maxRestarts) {
      return this.stop(
        1,
        { pid, code, signal, deaths: recent, windowMs: this.o.failureWindowMs },
        'workers keep dying; giving up',
      );
    }
    const delayMs = Math.min(this.o.maxBackoffMs, this.o.backoffMs * 2 ** (recent - 1));
    this.o.logger.error(
      { pid, code, signal, restartInMs: delayMs, deaths: recent },
      'worker died; restarting',
    );
    const t = setTimeout(() => {
      this.pendingForks.delete(t);
      if (!this.stopping) cluster.fork();
    }, delayMs);
    this.pendingForks.add(t);
  }

  /** Asks every worker to drain; `code` is the exit code when they all stop in time. */
  private stop(code: number, fields: Record<string, unknown>, msg: string): void {
    if (this.stopping) return;
    this.stopping = true;
    this.exitCode = code;
    (code === 0 ? this.o.logger.info : this.o.logger.error).call(this.o.logger, fields, msg);
    for (const t of this.pendingForks) clearTimeout(t);
    this.pendingForks.clear();
    const workers = this.living();
    if (workers.length === 0) return this.finish();
    // A worker drains once whatever number of SIGTERMs it gets (its handler is idempotent).
    for (const w of workers) w.process.kill('SIGTERM');
    setTimeout(() => {
      const left = this.living();
      if (left.length === 0) return;
      this.o.logger.error(
        { pids: left.map((w) => w.process.pid) },
        'workers did not drain in time; killing them',
      );
      this.exitCode = 1;
      for (const w of left) w.process.kill('SIGKILL');
    }, this.o.shutdownTimeoutMs + this.o.graceMs).unref();
  }

  private finish(): void {
    this.o.logger.info({ code: this.exitCode }, 'all workers stopped');
    this.o.logger.flush?.();
    this.resolve(this.exitCode);
  }
}
