import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, Socket } from 'node:net';

/** A free TCP port on 127.0.0.1 (bound then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export interface TestRedis {
  port: number;
  url: string;
  /** SIGKILL: Redis disappears at once (connections reset). */
  kill(): Promise<void>;
  /** SIGSTOP / SIGCONT: Redis hangs with connections open. */
  pause(): void;
  resume(): void;
  /** Starts a fresh (empty) server on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Spawns a private `redis-server` on a free port (no persistence), waits for PING, and returns
 * controls to kill, pause or restart it. Fails loudly when the binary is missing: tests that need
 * Redis never skip silently.
 */
export async function startRedis(opts: { port?: number; args?: string[] } = {}): Promise<TestRedis> {
  const port = opts.port ?? (await freePort());
  const extraArgs = opts.args ?? [];
  let proc: ChildProcess | null = null;
  const launch = async () => {
    proc = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', ...extraArgs],
      {
        stdio: 'ignore',
      },
    );
    const spawned = new Promise<void>((resolve, reject) => {
      proc!.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          err.code === 'ENOENT'
            ? new Error(
                'redis-server is not installed: the Redis tests need it (apt-get install -y redis-server; .ci/run does this)',
              )
            : err,
        ),
      );
      proc!.once('spawn', () => resolve());
    });
    await spawned;
    // A test that fails before its cleanup must not leave a redis-server behind (nor keep the
    // test process alive): the runner's --test-force-exit ends the process, and this kills the child.
    const child = proc;
    const reap = () => child?.kill('SIGKILL');
    process.once('exit', reap);
    child?.once('exit', () => process.off('exit', reap));
    await waitForPing(port, 5000);
  };
  await launch();
  const exited = () =>
    new Promise<void>((resolve) => {
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
    });
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async kill() {
      proc?.kill('SIGKILL');
      await exited();
    },
    pause() {
      proc?.kill('SIGSTOP');
    },
    resume() {
      proc?.kill('SIGCONT');
    },
    async restart() {
      proc?.kill('SIGKILL');
      await exited();
      await launch();
    },
    async stop() {
      proc?.kill('SIGCONT');
      proc?.kill('SIGKILL');
      await exited();
    },
  };
}

/** Resolves once `PING` answers `+PONG` on the port; rejects after `ms`. */
export async function waitForPing(port: number, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = new Socket();
      s.setTimeout(300);
      s.once('error', () => resolve(false));
      s.once('timeout', () => {
        s.destroy();
        resolve(false);
      });
      s.connect(port, '127.0.0.1', () => s.write('PING\r\n'));
      s.once('data', (d) => {
        s.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`redis-server on port ${port} did not answer PING within ${ms} ms`);
}
