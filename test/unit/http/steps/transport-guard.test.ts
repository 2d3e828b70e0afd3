import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, describe, test } from 'node:test';
import { createTransportGuard } from '../../../../src/http/steps/transport-guard.js';
import type { RequestState } from '../../../../src/request-state.js';
import { send } from '../../../helpers/http.js';
import { serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

async function start(
  opts: { requireHttps?: boolean; refuseBrowserRequests?: boolean },
  state: Partial<RequestState> = {},
) {
  const checked: string[] = [];
  const checkAndNoteKeyInUrl = (req: IncomingMessage) => {
    checked.push(req.url ?? '');
    return false;
  };
  const step = createTransportGuard({
    requireHttps: opts.requireHttps ?? false,
    refuseBrowserRequests: opts.refuseBrowserRequests ?? false,
    checkAndNoteKeyInUrl,
  });
  const srv = await serveStep(step, { state });
  servers.push(srv);
  return { srv, checked };
}

describe('transport guard step', () => {
  test('an unsafe path is refused with 400, the connection closed and the URL checked for a key', async () => {
    const { srv, checked } = await start({});
    for (const path of ['/notify/v1/%2e%2e/admin', '/a//b', '/a/..;x/b', '/a\\b?api_key=1']) {
      const r = await send(srv.port, path);
      assert.equal(r.status, 400, path);
      assert.deepEqual(r.json, { error: 'Bad Request', details: 'Malformed request' });
      assert.equal(r.headers.connection, 'close');
      assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
    }
    assert.deepEqual(checked, ['/notify/v1/%2e%2e/admin', '/a//b', '/a/..;x/b', '/a\\b?api_key=1']);
    assert.equal(srv.reached.length, 0);
    assert.deepEqual(
      srv.finished.map((s) => s?.error),
      ['BAD_REQUEST', 'BAD_REQUEST', 'BAD_REQUEST', 'BAD_REQUEST'],
    );
  });

  test('a safe path goes on, query and all', async () => {
    const { srv, checked } = await start({ requireHttps: false, refuseBrowserRequests: false });
    const r = await send(srv.port, '/notify/v1/x?a=1', { headers: { Origin: 'https://app.example' } });
    assert.equal(r.status, 200);
    assert.equal(srv.reached[0]!.url, '/notify/v1/x?a=1');
    assert.deepEqual(checked, []);
  });

  test('requireHttps: plain HTTP is refused with 403; a trusted proxy may vouch with X-Forwarded-Proto', async () => {
    const untrusted = (await start({ requireHttps: true })).srv;
    const plain = await send(untrusted.port, '/a');
    assert.equal(plain.status, 403);
    assert.deepEqual(plain.json, { error: 'Forbidden', details: 'HTTPS is required' });
    const claimed = await send(untrusted.port, '/a', { headers: { 'X-Forwarded-Proto': 'https' } });
    assert.equal(claimed.status, 403, 'an untrusted peer cannot claim HTTPS');
    assert.equal(untrusted.reached.length, 0);

    const trusted = (await start({ requireHttps: true }, { peerTrusted: true })).srv;
    // The entry the trusted hop appended, the last, decides; a client's claim before it does not.
    const vouched = await send(trusted.port, '/a', { headers: { 'X-Forwarded-Proto': 'http, HTTPS' } });
    assert.equal(vouched.status, 200);
    assert.equal((await send(trusted.port, '/a', { headers: { 'X-Forwarded-Proto': 'http' } })).status, 403);
    const claimed2 = await send(trusted.port, '/a', { headers: { 'X-Forwarded-Proto': 'https, http' } });
    assert.equal(claimed2.status, 403, 'a client-claimed https before the hop’s http');
    assert.equal(trusted.reached.length, 1);
  });

  test('refuseBrowserRequests: Origin or Sec-Fetch-Mode: cors → 403; other fetch modes go on', async () => {
    const { srv } = await start({ refuseBrowserRequests: true });
    for (const headers of [{ Origin: 'null' }, { 'Sec-Fetch-Mode': 'CORS' }] as Record<string, string>[]) {
      const r = await send(srv.port, '/a', { headers });
      assert.equal(r.status, 403, JSON.stringify(headers));
      assert.deepEqual(r.json, {
        error: 'Forbidden',
        details: 'API keys are for server-side use only; browser requests are refused',
      });
    }
    assert.equal((await send(srv.port, '/a', { headers: { 'Sec-Fetch-Mode': 'navigate' } })).status, 200);
    assert.equal(srv.reached.length, 1);
    assert.deepEqual(
      srv.finished.map((s) => s?.error),
      ['BROWSER_REQUEST', 'BROWSER_REQUEST', undefined],
    );
  });

  test('a refusal closes the connection when a body may still come', async () => {
    const { srv } = await start({ requireHttps: true });
    const r = await send(srv.port, '/a', { method: 'POST', headers: { 'Content-Length': '5' }, body: '' });
    assert.equal(r.status, 403);
    assert.equal(r.headers.connection, 'close');
  });

  test('invalid options throw when the step is built', () => {
    const check = () => false;
    assert.throws(
      () =>
        createTransportGuard({
          requireHttps: 'yes' as never,
          refuseBrowserRequests: false,
          checkAndNoteKeyInUrl: check,
        }),
      /requireHttps must be a boolean/,
    );
    assert.throws(
      () =>
        createTransportGuard({
          requireHttps: false,
          refuseBrowserRequests: false,
          checkAndNoteKeyInUrl: null as never,
        }),
      /checkAndNoteKeyInUrl must be a function/,
    );
  });
});
