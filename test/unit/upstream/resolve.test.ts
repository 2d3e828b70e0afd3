import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { probeHttp } from '../../../src/upstream/health-check.js';
import { UpstreamPool } from '../../../src/upstream/pool.js';
import { expandTargets, startResolving } from '../../../src/upstream/resolve.js';

const outlier = { consecutiveFailures: 5, baseEjectionMs: 1000, maxEjectionMs: 1000, maxEjectedPercent: 50 };

describe('hostname targets', () => {
  test('expandTargets: one target per address, same port, path and weight; Host stays the name', () => {
    const configured = [
      { url: 'http://svc.ns:9090/base', weight: 2 },
      { url: 'http://10.0.0.9:9090', weight: 1 },
    ];
    const out = expandTargets(configured, new Map([['http://svc.ns:9090/base', ['10.1.0.1', 'fd00::2']]]));
    assert.deepEqual(out, [
      { url: 'http://10.1.0.1:9090/base', weight: 2, host: 'svc.ns:9090' },
      { url: 'http://[fd00::2]:9090/base', weight: 2, host: 'svc.ns:9090' },
      { url: 'http://10.0.0.9:9090', weight: 1 },
    ]);
  });

  test('a name whose address set changes is followed without restart; a failed lookup keeps the last set', async () => {
    const hosts: string[] = [];
    const listen = (server: Server, address: string, port: number) =>
      new Promise<number>((r) =>
        server.listen(port, address, () => r((server.address() as AddressInfo).port)),
      );
    const handler = (name: string) =>
      createServer((req, res) => {
        hosts.push(`${name} ${req.headers.host}`);
        res.end();
      });
    const a = handler('a');
    const b = handler('b');
    const port = await listen(a, '127.0.0.1', 0);
    await listen(b, '127.0.0.2', port);
    let answer: string[] | Error = ['127.0.0.1'];
    const pool = new UpstreamPool({
      targets: [{ url: `http://svc.test:${port}`, weight: 1 }],
      balancing: 'round-robin',
      outlier,
      whenNoneHealthy: 'panic',
    });
    const lookups: string[] = [];
    const stop = startResolving(pool, [{ url: `http://svc.test:${port}`, weight: 1 }], {
      intervalMs: 10,
      lookup: (name) => {
        lookups.push(name);
        return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
      },
    });
    const ids = () => pool.targets.map((t) => t.url.hostname).join(',');
    while (ids() !== '127.0.0.1') await new Promise((r) => setTimeout(r, 5));
    answer = ['127.0.0.2', '127.0.0.1'];
    while (ids() !== '127.0.0.1,127.0.0.2') await new Promise((r) => setTimeout(r, 5));
    answer = ['127.0.0.2'];
    while (ids() !== '127.0.0.2') await new Promise((r) => setTimeout(r, 5));
    answer = new Error('ENOTFOUND');
    const seen = lookups.length;
    while (lookups.length < seen + 3) await new Promise((r) => setTimeout(r, 5));
    assert.equal(ids(), '127.0.0.2', 'kept');
    const check = { path: '/', intervalMs: 1000, timeoutMs: 500, expectedStatuses: [200] };
    assert.equal(await probeHttp(pool.targets[0]!, check), true);
    assert.deepEqual(hosts, [`b svc.test:${port}`]);
    stop();
    for (const s of [a, b]) await new Promise((r) => s.close(r));
  });
});
