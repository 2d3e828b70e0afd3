import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { createServer, type Server } from 'node:net';
import { describe, test } from 'node:test';
import { eventually, send } from '../../helpers/http.js';
import { runCliHere, writeFileStoreSetup } from '../../helpers/cli-run.js';
import { freePort } from '../../helpers/redis.js';

// `serve` in process: its refusals, and its signal handling through the injected emitter.

const QUIET = { LOG_LEVEL: 'silent' };

describe('serve refuses what cannot run (exit 2, nothing started)', () => {
  test('an invalid config', async () => {
    const s = writeFileStoreSetup('server: { port: x }\n');
    const r = await runCliHere(['serve', '--config', s.config], QUIET);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^notify-gateway: invalid configuration/);
  });

  test('--workers 2 without rate limits shared between processes', async () => {
    const s = writeFileStoreSetup();
    const r = await runCliHere(['serve', '--workers', '2', '--config', s.config], QUIET);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /--workers 2 needs rate limits shared between processes: .*with the file store and no rateLimit\.redisUrl every worker would count rate limits on its own/,
    );
  });

  test('--workers 0', async () => {
    const r = await runCliHere(['serve', '--workers', '0'], QUIET);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /argument '0' is invalid\. must be a positive whole number/);
  });
});

describe('serve runs until a signal', () => {
  test('up on its port, then SIGTERM drains it and exits 0', async () => {
    const port = await freePort();
    const s = writeFileStoreSetup(`server: { port: ${port}, host: 127.0.0.1 }\nadmin: { enabled: false }\n`);
    const r = await runCliHere(['serve', '--config', s.config], QUIET);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await send(port, '/healthz')).status, 200);
    assert.deepEqual(r.exits, []);
    r.signals.emit('SIGTERM');
    await eventually(async () => r.exits.length > 0, 10_000);
    assert.deepEqual(r.exits, [0]);
    await assert.rejects(send(port, '/healthz'), /ECONNREFUSED/);
    // A second signal (a process group's, and its primary's) does not close twice.
    r.signals.emit('SIGINT');
    assert.deepEqual(r.exits, [0]);
  });

  test('a signal while it starts stops it once it has started', async () => {
    const port = await freePort();
    const s = writeFileStoreSetup(`server: { port: ${port}, host: 127.0.0.1 }\nadmin: { enabled: false }\n`);
    const signals = new EventEmitter();
    let started = false;
    // SIGTERM arrives as soon as serve listens for it, long before the gateway listens on its port.
    signals.on('newListener', (event) => {
      if (event === 'SIGTERM')
        queueMicrotask(() => {
          assert.equal(started, false);
          signals.emit('SIGTERM');
        });
    });
    const running = runCliHere(['serve', '--config', s.config], QUIET, { signals });
    void running.then(() => (started = true));
    const r = await running;
    assert.equal(r.code, 0, r.stderr);
    await eventually(async () => r.exits.length > 0, 10_000);
    assert.deepEqual(r.exits, [0]);
    await assert.rejects(send(port, '/healthz'), /ECONNREFUSED/);
  });

  test('a port in use: exit 1 with the listen error', async () => {
    const busy: Server = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    try {
      const port = (busy.address() as { port: number }).port;
      const s = writeFileStoreSetup(
        `server: { port: ${port}, host: 127.0.0.1 }\nadmin: { enabled: false }\n`,
      );
      const r = await runCliHere(['serve', '--config', s.config], QUIET);
      assert.equal(r.code, 1);
      assert.match(r.stderr, /^notify-gateway: listen EADDRINUSE/);
    } finally {
      busy.close();
    }
  });
});
