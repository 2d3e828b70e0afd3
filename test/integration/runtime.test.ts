import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key.js';
import { createCompanyAndKey } from '../helpers/admin.js';
import { spawnCli, type SpawnedCli } from '../helpers/cli-run.js';
import { ADMIN_TOKEN, startTestGateway } from '../helpers/gateway.js';
import { eventually, send } from '../helpers/http.js';
import { freePort, startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// `serve` as operators run it (dist/cli.js): the --workers supervisor, signals, probes.

function spawnServe(args: string[], env: Record<string, string> = {}, detached = false): SpawnedCli {
  return spawnCli(['serve', ...args], env, { detached });
}

/** A file store with one key, and a gateway config over it; returns the config path. */
function fileStoreConfig(key: string, lines: string, storeExtra = ''): string {
  const dir = mkdtempSync(join(tmpdir(), 'ng-runtime-'));
  writeFileSync(
    join(dir, 'keys.yaml'),
    `companies:\n  - id: acme\n    tier: free\n    keys:\n      - id: k1\n        hash: ${hashApiKey(key)}\n`,
  );
  writeFileSync(
    join(dir, 'gateway.yaml'),
    `store: { type: file, file: { path: ${join(dir, 'keys.yaml')} }${storeExtra} }\n${lines}`,
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
      // Both workers listening, so either may get the request (a worker signalled while it starts
      // drains once started too, but that is not what this test looks at).
      await eventually(async () => s.output().split('"msg":"gateway listening"').length === 3, 15_000, 50);
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
      assert.equal(stopped, 2, `both workers drained:\n${s.output()}`);
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
  test('a process-group SIGTERM while the workers are still starting: they start, drain and exit 0 (not killed)', async () => {
    // The limiter's Redis does not answer: each worker waits connectTimeoutMs (4 s) in its start.
    // The signal comes once both workers logged the refused connection, so they are in startGateway
    // (a worker signalled while it still loads its modules dies of it, harmlessly: it serves nothing).
    const silent = await freePort();
    const port = await freePort();
    const config = fileStoreConfig(
      generateApiKey('live'),
      `server: { port: ${port}, host: 127.0.0.1 }\nadmin: { enabled: false }\nrateLimit: { redisUrl: 'redis://127.0.0.1:${silent}' }\nroutes: [{ prefix: /notify/v1, target: '${upstream.url}' }]\n`,
      ', redis: { connectTimeoutMs: 4000 }',
    );
    const s = spawnServe(['--config', config, '--workers', '2'], {}, true);
    try {
      await eventually(
        async () => s.output().split('"msg":"rate-limit redis connection error"').length === 3,
        10_000,
        20,
      );
      assert.ok(!s.output().includes('"msg":"gateway listening"'), 'the signal must come during the start');
      process.kill(-s.proc.pid!, 'SIGTERM');
      const { code } = await s.exit;
      assert.equal(code, 0, s.output());
      const lines = jsonLines(s.output());
      assert.equal(lines.filter((l) => l.msg === 'gateway stopped').length, 2, s.output());
      assert.ok(
        !lines.some((l) => l.signal === 'SIGTERM' && l.msg === 'worker stopped'),
        'no worker killed by the signal',
      );
    } finally {
      try {
        process.kill(-s.proc.pid!, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  });
});

describe('readiness and probes (real redis-server)', () => {
  let upstream: RecordingUpstream;
  before(async () => {
    upstream = await startUpstream();
  });
  after(async () => upstream?.close());
  const auth = { Authorization: `Bearer ${ADMIN_TOKEN}` };

  test('ready: the public port says the status only, the admin port the checks (with the token)', async () => {
    const t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
    });
    try {
      const pub = await send(t.port, '/readyz');
      assert.equal(pub.status, 200);
      assert.deepEqual(pub.json, { status: 'ready' });
      const admin = await send(t.adminPort, '/readyz', { headers: auth });
      assert.equal(admin.status, 200);
      assert.deepEqual(admin.json, {
        status: 'ready',
        checks: { store: 'ok', rateLimiter: 'ok' },
        degraded: [],
      });
      // Probes cannot hold a secret: without the token the admin port answers like the public one.
      assert.deepEqual((await send(t.adminPort, '/readyz')).json, { status: 'ready' });
      assert.deepEqual((await send(t.adminPort, '/healthz')).json, { status: 'ok' });
      assert.equal((await send(t.adminPort, '/readyz', { method: 'HEAD' })).status, 200);
      // Everything else on the admin port still needs the token.
      assert.equal((await send(t.adminPort, '/admin/v1/companies')).status, 401);
    } finally {
      await t.close();
    }
  });

  test('starting: 503 until the store has been reached once', async () => {
    const port = await freePort();
    const t = await startTestGateway({
      store: {
        type: 'redis',
        redis: { url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 300, commandTimeoutMs: 200 },
      },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      log: { level: 'silent' },
    });
    let redis: TestRedis | null = null;
    try {
      assert.deepEqual((await send(t.port, '/readyz')).json, { status: 'starting' });
      const admin = await send(t.adminPort, '/readyz', { headers: auth });
      assert.equal(admin.status, 503);
      assert.deepEqual(admin.json, {
        status: 'starting',
        checks: { store: 'unavailable', rateLimiter: 'redis reconnecting' },
        degraded: ['store', 'rateLimiter'],
      });
      assert.equal((await send(t.port, '/healthz')).status, 200, 'liveness never depends on Redis');
      redis = await startRedis({ port });
      await eventually(async () => (await send(t.port, '/readyz')).status === 200, 5000, 100);
    } finally {
      await t.close();
      await redis?.stop();
    }
  });

  test('Redis paused: degraded (200) while cached keys are served; the admin port lists the degraded checks', async () => {
    const redis = await startRedis();
    const t = await startTestGateway({
      store: { type: 'redis', redis: { url: redis.url, commandTimeoutMs: 200 } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      log: { level: 'silent' },
    });
    try {
      const k = await createCompanyAndKey(t.gw.service, 'paused', { tier: 'free' });
      assert.equal((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } })).status, 200);
      redis.pause();
      const pub = await send(t.port, '/readyz');
      assert.equal(pub.status, 200);
      assert.deepEqual(pub.json, { status: 'degraded' });
      const admin = await send(t.adminPort, '/readyz', { headers: auth });
      assert.equal(admin.status, 200);
      const body = admin.json as { status: string; checks: Record<string, string>; degraded: string[] };
      assert.equal(body.status, 'degraded');
      assert.equal(body.checks.store, 'unavailable');
      assert.ok(body.degraded.includes('store'));
      assert.equal((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } })).status, 200);
      assert.equal((await send(t.port, '/healthz')).status, 200);
      redis.resume();
      await eventually(
        async () => ((await send(t.port, '/readyz')).json as { status: string }).status === 'ready',
        5000,
        100,
      );
    } finally {
      redis.resume();
      await t.close();
      await redis.stop();
    }
  });

  test('closed policy with its Redis down: not ready (503), liveness still 200', async () => {
    const redis = await startRedis();
    const t = await startTestGateway({
      store: { type: 'redis', redis: { url: redis.url, commandTimeoutMs: 200 } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      rateLimit: { failurePolicy: 'closed' },
      log: { level: 'silent' },
    });
    try {
      assert.equal((await send(t.port, '/readyz')).status, 200);
      await redis.kill();
      await eventually(async () => (await send(t.port, '/readyz')).status === 503, 5000, 50);
      assert.deepEqual((await send(t.port, '/readyz')).json, { status: 'not ready' });
      const admin = await send(t.adminPort, '/readyz', { headers: auth });
      assert.equal(admin.status, 503);
      assert.equal((admin.json as { status: string }).status, 'not ready');
      assert.equal((await send(t.port, '/healthz')).status, 200);
      assert.equal((await send(t.adminPort, '/healthz')).status, 200);
    } finally {
      await t.close();
      await redis.stop();
    }
  });

  test('draining: 503 from the start of close() while the request in flight completes', async () => {
    const slow = await startUpstream();
    slow.handle((_req, res) => setTimeout(() => res.end('{"slow":true}'), 800));
    const t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: slow.url }],
      server: { shutdownTimeoutMs: 5000 },
      log: { level: 'silent' },
    });
    try {
      const k = await createCompanyAndKey(t.gw.service, 'drain', { tier: 'free' });
      const inflight = send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } });
      await eventually(async () => slow.received.length === 1, 2000);
      const closing = t.close();
      const admin = await send(t.adminPort, '/readyz', { headers: auth });
      assert.equal(admin.status, 503);
      assert.equal((admin.json as { status: string }).status, 'draining');
      assert.equal((await inflight).status, 200);
      await closing;
    } finally {
      await t.close();
      await slow.close();
    }
  });
});

/** A self-signed certificate and key made by `openssl` now, with `cn` as subject. */
function selfSigned(dir: string, cn: string): { cert: string; key: string } {
  const cert = join(dir, `${cn}.crt`);
  const key = join(dir, `${cn}.key`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      `/CN=${cn}`,
    ],
    { stdio: 'ignore' },
  );
  return { cert, key };
}

/** The CN of the certificate a TLS listener presents to a new connection. */
function servedCn(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const cn = socket.getPeerCertificate().subject.CN;
      socket.end();
      resolve(Array.isArray(cn) ? cn.join(',') : (cn ?? ''));
    });
    socket.on('error', reject);
  });
}

/** Replaces a file the way a Secret update does: a new inode renamed over the old path. */
function swap(from: string, to: string): void {
  copyFileSync(from, `${to}.tmp`);
  renameSync(`${to}.tmp`, to);
}

describe('TLS on both listeners, reloaded without a restart', () => {
  test('a certificate swap is served by new connections on the gateway and admin ports; a mismatched pair is skipped', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ng-tls-'));
    const first = selfSigned(dir, 'first');
    const second = selfSigned(dir, 'second');
    const live = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    copyFileSync(first.cert, live.certFile);
    copyFileSync(first.key, live.keyFile);
    const t = await startTestGateway({
      server: { tls: live },
      admin: { tls: live },
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: 'http://127.0.0.1:9' }],
    });
    try {
      assert.equal(await servedCn(t.port), 'first');
      assert.equal(await servedCn(t.adminPort), 'first');
      // Key first, then certificate: in between the pair does not match and must not be applied.
      swap(second.key, live.keyFile);
      await eventually(
        async () =>
          t
            .logs()
            .some((l) => l.msg === 'TLS files changed but cannot be used; keeping the current certificate'),
        5000,
        100,
      );
      assert.equal(await servedCn(t.port), 'first', 'a mismatched pair keeps the last good certificate');
      swap(second.cert, live.certFile);
      await eventually(async () => (await servedCn(t.port)) === 'second', 5000, 100);
      await eventually(async () => (await servedCn(t.adminPort)) === 'second', 5000, 100);
      const reloaded = t.logs().filter((l) => l.msg === 'TLS certificate reloaded');
      assert.deepEqual(reloaded.map((l) => l.tls).sort(), ['admin.tls', 'server.tls']);
      // The same process and listeners: the HTTPS probe still answers.
      const r = await fetchInsecure(`https://127.0.0.1:${t.port}/healthz`);
      assert.equal(r, 200);
    } finally {
      await t.close();
    }
  });

  test('an admin API on a non-loopback address over plain HTTP with a token starts with a warning', async () => {
    const t = await startTestGateway({
      admin: { host: '0.0.0.0' },
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: 'http://127.0.0.1:9' }],
    });
    try {
      const warn = t.logs().find((l) => typeof l.msg === 'string' && l.msg.includes('over plain HTTP'));
      assert.equal(warn?.level, 'warn');
      assert.equal(warn?.host, '0.0.0.0');
    } finally {
      await t.close();
    }
  });

  test('an unreadable TLS file fails the start naming the config key', async () => {
    await assert.rejects(
      startTestGateway({
        admin: { tls: { certFile: '/nonexistent/tls.crt', keyFile: '/nonexistent/tls.key' } },
        store: { type: 'memory' },
      }),
      /admin\.tls\.certFile: \/nonexistent\/tls\.crt does not exist/,
    );
  });
});

/** Status of an HTTPS GET that accepts a self-signed certificate. */
function fetchInsecure(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpsGet(url, { rejectUnauthorized: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
  });
}
