import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, describe, test } from 'node:test';
import { createOwnEndpoints } from '../../../../src/http/steps/own-endpoints.js';
import { send } from '../../../helpers/http.js';
import { serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

async function start(
  ready: () => Promise<{ ok: boolean; status?: string; checks?: Record<string, string> }>,
) {
  const checked: string[] = [];
  const checkAndNoteKeyInUrl = (req: IncomingMessage) => {
    checked.push(req.url ?? '');
    return true;
  };
  const srv = await serveStep(createOwnEndpoints({ ready, checkAndNoteKeyInUrl }));
  servers.push(srv);
  return { srv, checked };
}

describe('own endpoints step', () => {
  test('GET and HEAD /healthz answer 200 without going on', async () => {
    const { srv, checked } = await start(async () => ({ ok: false, checks: {} }));
    const r = await send(srv.port, '/healthz');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { status: 'ok' });
    assert.equal((await send(srv.port, '/healthz', { method: 'HEAD' })).status, 200);
    assert.equal(srv.reached.length, 0);
    assert.deepEqual(checked, []);
  });

  test('/readyz answers 200 or 503 with the status only, never the check names', async () => {
    let r: { ok: boolean; status?: string } = { ok: true };
    const { srv } = await start(async () => ({ ...r, checks: { store: r.ok ? 'ok' : 'unavailable' } }));
    const up = await send(srv.port, '/readyz');
    assert.equal(up.status, 200);
    assert.deepEqual(up.json, { status: 'ready' });
    r = { ok: true, status: 'degraded' };
    const degraded = await send(srv.port, '/readyz');
    assert.equal(degraded.status, 200);
    assert.deepEqual(degraded.json, { status: 'degraded' });
    r = { ok: false };
    const down = await send(srv.port, '/readyz');
    assert.equal(down.status, 503);
    assert.deepEqual(down.json, { status: 'not ready' });
    r = { ok: false, status: 'draining' };
    assert.deepEqual((await send(srv.port, '/readyz')).json, { status: 'draining' });
    assert.equal(srv.reached.length, 0);
  });

  test('other paths and methods go on untouched', async () => {
    const { srv, checked } = await start(async () => ({ ok: true, checks: {} }));
    for (const [method, path] of [
      ['GET', '/notify/v1/x'],
      ['GET', '/healthzx'],
      ['GET', '/readyz/x'],
      ['GET', '/r'],
      ['POST', '/healthz'],
      ['DELETE', '/readyz'],
    ] as const) {
      const r = await send(srv.port, path, { method });
      assert.equal(r.status, 200, `${method} ${path}`);
      assert.deepEqual(r.json, { reached: true });
    }
    assert.deepEqual(
      srv.reached.map((r) => `${r.method} ${r.url}`),
      ['GET /notify/v1/x', 'GET /healthzx', 'GET /readyz/x', 'GET /r', 'POST /healthz', 'DELETE /readyz'],
    );
    assert.deepEqual(checked, []);
  });

  test('a probe with a query is still answered, and its URL is checked for a key', async () => {
    const { srv, checked } = await start(async () => ({ ok: true, checks: {} }));
    const r = await send(srv.port, '/healthz?api_key=abc');
    assert.equal(r.status, 200);
    assert.deepEqual(checked, ['/healthz?api_key=abc']);
  });

  test('a failing readiness check is passed on as an error', async () => {
    const { srv } = await start(async () => {
      throw new Error('store down');
    });
    const r = await send(srv.port, '/readyz');
    assert.equal(r.status, 500);
    assert.equal((srv.errors[0] as Error).message, 'store down');
  });

  test('invalid options throw when the step is built', () => {
    assert.throws(
      () => createOwnEndpoints({ ready: undefined as never, checkAndNoteKeyInUrl: () => false }),
      /ready must be a function/,
    );
  });
});
