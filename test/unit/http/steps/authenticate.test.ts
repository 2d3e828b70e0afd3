import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { Verification } from '../../../../src/auth/verify.js';
import { GatewayError } from '../../../../src/errors.js';
import { createAuthenticate } from '../../../../src/http/steps/authenticate.js';
import { createMetrics } from '../../../../src/observability/metrics.js';
import { AuthFailureLimiter } from '../../../../src/ratelimit/tier-limiter.js';
import type { KeyRecord } from '../../../../src/store/types.js';
import { eventually, send } from '../../../helpers/http.js';
import {
  serveStep,
  seriesValue,
  testCompany,
  testKey,
  type StepServer,
} from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

/** A verifier answering a fixed result per presented key (the real verifier has its own tests). */
function fixedVerifier(answers: Record<string, Verification | Error>) {
  const seen: unknown[] = [];
  return {
    seen,
    /** While set, every lookup waits for it (lookups in flight). */
    gate: null as Promise<void> | null,
    async verify(header: unknown): Promise<Verification> {
      seen.push(header);
      if (this.gate) await this.gate;
      const a = answers[String(header)];
      if (a === undefined) return { ok: false, code: 'MISSING_KEY', reason: 'missing' };
      if (a instanceof Error) throw a;
      return a;
    },
  };
}

const GOOD: Verification = { ok: true, key: testKey(), company: testCompany() };
const UNKNOWN: Verification = { ok: false, code: 'INVALID_KEY', reason: 'unknown' };
const EXPIRED: Verification = {
  ok: false,
  code: 'INVALID_KEY',
  reason: 'expired',
  key: testKey({ id: 'key_old' }),
};
const INACTIVE: Verification = { ok: false, code: 'COMPANY_INACTIVE', reason: 'company_inactive' };

async function start(authFailures: AuthFailureLimiter | null) {
  const verifier = fixedVerifier({
    good: GOOD,
    unknown: UNKNOWN,
    expired: EXPIRED,
    inactive: INACTIVE,
    down: new GatewayError('STORE_UNAVAILABLE'),
  });
  const metrics = createMetrics({ processMetrics: false });
  const expired: KeyRecord[] = [];
  const step = createAuthenticate({
    verifier,
    authFailures,
    failureCounter: metrics.authFailures,
    onKeyExpired: (k) => expired.push(k),
  });
  const srv = await serveStep(step);
  servers.push(srv);
  return { srv, verifier, metrics, expired };
}

describe('authenticate step', () => {
  test('a valid key: key and company go on in the request state, the header untouched', async () => {
    const { srv, verifier } = await start(null);
    const r = await send(srv.port, '/notify/v1/x', { headers: { 'X-API-Key': 'good' } });
    assert.equal(r.status, 200);
    assert.deepEqual(verifier.seen, ['good']);
    const gw = srv.reached[0]!.gw!;
    assert.equal(gw.key?.id, 'key_test1');
    assert.equal(gw.company?.id, 'acme');
    assert.equal(srv.reached[0]!.headers['x-api-key'], 'good', 'the forward step strips it, not this one');
  });

  test('missing and invalid keys: 401 with the one body, counted by reason', async () => {
    const { srv, metrics } = await start(null);
    const missing = await send(srv.port, '/a');
    assert.equal(missing.status, 401);
    assert.deepEqual(missing.json, { error: 'Unauthorized', details: 'Missing API key' });
    const unknown = await send(srv.port, '/a', { headers: { 'X-API-Key': 'unknown' } });
    const expired = await send(srv.port, '/a', { headers: { 'X-API-Key': 'expired' } });
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body, expired.body);
    assert.deepEqual(unknown.json, { error: 'Unauthorized', details: 'Invalid API key' });
    assert.equal(srv.reached.length, 0);
    assert.deepEqual(
      srv.finished.map((s) => [s?.error, s?.denyReason]),
      [
        ['MISSING_KEY', 'missing'],
        ['INVALID_KEY', 'unknown'],
        ['INVALID_KEY', 'expired'],
      ],
    );
    assert.equal(await seriesValue(metrics.authFailures, { reason: 'unknown' }), 1);
    assert.equal(await seriesValue(metrics.authFailures, { reason: 'missing' }), 1);
  });

  test('an expired key is reported for the audit trail', async () => {
    const { srv, expired } = await start(null);
    await send(srv.port, '/a', { headers: { 'X-API-Key': 'expired' } });
    assert.deepEqual(
      expired.map((k) => k.id),
      ['key_old'],
    );
  });

  test('a company denial answers 403 and does not use the address budget', async () => {
    const limiter = new AuthFailureLimiter({ points: 1, duration: 60 });
    const { srv } = await start(limiter);
    for (let i = 0; i < 3; i++) {
      const r = await send(srv.port, '/a', { headers: { 'X-API-Key': 'inactive' } });
      assert.equal(r.status, 403);
      assert.deepEqual(r.json, { error: 'Forbidden', details: 'Company is not active' });
    }
    assert.equal(limiter.blockedFor('127.0.0.1'), 0);
    assert.equal(limiter.tryRecordFailure('127.0.0.1'), 0, 'the one failure is still free');
  });

  test('lookups in flight: a concurrent burst of bad keys gets exactly the budget of 401s, the rest 429', async () => {
    const limiter = new AuthFailureLimiter({ points: 3, duration: 60 });
    const { srv, verifier } = await start(limiter);
    let open!: () => void;
    verifier.gate = new Promise((r) => (open = r));
    const burst = Promise.all(
      Array.from({ length: 10 }, () => send(srv.port, '/a', { headers: { 'X-API-Key': 'unknown' } })),
    );
    // All ten passed the check before their lookup: the budget is still untouched.
    await eventually(async () => verifier.seen.length === 10, 5000);
    open();
    const answers = await burst;
    assert.deepEqual(answers.map((a) => a.status).sort(), [401, 401, 401, 429, 429, 429, 429, 429, 429, 429]);
    for (const a of answers.filter((x) => x.status === 429)) assert.ok(Number(a.headers['retry-after']) >= 1);
  });

  test('valid keys never use the budget; one whose lookup outlived the budget is answered 429 too', async () => {
    const limiter = new AuthFailureLimiter({ points: 2, duration: 60 });
    const { srv, verifier } = await start(limiter);
    let open!: () => void;
    verifier.gate = new Promise((r) => (open = r));
    // More valid keys in flight at once than the budget: none is refused.
    const burst = Promise.all(
      Array.from({ length: 6 }, () => send(srv.port, '/a', { headers: { 'X-API-Key': 'good' } })),
    );
    await eventually(async () => verifier.seen.length === 6, 5000);
    open();
    assert.deepEqual(
      (await burst).map((r) => r.status),
      [200, 200, 200, 200, 200, 200],
    );
    verifier.gate = null;
    assert.equal((await send(srv.port, '/a', { headers: { 'X-API-Key': 'down' } })).status, 500);
    assert.equal(limiter.blockedFor('127.0.0.1'), 0, 'neither valid keys nor a store failure counted');
    // A valid key and two bad ones in flight together: the bad ones use the budget up, and the
    // valid one, answered after them, must not stand out.
    let release!: () => void;
    verifier.gate = new Promise((r) => (release = r));
    const mixed = [
      send(srv.port, '/a', { headers: { 'X-API-Key': 'unknown' } }),
      send(srv.port, '/a', { headers: { 'X-API-Key': 'unknown' } }),
    ];
    await eventually(async () => verifier.seen.length === 9, 5000);
    const late = send(srv.port, '/a', { headers: { 'X-API-Key': 'good' } });
    await eventually(async () => verifier.seen.length === 10, 5000);
    release();
    assert.deepEqual(
      (await Promise.all(mixed)).map((r) => r.status),
      [401, 401],
    );
    assert.equal((await late).status, 429);
  });

  test('bad keys use up the address budget; then 429 with Retry-After and no lookup at all', async () => {
    const limiter = new AuthFailureLimiter({ points: 2, duration: 60 });
    const { srv, verifier } = await start(limiter);
    assert.equal((await send(srv.port, '/a', { headers: { 'X-API-Key': 'unknown' } })).status, 401);
    assert.equal((await send(srv.port, '/a')).status, 401);
    const blocked = await send(srv.port, '/a', { headers: { 'X-API-Key': 'good' } });
    assert.equal(blocked.status, 429);
    assert.ok(Number(blocked.headers['retry-after']) >= 1);
    assert.equal(verifier.seen.length, 2, 'the blocked request was not verified');
    assert.equal(srv.finished[2]?.denyReason, 'auth_failures');
    assert.equal(srv.reached.length, 0);
  });

  test('a verifier that throws is passed on as the error', async () => {
    const { srv } = await start(null);
    const r = await send(srv.port, '/a', { headers: { 'X-API-Key': 'down' } });
    assert.equal(r.status, 500);
    assert.equal((srv.errors[0] as GatewayError).code, 'STORE_UNAVAILABLE');
  });

  test('invalid options throw when the step is built', () => {
    const metrics = createMetrics({ processMetrics: false });
    assert.throws(
      () =>
        createAuthenticate({
          verifier: {} as never,
          authFailures: null,
          failureCounter: metrics.authFailures,
        }),
      /verifier.verify must be a function/,
    );
  });
});
