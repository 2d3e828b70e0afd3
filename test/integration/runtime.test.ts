import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key.js';
import { eventually, send } from '../helpers/http.js';
import { freePort, startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// `serve` as operators run it (dist/cli.js): the --workers supervisor, signals, probes.

const CLI = join(import.meta.dirname, '../../dist/cli.js');

interface Served {
  proc: ChildProcess;
  output: () => string;
  exit: Promise<{ code: number | null; ms: number }>;
}

function spawnServe(args: string[], env: Record<string, string> = {}, detached = false): Served {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm test does)`);
  const t0 = Date.now();
  const proc = spawn(process.execPath, [CLI, 'serve', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<{ code: number | null; ms: number }>((r) =>
    proc.once('exit', (code) => r({ code, ms: Date.now() - t0 })),
  );
  // A failed test must not leave a gateway (or its process group) behind.
  process.once('exit', () => {
    try {
      if (detached && proc.pid) process.kill(-proc.pid, 'SIGKILL');
      else proc.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  });
  return { proc, output: () => out, exit };
}

/** A file store with one key, and a gateway config over it; returns the config path. */
function fileStoreConfig(key: string, lines: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ng-runtime-'));
  writeFileSync(
    join(dir, 'keys.yaml'),
    `companies:\n  - id: acme\n    tier: free\n    keys:\n      - id: k1\n        hash: ${hashApiKey(key)}\n`,
  );
  writeFileSync(
    join(dir, 'gateway.yaml'),
    `store: { type: file, file: { path: ${join(dir, 'keys.yaml')} } }\n${lines}`,
  );
  return join(dir, 'gateway.yaml');
}

/** Every non-empty output line parses as a JSON log record. */
function jsonLines(out: string): Array<Record<string, unknown>> {
  return out
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        assert.fail(`not a JSON log line: ${l}`);
      }
    });
}

describe('serve --workers: supervisor and signals', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
  });
  after(async () => {
    await upstream?.close();
    await redis?.stop();
  });

  test('on a busy port the primary gives up at once: exit 1 within seconds, JSON logs only', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as { port: number }).port;
    const config = fileStoreConfig(
      generateApiKey('live'),
      `server: { port: ${port}, host: 127.0.0.1 }\nadmin: { enabled: false }\nrateLimit: { redisUrl: '${redis.url}' }\nroutes: [{ prefix: /notify/v1, target: '${upstream.url}' }]\n`,
    );
    try {
      // The file store with rateLimit.redisUrl is accepted under --workers (the limits are shared).
      const s = spawnServe(['--config', config, '--workers', '2']);
      const timeout = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 15_000).unref());
      const r = await Promise.race([s.exit, timeout]);
      assert.notEqual(r, 'timeout', `serve --workers kept running on a busy port:\n${s.output()}`);
      const { code, ms } = r as { code: number | null; ms: number };
      assert.equal(code, 1, s.output());
      assert.ok(ms < 10_000, `gave up after ${ms} ms`);
      const lines = jsonLines(s.output());
      const cannot = lines.find((l) => l.msg === 'worker cannot start');
      assert.equal(cannot?.code, 'EADDRINUSE');
      assert.equal(cannot?.level, 'fatal');
      assert.ok(lines.some((l) => l.msg === 'a worker cannot start (see its log line); giving up'));
      assert.ok(!lines.some((l) => l.msg === 'worker died; restarting'), 'no restart loop');
    } finally {
      busy.close();
    }
  });

  test('the memory store is refused under --workers, naming both ways to share limits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ng-runtime-'));
    writeFileSync(join(dir, 'gateway.yaml'), `store: { type: memory }\nadmin: { enabled: false }\n`);
    const s = spawnServe(['--config', join(dir, 'gateway.yaml'), '--workers', '2']);
    const { code } = await s.exit;
    assert.equal(code, 2);
    assert.match(s.output(), /redis store \(REDIS_URL\), or the file store with rateLimit\.redisUrl/);
  });

  test('SIGTERM to the whole process group: the request in flight completes, the primary exits 0 after its workers', async () => {
    const slow = await startUpstream();
    slow.handle((_req, res) => setTimeout(() => res.end('{"slow":true}'), 1000));
    const key = generateApiKey('live');
    const port = await freePort();
    const config = fileStoreConfig(
      key,
      `server: { port: ${port}, host: 127.0.0.1, shutdownTimeoutMs: 5000 }\nadmin: { enabled: false }\nrateLimit: { redisUrl: '${redis.url}' }\nroutes: [{ prefix: /notify/v1, target: '${slow.url}' }]\n`,
    );
    const s = spawnServe(['--config', config, '--workers', '2'], {}, true);
    try {
      await eventually(
        async () => {
          if (s.proc.exitCode !== null) throw new Error(`serve exited:\n${s.output()}`);
          return (await send(port, '/healthz').catch(() => ({ status: 0 }))).status === 200;
        },
        15_000,
        100,
      );
      const inflight = send(port, '/notify/v1/x', { headers: { 'X-API-Key': key } });
      await eventually(async () => slow.received.length === 1, 5000);
      // What systemd's KillMode=control-group, `kill -- -PGID` and Ctrl+C do: every process gets it.
      process.kill(-s.proc.pid!, 'SIGTERM');
      const r = await inflight;
      assert.equal(r.status, 200);
      assert.equal(r.body, '{"slow":true}');
      const { code } = await s.exit;
      assert.equal(code, 0, s.output());
      const lines = jsonLines(s.output());
      const stopped = lines.filter((l) => l.msg === 'gateway stopped').length;
      assert.equal(stopped, 2, 'both workers drained');
      const lastWorker = lines.map((l) => l.msg).lastIndexOf('gateway stopped');
      assert.ok(
        lines.findIndex((l) => l.msg === 'all workers stopped') > lastWorker,
        'the primary ends last',
      );
    } finally {
      try {
        process.kill(-s.proc.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
      await slow.close();
    }
  });
});
