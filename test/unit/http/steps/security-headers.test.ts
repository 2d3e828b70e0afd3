import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createSecurityHeaders, securityHeaderSet } from '../../../../src/http/steps/security-headers.js';
import { send } from '../../../helpers/http.js';
import { serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

describe('security headers step', () => {
  test("sets helmet's headers with a deny-all content security policy and goes on; no HSTS over HTTP", async () => {
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
    assert.equal(r.headers['strict-transport-security'], undefined, 'RFC 6797 §7.2: never over plain HTTP');
    assert.equal(r.headers['x-powered-by'], undefined);
  });

  test('HSTS over HTTPS only: X-Forwarded-Proto https counts from a trusted proxy, not from anyone', async () => {
    const trusted = await serveStep(createSecurityHeaders(), { state: { peerTrusted: true } });
    const untrusted = await serveStep(createSecurityHeaders(), { state: { peerTrusted: false } });
    servers.push(trusted, untrusted);
    const https = { 'X-Forwarded-Proto': 'https' };
    const a = await send(trusted.port, '/x', { headers: https });
    assert.match(String(a.headers['strict-transport-security']), /^max-age=\d+; includeSubDomains$/);
    const b = await send(trusted.port, '/x', { headers: { 'X-Forwarded-Proto': 'http' } });
    assert.equal(b.headers['strict-transport-security'], undefined);
    const c = await send(untrusted.port, '/x', { headers: https });
    assert.equal(c.headers['strict-transport-security'], undefined);
  });

  test('the same headers on every response, whatever the request', async () => {
    const srv = await serveStep(createSecurityHeaders());
    servers.push(srv);
    const a = await send(srv.port, '/a', { method: 'POST', body: 'x' });
    const b = await send(srv.port, '/b?q=1', { headers: { Origin: 'https://evil.example' } });
    for (const name of ['content-security-policy', 'x-content-type-options', 'referrer-policy'])
      assert.equal(a.headers[name], b.headers[name], name);
  });

  test('the set is computed once: common headers, HSTS apart, lowercase names of all', () => {
    const set = securityHeaderSet();
    assert.equal(securityHeaderSet(), set);
    assert.ok(Object.isFrozen(set) && Object.isFrozen(set.common) && Object.isFrozen(set.names));
    assert.equal(set.hsts?.[0].toLowerCase(), 'strict-transport-security');
    assert.ok(!set.common.some(([n]) => n.toLowerCase() === 'strict-transport-security'));
    assert.equal(set.names.length, set.common.length + 1);
    for (const name of ['content-security-policy', 'x-frame-options', 'strict-transport-security'])
      assert.ok(set.names.includes(name), name);
    assert.ok(set.names.every((n) => n === n.toLowerCase()));
  });
});
