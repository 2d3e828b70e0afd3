import assert from 'node:assert/strict';
import cluster from 'node:cluster';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { createLogger } from '../../src/observability/logger.js';
import { superviseWorkers, WORKER_CANNOT_START } from '../../src/supervisor.js';

// Real node:cluster workers running tiny scripts: what the supervisor sees is what a gateway worker does.

const dir = mkdtempSync(join(tmpdir(), 'ng-supervisor-'));

function script(name: string, body: string): string {
  const file = join(dir, name);
  writeFileSync(file, body);
  return file;
}

function logCapture(): { logger: ReturnType<typeof createLogger>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({
    level: 'info',
    destination: { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) },
  });
  return { logger, lines };
}

describe('superviseWorkers', () => {
  test('a worker that keeps dying is restarted with a doubling back-off, then the supervisor gives up with 1', async () => {
    cluster.setupPrimary({ exec: script('crash.mjs', 'setTimeout(() => process.exit(3), 20);\n') });
    const { logger, lines } = logCapture();
    let forks = 0;
    const onFork = () => forks++;
    cluster.on('fork', onFork);
    const t0 = Date.now();
    const code = await superviseWorkers({
      workers: 1,
      logger,
      shutdownTimeoutMs: 1000,
      maxRestarts: 3,
      backoffMs: 50,
    });
    cluster.off('fork', onFork);
    assert.equal(code, 1);
    assert.equal(forks, 4, 'the first start and three restarts');
    const restarts = lines.filter((l) => l.msg === 'worker died; restarting').map((l) => l.restartInMs);
    assert.deepEqual(restarts, [50, 100, 200]);
    assert.ok(Date.now() - t0 >= 350, 'the back-off was waited');
    const last = lines.find((l) => l.msg === 'workers keep dying; giving up');
    assert.equal(last?.level, 'error');
    assert.equal(last?.code, 3);
  });

  test(`a worker that cannot start (exit ${WORKER_CANNOT_START}) makes the supervisor give up at once`, async () => {
    cluster.setupPrimary({
      exec: script('cannot-start.mjs', `setTimeout(() => process.exit(${WORKER_CANNOT_START}), 20);\n`),
    });
    const { logger, lines } = logCapture();
    let forks = 0;
    const onFork = () => forks++;
    cluster.on('fork', onFork);
    const t0 = Date.now();
    // A back-off this long would outlast the test's own timeout: finishing at all shows none was waited.
    const code = await superviseWorkers({ workers: 2, logger, shutdownTimeoutMs: 1000, backoffMs: 600_000 });
    cluster.off('fork', onFork);
    assert.equal(code, 1);
    assert.equal(forks, 2, 'no restart');
    assert.ok(Date.now() - t0 < 120_000, 'no back-off was waited');
    assert.ok(lines.some((l) => l.msg === 'a worker cannot start (see its log line); giving up'));
    assert.ok(!lines.some((l) => l.msg === 'worker died; restarting'));
  });

  test('on a signal every worker drains, repeated SIGTERMs do not cut it, and the supervisor waits for them', async () => {
    // Each worker takes 400 ms to drain after its first SIGTERM and counts the ones it got.
    cluster.setupPrimary({
      exec: script(
        'drain.mjs',
        [
          'let n = 0;',
          "process.on('SIGTERM', () => { if (n++ === 0) setTimeout(() => process.exit(n > 1 ? 0 : 5), 400); });",
          'setInterval(() => {}, 1000);',
          "process.send?.('up');",
        ].join('\n'),
      ),
    });
    const { logger, lines } = logCapture();
    const up = new Set<number>();
    const onMessage = (w: { id: number }) => up.add(w.id);
    cluster.on('message', onMessage);
    const exits: Array<number | null> = [];
    const onExit = (_w: unknown, code: number | null) => exits.push(code);
    cluster.on('exit', onExit);
    const done = superviseWorkers({ workers: 2, logger, shutdownTimeoutMs: 2000, signals: ['SIGUSR2'] });
    while (up.size < 2) await new Promise((r) => setTimeout(r, 20));
    // A process-group signal: every worker gets one SIGTERM of its own before the supervisor's.
    for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGTERM');
    // (Two SIGTERMs pending at once would merge into one: let the workers take the first.)
    await new Promise((r) => setTimeout(r, 100));
    const t0 = Date.now();
    process.kill(process.pid, 'SIGUSR2');
    const code = await done;
    cluster.off('message', onMessage);
    cluster.off('exit', onExit);
    assert.equal(code, 0);
    assert.ok(Date.now() - t0 >= 200, 'the supervisor waited for the drain');
    assert.deepEqual(exits, [0, 0], 'each worker got both SIGTERMs and drained once');
    assert.ok(lines.some((l) => l.msg === 'all workers stopped'));
  });
});
