import assert from 'node:assert/strict';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key.js';
import { ADMIN_TOKEN, startTestGateway } from '../helpers/gateway.js';
import { eventually, send } from '../helpers/http.js';
import { freePort, startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';
import { createCompanyAndKey } from '../helpers/admin.js';
import { runCli, startServe } from '../helpers/cli-run.js';

const TOKEN = 'ops-admin-token-0123456789abcdef';

function tmp(): string {
  return mkdtempSync(join(tmpdir(), 'ng-ops-'));
}

function exited(proc: ChildProcess): Promise<number | null> {
  if (proc.exitCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((r) => proc.once('exit', (code) => r(code)));
}

describe('operations', () => {
  let upstream: RecordingUpstream;
  let redis: TestRedis;
  before(async () => {
    upstream = await startUpstream();
    redis = await startRedis();
  });
  after(async () => {
    await upstream?.close();
    await redis?.stop();
  });

  test('SIGTERM drains: the in-flight request completes, new connections are refused, exit 0', async () => {
    const slow = await startUpstream();
    slow.handle((_req, res) => setTimeout(() => res.end('{"slow":true}'), 800));
    const dir = tmp();
    const key = generateApiKey('live');
    writeFileSync(
      join(dir, 'keys.yaml'),
      `companies:\n  - id: acme\n    tier: free\n    keys:\n      - id: k1\n        hash: ${hashApiKey(key)}\n`,
    );
    const port = await freePort();
    writeFileSync(
      join(dir, 'gateway.yaml'),
      `server: { port: ${port}, host: 127.0.0.1, shutdownTimeoutMs: 5000 }\nadmin: { enabled: false }\nroutes: [{ prefix: /notify/v1, target: '${slow.url}' }]\n`,
    );
    // The upstream is closed even when `serve` fails: an open server would keep this file's
    // process alive, turning a failure into a hang.
    const started = await startServe(['--config', join(dir, 'gateway.yaml')], {}, port).catch(async (err) => {
      await slow.close();
      throw err;
    });
    const { proc, output } = started;
    try {
      const inflight = send(port, '/notify/v1/x', { headers: { 'X-API-Key': key } });
      await eventually(async () => slow.received.length === 1, 2000);
      proc.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 150));
      await assert.rejects(
        send(port, '/healthz'),
        /ECONNREFUSED|ECONNRESET|socket hang up/,
        'no new connections while draining',
      );
      const r = await inflight;
      assert.equal(r.status, 200);
      assert.equal(r.body, '{"slow":true}');
      assert.equal(await exited(proc), 0);
      assert.match(output(), /"msg":"shutting down"/);
      assert.match(output(), /"msg":"gateway stopped"/);
    } finally {
      proc.kill('SIGKILL');
      await slow.close();
    }
  });

  test('serve --workers 2 on Redis: both workers answer, limits stay exact, /metrics sums the workers', async () => {
    const port = await freePort();
    const adminPort = await freePort();
    const env = {
      REDIS_URL: redis.url,
      PORT: String(port),
      ADMIN_PORT: String(adminPort),
      ADMIN_TOKEN: TOKEN,
      UPSTREAM_URL: upstream.url,
      LOG_LEVEL: 'warn',
    };
    assert.equal((await runCli(['companies', 'create', 'wk', '--tier', 'free'], env)).code, 0);
    const created = await runCli(['keys', 'create', 'wk', '--json'], env);
    assert.equal(created.code, 0, created.stderr);
    const k = JSON.parse(created.stdout) as { key: string };
    const { proc } = await startServe(['--workers', '2'], env, port);
    try {
      upstream.received.length = 0;
      const all = await Promise.all(
        Array.from({ length: 70 }, () => send(port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } })),
      );
      assert.equal(
        all.filter((r) => r.status === 200).length,
        60,
        'free tier: 60 a minute across both workers',
      );
      assert.equal(all.filter((r) => r.status === 429).length, 10);
      assert.equal(upstream.received.length, 60);
      // A worker counts a request when its response closes, a moment after the client has it, and
      // the primary gathers the workers' registries on each scrape: poll like a scraper would.
      // Labels are matched in any order (the aggregated text need not keep the workers' order).
      let m = '';
      const total = () =>
        m
          .split('\n')
          .filter((l) => l.startsWith('gateway_requests_total{') && l.includes('route="/notify/v1"'))
          .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      await eventually(
        async () => {
          m = await (
            await fetch(`http://127.0.0.1:${adminPort}/metrics`, {
              headers: { Authorization: `Bearer ${TOKEN}` },
            })
          ).text();
          return total() >= 70;
        },
        10_000,
        200,
      ).catch(() => undefined);
      assert.equal(total(), 70, 'the scrape counts the requests of every worker');
      // Process and Node metrics under their standard names, summed or combined by prom-client.
      assert.match(m, /^process_cpu_seconds_total \d/m);
      assert.match(m, /^nodejs_heap_size_used_bytes \d/m);
      assert.doesNotMatch(m, /gateway_process_|gateway_nodejs_/);
      // One build, whatever the number of workers; latency by route and status class.
      assert.match(m, /^gateway_build_info\{version="[^"]+",node_version="v[\d.]+",commit="[^"]+"\} 1$/m);
      assert.match(m, /gateway_request_duration_seconds_count\{[^}]*status_class="4xx"[^}]*\} 10$/m);
      proc.kill('SIGTERM');
      assert.equal(await exited(proc), 0);
    } finally {
      proc.kill('SIGKILL');
    }
  });

  test('TLS listener, and requireHttps honouring X-Forwarded-Proto only from trusted proxies', async () => {
    const dir = tmp();
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const t = await startTestGateway({
      server: { tls: { certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem') }, requireHttps: true },
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      log: { level: 'warn' },
    });
    try {
      const k = await createCompanyAndKey(t.gw.service, 'tls', { tier: 'free' });
      upstream.received.length = 0;
      const status = await new Promise<number>((resolve, reject) => {
        const req = httpsRequest(
          {
            host: '127.0.0.1',
            port: t.port,
            path: '/notify/v1/x',
            headers: { 'X-API-Key': k.key },
            rejectUnauthorized: false,
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end();
      });
      assert.equal(status, 200);
      assert.equal(upstream.received[0]?.headers['x-forwarded-proto'], 'https');
      // The expiry gauge says when the served certificate stops being valid.
      const notAfter = Date.parse(new X509Certificate(readFileSync(join(dir, 'cert.pem'))).validTo) / 1000;
      const metrics = await (
        await fetch(`http://127.0.0.1:${t.adminPort}/metrics`, {
          headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).text();
      assert.match(
        metrics,
        new RegExp(
          `^gateway_tls_certificate_expiry_timestamp_seconds\\{listener="server"\\} ${notAfter}$`,
          'm',
        ),
      );
    } finally {
      await t.close();
    }

    const behind = await startTestGateway({
      server: { requireHttps: true, trustedProxies: ['127.0.0.1'] },
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      log: { level: 'warn' },
    });
    const direct = await startTestGateway({
      server: { requireHttps: true, trustedProxies: ['10.0.0.0/8'] },
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      log: { level: 'warn' },
    });
    try {
      const kb = await createCompanyAndKey(behind.gw.service, 'p', { tier: 'free' });
      const kd = await createCompanyAndKey(direct.gw.service, 'p', { tier: 'free' });
      const plain = await send(behind.port, '/notify/v1/x', { headers: { 'X-API-Key': kb.key } });
      assert.equal(plain.status, 403);
      assert.deepEqual(plain.json, { error: 'Forbidden', details: 'HTTPS is required' });
      upstream.received.length = 0;
      const viaProxy = await send(behind.port, '/notify/v1/x', {
        headers: {
          'X-API-Key': kb.key,
          'X-Forwarded-Proto': 'https',
          'X-Forwarded-For': '203.0.113.7',
        },
      });
      assert.equal(viaProxy.status, 200);
      assert.equal(upstream.received[0]?.headers['x-forwarded-proto'], 'https');
      assert.equal(
        upstream.received[0]?.headers['x-forwarded-for'],
        '203.0.113.7, 127.0.0.1',
        'the chain from a trusted proxy is kept',
      );
      // The same header from a peer that is not a trusted proxy is not believed.
      const spoofed = await send(direct.port, '/notify/v1/x', {
        headers: { 'X-API-Key': kd.key, 'X-Forwarded-Proto': 'https' },
      });
      assert.equal(spoofed.status, 403);
    } finally {
      await behind.close();
      await direct.close();
    }
  });

  test('file store + rateLimit.redisUrl: sidecars share exact limits through a limiter-only Redis', async () => {
    const dir = tmp();
    const key = generateApiKey('live');
    writeFileSync(
      join(dir, 'keys.yaml'),
      `companies:\n  - id: side\n    tier: pod\n    keys:\n      - id: side-1\n        hash: ${hashApiKey(key)}\n`,
    );
    const cfg = {
      store: { type: 'file' as const, file: { path: join(dir, 'keys.yaml') } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      rateLimit: { tiers: [{ name: 'pod', points: 20, duration: 60 }], redisUrl: redis.url },
      log: { level: 'silent' as const },
    };
    const a = await startTestGateway(cfg);
    const b = await startTestGateway(cfg);
    try {
      upstream.received.length = 0;
      const all = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          send(i % 2 ? a.port : b.port, '/notify/v1/x', { headers: { 'X-API-Key': key } }),
        ),
      );
      assert.equal(all.filter((r) => r.status === 200).length, 20);
      assert.equal(all.filter((r) => r.status === 429).length, 20);
      assert.equal(upstream.received.length, 20);
      assert.deepEqual((await send(a.port, '/readyz')).json, { status: 'ready' });
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('readiness reports a Redis outage as degraded (still 200); liveness does not depend on Redis', async () => {
    const r = await startRedis();
    const t = await startTestGateway({
      store: { type: 'redis', redis: { url: r.url, commandTimeoutMs: 200 } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      log: { level: 'silent' },
    });
    try {
      assert.equal((await send(t.port, '/readyz')).status, 200);
      await r.kill();
      const ready = await send(t.port, '/readyz');
      assert.equal(ready.status, 200);
      assert.deepEqual(ready.json, { status: 'degraded' });
      assert.equal((await send(t.port, '/healthz')).status, 200);
      await r.restart();
      await eventually(
        async () => ((await send(t.port, '/readyz')).json as { status: string }).status === 'ready',
        5000,
        100,
      );
    } finally {
      await t.close();
      await r.stop();
    }
  });
});
