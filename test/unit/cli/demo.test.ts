import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runCliHere } from '../../helpers/cli-run.js';
import { eventually, send } from '../../helpers/http.js';
import { freePort } from '../../helpers/redis.js';

describe('demo', () => {
  test('PORT or ADMIN_PORT that is not a port: exit 2, nothing started', async () => {
    for (const env of [{ PORT: '99999' }, { ADMIN_PORT: 'eighty' }] as Record<string, string>[]) {
      const r = await runCliHere(['demo'], env);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /^notify-gateway: invalid port: /);
      assert.equal(r.stdout, '');
    }
  });

  test('runs on the given ports, prints its instructions, stops on SIGINT with exit 0', async () => {
    const r = await runCliHere(['demo'], { PORT: '0', ADMIN_PORT: '0', LOG_LEVEL: 'silent' });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Press Ctrl\+C/);
    const gateway = /gateway\s+http:\/\/127\.0\.0\.1:(\d+)/.exec(r.stdout);
    assert.ok(gateway, r.stdout);
    assert.equal((await send(Number(gateway[1]), '/healthz')).status, 200);
    r.signals.emit('SIGINT');
    await eventually(async () => r.exits.length > 0, 10_000);
    assert.deepEqual(r.exits, [0]);
  });
});

describe('example-backend', () => {
  test('a port that is not one: exit 2', async () => {
    const r = await runCliHere(['example-backend', '--port', '70000']);
    assert.equal(r.code, 2);
    assert.equal(r.stderr, 'notify-gateway: invalid port: 70000\n');
  });

  test('listens, answers its health route, stops on SIGTERM with exit 0', async () => {
    const port = await freePort();
    const r = await runCliHere(['example-backend', '--port', String(port), '--host', '127.0.0.1']);
    assert.equal(r.code, 0);
    await eventually(async () => r.output().stdout.includes('listening'), 5000);
    assert.equal(r.output().stdout, `example backend listening on 127.0.0.1:${port}\n`);
    const health = await send(port, '/notify/v1/health', { headers: { 'X-Company-Id': 'acme' } });
    assert.equal(health.status, 200);
    assert.equal((health.json as { company_id: string }).company_id, 'acme');
    r.signals.emit('SIGTERM');
    await eventually(async () => r.exits.length > 0, 5000);
    assert.deepEqual(r.exits, [0]);
  });

  test('a port in use: the listen error, exit 1, through io.exit (the command had already returned)', async () => {
    const port = await freePort();
    const first = await runCliHere(['example-backend', '--port', String(port), '--host', '127.0.0.1']);
    await eventually(async () => first.output().stdout.includes('listening'), 5000);
    try {
      const second = await runCliHere(['example-backend', '--port', String(port), '--host', '127.0.0.1']);
      await eventually(async () => second.exits.length > 0, 5000);
      assert.deepEqual(second.exits, [1]);
      assert.match(second.output().stderr, /^notify-gateway: listen EADDRINUSE/);
    } finally {
      first.signals.emit('SIGTERM');
      await eventually(async () => first.exits.length > 0, 5000);
    }
  });
});
