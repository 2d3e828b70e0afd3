import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { probeHttp, startHealthChecks } from '../../../src/upstream/health-check.js';
import { UpstreamPool } from '../../../src/upstream/pool.js';

const outlier = { consecutiveFailures: 5, baseEjectionMs: 1000, maxEjectionMs: 1000, maxEjectedPercent: 100 };
const check = { path: '/healthz', intervalMs: 10, timeoutMs: 200, expectedStatuses: [200] };

describe('active health checks', () => {
  test('thresholds from probe results: unhealthy after N failures, healthy after M passes', async () => {
    const pool = new UpstreamPool({
      targets: [{ url: 'http://a:1', weight: 1 }],
      balancing: 'round-robin',
      outlier,
      whenNoneHealthy: 'refuse',
      healthyThreshold: 2,
      unhealthyThreshold: 2,
    });
    let passing = false;
    let probes = 0;
    const stop = startHealthChecks(pool, check, () => {
      probes++;
      return Promise.resolve(passing);
    });
    while (pool.healthyCount() !== 0) await new Promise((r) => setTimeout(r, 5));
    passing = true;
    while (pool.healthyCount() !== 1) await new Promise((r) => setTimeout(r, 5));
    stop();
    const after = probes;
    await new Promise((r) => setTimeout(r, 30));
    assert.ok(probes <= after + 1, 'stopped');
  });

  test('probeHttp: an expected status passes; another status, no answer in time or no server fails', async () => {
    let status = 200;
    let hang = false;
    const server = createServer((req, res) => {
      assert.equal(req.url, '/healthz');
      if (!hang) res.writeHead(status).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const pool = new UpstreamPool({
      targets: [{ url: `http://127.0.0.1:${port}/base`, weight: 1 }],
      balancing: 'round-robin',
      outlier,
      whenNoneHealthy: 'panic',
    });
    const t = pool.targets[0]!;
    assert.equal(await probeHttp(t, check), true);
    status = 503;
    assert.equal(await probeHttp(t, check), false);
    hang = true;
    assert.equal(await probeHttp(t, { ...check, timeoutMs: 50 }), false);
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    assert.equal(await probeHttp(t, check), false);
  });
});
