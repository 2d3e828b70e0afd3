import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createSecurityHeaders } from '../../../../src/http/steps/security-headers.js';
import { send } from '../../../helpers/http.js';
import { serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

describe('security headers step', () => {
  test("sets helmet's headers with a deny-all content security policy and goes on", async () => {
    const srv = await serveStep(createSecurityHeaders());
    servers.push(srv);
    const r = await send(srv.port, '/notify/v1/x');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { reached: true });
    assert.equal(srv.reached.length, 1);
    const csp = String(r.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.equal(r.headers['x-frame-options'], 'SAMEORIGIN');
    assert.match(String(r.headers['strict-transport-security']), /max-age=\d+/);
    assert.equal(r.headers['x-powered-by'], undefined);
  });

  test('the same headers on every response, whatever the request', async () => {
    const srv = await serveStep(createSecurityHeaders());
    servers.push(srv);
    const a = await send(srv.port, '/a', { method: 'POST', body: 'x' });
    const b = await send(srv.port, '/b?q=1', { headers: { Origin: 'https://evil.example' } });
    for (const name of [
      'content-security-policy',
      'x-content-type-options',
      'strict-transport-security',
      'referrer-policy',
    ])
      assert.equal(a.headers[name], b.headers[name], name);
  });
});
