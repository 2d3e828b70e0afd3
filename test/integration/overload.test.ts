import assert from 'node:assert/strict';
import { request, type ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createCompanyAndKey } from '../helpers/admin.js';
import { ADMIN_TOKEN, gatewayWithUpstream, type GatewayWithUpstream } from '../helpers/gateway.js';
import { eventually, send } from '../helpers/http.js';

/**
 * Graceful overload (docs/operations.md, "Overload"): past `overload.maxInFlight` requests in
 * flight, a new request is answered 503 OVERLOADED with Retry-After before its key is looked up,
 * and never reaches the upstream; probes are still answered; a company refused with 429 holds no
 * slot and reaches neither the upstream nor another company's held requests.
 */
describe('overload: bounded requests in flight', () => {
  let g: GatewayWithUpstream;
  let keyA: string;
  let keyB: string;
  /** Upstream answers held back (company b's requests wait here until released). */
  const held: ServerResponse[] = [];

  before(async () => {
    g = await gatewayWithUpstream(
      {
        overload: { maxInFlight: 2, retryAfterSeconds: 7 },
        rateLimit: {
          tiers: [
            { name: 'tiny', points: 1, duration: 3600 },
            { name: 'big', points: 1_000_000, duration: 3600 },
          ],
        },
      },
      { company: 'a', tier: 'tiny' },
    );
    keyA = g.key;
    keyB = (await createCompanyAndKey(g.t.gw.service, 'b', { tier: 'big' })).key;
    g.upstream.handle((req, res) => {
      if (req.headers['x-company-id'] === 'b') held.push(res);
      else res.end('{"ok":true}');
    });
  });
  after(() => g?.close());

  /** A keyed request whose answer may be held; resolves with its status once answered. */
  function sendHeld(key: string): Promise<number> {
    return new Promise((resolve) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: g.t.port,
          path: '/notify/v1/send',
          agent: false,
          headers: { 'x-api-key': key },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', () => resolve(0));
      req.end();
    });
  }

  /** The sum of every series of the metric lines matching `line` (its value in group 1). */
  async function metric(line: RegExp): Promise<number> {
    const text = await (
      await fetch(`http://127.0.0.1:${g.t.adminPort}/metrics`, {
        headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
      })
    ).text();
    return [...text.matchAll(new RegExp(line, 'gm'))].reduce((a, m) => a + Number(m[1]), 0);
  }
  const AUTH_FAILURES = /^gateway_auth_failures_total\{[^}]*\} (\d+)/;

  test('past maxInFlight: 503 OVERLOADED + Retry-After, never forwarded nor authenticated; probes still answered', async () => {
    const first = sendHeld(keyB);
    const second = sendHeld(keyB);
    await eventually(async () => held.length === 2, 10_000);
    const receivedBefore = g.upstream.received.length;

    const refused = await send(g.t.port, '/notify/v1/send', { headers: { 'x-api-key': keyB } });
    assert.equal(refused.status, 503);
    assert.equal(refused.headers['retry-after'], '7');
    assert.equal(refused.headers['content-type'], 'application/json; charset=utf-8');
    assert.deepEqual(refused.json, {
      error: 'Service Unavailable',
      details: 'The gateway is at capacity; retry after the delay in Retry-After',
    });
    // An unknown key is refused the same way, before authentication: no failure counted for it.
    const failuresBefore = await metric(AUTH_FAILURES);
    const unknown = await send(g.t.port, '/notify/v1/send', { headers: { 'x-api-key': 'nk_live_nope' } });
    assert.equal(unknown.status, 503);
    assert.equal(await metric(AUTH_FAILURES), failuresBefore);
    assert.equal(
      g.upstream.received.length,
      receivedBefore,
      'the refused requests never reached the upstream',
    );

    // Probes are answered while the gateway is full.
    assert.equal((await send(g.t.port, '/healthz')).status, 200);
    assert.equal((await send(g.t.port, '/readyz')).status, 200);

    assert.equal(await metric(/gateway_overload_refused_total\{reason="in_flight"\} (\d+)/), 2);
    const line = g.t.logs().find((l) => l.error === 'OVERLOADED');
    assert.equal(line?.status, 503);
    assert.equal(line?.denyReason, 'in_flight');
    assert.ok(!g.t.logText().includes(keyB), 'the key is never logged');

    for (const res of held.splice(0)) res.end('{"ok":true}');
    assert.equal(await first, 200);
    assert.equal(await second, 200);
    // The slots are free again; the same unknown key now reaches authentication and is counted.
    assert.equal((await send(g.t.port, '/notify/v1/send', { headers: { 'x-api-key': keyA } })).status, 200);
    const late = await send(g.t.port, '/notify/v1/send', { headers: { 'x-api-key': 'nk_live_nope' } });
    assert.equal(late.status, 401);
    assert.equal(await metric(AUTH_FAILURES), failuresBefore + 1);
  });

  test("a company refused with 429 holds no slot and never waits behind another company's requests", async () => {
    // Company a used its one point in the test above. Company b holds one of the two slots.
    const waiting = sendHeld(keyB);
    await eventually(async () => held.length === 1, 10_000);
    const receivedBefore = g.upstream.received.length;
    for (let i = 0; i < 20; i++) {
      const r = await send(g.t.port, '/notify/v1/send', { headers: { 'x-api-key': keyA } });
      assert.equal(r.status, 429, `request ${i}`);
    }
    assert.equal(g.upstream.received.length, receivedBefore, 'no 429 reached the upstream');
    // After 20 refusals the second slot is still free for company b.
    const another = sendHeld(keyB);
    await eventually(async () => held.length === 2, 10_000);
    for (const res of held.splice(0)) res.end('{"ok":true}');
    assert.equal(await waiting, 200);
    assert.equal(await another, 200);
    assert.equal(await metric(/gateway_overload_refused_total\{reason="in_flight"\} (\d+)/), 2);
  });
});
