import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { allowsRequest, createScopeCheck } from '../../../../src/http/steps/scope-check.js';
import { createMetrics } from '../../../../src/observability/metrics.js';
import type { RequestState } from '../../../../src/request-state.js';
import { send } from '../../../helpers/http.js';
import {
  serveStep,
  seriesValue,
  testCompany,
  testKey,
  type StepServer,
} from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

async function start(state: Partial<RequestState>) {
  const metrics = createMetrics({ processMetrics: false });
  const srv = await serveStep(createScopeCheck({ metrics }), { state: { route: '/notify/v1', ...state } });
  servers.push(srv);
  return { srv, metrics };
}

describe('allowsRequest', () => {
  const scopes = [
    { route: '/notify/v1', methods: ['POST', 'GET'], paths: ['/notify/v1/otps'] },
    { route: '/media' },
  ];
  test('null allows everything; an empty list nothing', () => {
    assert.equal(allowsRequest(null, '/x', 'DELETE', '/x/y'), true);
    assert.equal(allowsRequest([], '/notify/v1', 'GET', '/notify/v1'), false);
  });
  test('route, method (GET implies HEAD) and path prefix on a segment boundary', () => {
    assert.equal(allowsRequest(scopes, '/notify/v1', 'POST', '/notify/v1/otps'), true);
    assert.equal(allowsRequest(scopes, '/notify/v1', 'HEAD', '/notify/v1/otps/1'), true);
    assert.equal(allowsRequest(scopes, '/notify/v1', 'POST', '/notify/v1/otps;v=2'), true);
    assert.equal(allowsRequest(scopes, '/notify/v1', 'DELETE', '/notify/v1/otps'), false);
    assert.equal(allowsRequest(scopes, '/notify/v1', 'POST', '/notify/v1/otpsx'), false);
    assert.equal(
      allowsRequest(scopes, '/notify/v1', 'POST', '/notify/v1/%6ftps'),
      false,
      'encoded: fails closed',
    );
    assert.equal(allowsRequest(scopes, '/media', 'PUT', '/media/a'), true);
    assert.equal(allowsRequest(scopes, '/other', 'GET', '/other'), false);
  });
});

describe('scope check step', () => {
  test('no scopes: the request goes on', async () => {
    const { srv } = await start({ company: testCompany(), key: testKey() });
    assert.equal((await send(srv.port, '/notify/v1/x')).status, 200);
  });

  test("outside the company's scope: 403 SCOPE_DENIED, counted with reason company", async () => {
    const { srv, metrics } = await start({
      company: testCompany({ scopes: [{ route: '/media' }] }),
      key: testKey(),
    });
    const r = await send(srv.port, '/notify/v1/x');
    assert.equal(r.status, 403);
    assert.deepEqual(r.json, { error: 'Forbidden', details: 'This API key may not call this route' });
    assert.equal(srv.reached.length, 0);
    assert.equal(srv.finished[0]?.error, 'SCOPE_DENIED');
    assert.equal(await seriesValue(metrics.scopeDenied, { route: '/notify/v1', reason: 'company' }), 1);
  });

  test("a key never widens its company: both must allow; the key's refusal is counted as key", async () => {
    const company = testCompany({ scopes: [{ route: '/notify/v1', methods: ['GET'] }] });
    const wide = await start({ company, key: testKey({ scopes: [{ route: '/notify/v1' }] }) });
    assert.equal((await send(wide.srv.port, '/notify/v1/x', { method: 'POST', body: '' })).status, 403);
    assert.equal(await seriesValue(wide.metrics.scopeDenied, { route: '/notify/v1', reason: 'company' }), 1);
    const narrow = await start({
      company: testCompany({ scopes: null }),
      key: testKey({ scopes: [{ route: '/notify/v1', paths: ['/notify/v1/otps'] }] }),
    });
    assert.equal((await send(narrow.srv.port, '/notify/v1/otps/1')).status, 200);
    assert.equal((await send(narrow.srv.port, '/notify/v1/sms')).status, 403);
    assert.equal(await seriesValue(narrow.metrics.scopeDenied, { route: '/notify/v1', reason: 'key' }), 1);
  });

  test('invalid options throw when the step is built', () => {
    assert.throws(
      () => createScopeCheck({ metrics: {} as never }),
      /metrics.scopeDenied.inc must be a function/,
    );
  });
});
