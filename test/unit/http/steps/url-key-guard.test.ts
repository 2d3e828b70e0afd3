import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { DEFAULT_METHOD_OVERRIDE_PARAMS, DEFAULT_URL_KEY_PARAMS } from '../../../../src/config/schema.js';
import { createUrlKeyGuard, type UrlKeyCheck } from '../../../../src/guards/url-key-guard.js';
import { createKeyInUrlNotes } from '../../../../src/http/key-in-url.js';
import { createUrlKeyGuardStep } from '../../../../src/http/steps/url-key-guard.js';
import { createMetrics } from '../../../../src/observability/metrics.js';
import { AuthFailureLimiter } from '../../../../src/ratelimit/tier-limiter.js';
import { send } from '../../../helpers/http.js';
import { serveStep, seriesValue, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

/** The step with the real key-in-URL bookkeeping (as app.ts wires it) over `authFailures`. */
async function start(authFailures: AuthFailureLimiter | null) {
  const exposed: { url: string; candidates: string[] }[] = [];
  const metrics = createMetrics({ processMetrics: false });
  const checkUrlForKey = createUrlKeyGuard({
    paramNames: DEFAULT_URL_KEY_PARAMS,
    overrideNames: DEFAULT_METHOD_OVERRIDE_PARAMS,
    maxParams: 256,
    maxPathSegments: 128,
    level: 'default',
  });
  const { noteKeyInUrl } = createKeyInUrlNotes({
    checkUrlForKey,
    authFailures,
    failureCounter: metrics.authFailures,
    onKeyInUrl: (candidates, req) => exposed.push({ url: req.url ?? '', candidates }),
  });
  const srv = await serveStep(createUrlKeyGuardStep({ checkUrlForKey, noteKeyInUrl }));
  servers.push(srv);
  return { srv, exposed, metrics };
}

describe('URL key guard step', () => {
  test('a URL without a key goes on unchanged', async () => {
    const { srv, exposed } = await start(null);
    const r = await send(srv.port, '/notify/v1/x?to=alice&n=2');
    assert.equal(r.status, 200);
    assert.equal(srv.reached[0]!.url, '/notify/v1/x?to=alice&n=2');
    assert.deepEqual(exposed, []);
  });

  test('a key in the URL: 401, nothing goes on, one failure counted, the key checked for exposure', async () => {
    const limiter = new AuthFailureLimiter({ points: 5, duration: 60 });
    const { srv, exposed, metrics } = await start(limiter);
    const r = await send(srv.port, '/notify/v1/x?api_key=some-secret');
    assert.equal(r.status, 401);
    assert.deepEqual(r.json, {
      error: 'Unauthorized',
      details: 'API key must be sent in the X-API-Key header, not in the URL',
    });
    assert.equal(r.headers['retry-after'], undefined);
    assert.equal(srv.reached.length, 0);
    assert.deepEqual(exposed, [{ url: '/notify/v1/x?api_key=some-secret', candidates: ['some-secret'] }]);
    assert.equal(srv.finished[0]?.error, 'KEY_IN_URL');
    assert.equal(srv.finished[0]?.keyInUrl, true);
    assert.equal(await seriesValue(metrics.authFailures, { reason: 'key_in_url' }), 1);
    // Exactly one failure of five was counted by that answer.
    for (let i = 0; i < 4; i++) assert.equal(limiter.tryRecordFailure('127.0.0.1'), 0);
    assert.ok(limiter.tryRecordFailure('127.0.0.1') > 0);
  });

  test('an address over its failed-authentication budget gets 429 with Retry-After; no exposure lookup', async () => {
    const limiter = new AuthFailureLimiter({ points: 2, duration: 60 });
    const { srv, exposed } = await start(limiter);
    limiter.recordFailure('127.0.0.1');
    limiter.recordFailure('127.0.0.1');
    const r = await send(srv.port, '/notify/v1/x?token=abc');
    assert.equal(r.status, 429);
    assert.equal(
      (r.json as { details: string }).details,
      'Too many failed authentications from this address; retry after the delay in Retry-After',
    );
    assert.ok(Number(r.headers['retry-after']) >= 1);
    assert.deepEqual(exposed, [], 'a blocked address costs no store lookup');
    assert.equal(srv.finished[0]?.keyInUrl, true, 'the URL is still kept out of the log');
    assert.equal(srv.finished[0]?.denyReason, 'auth_failures');
    assert.equal(srv.finished[0]?.error, 'AUTH_RATE_LIMITED');
  });

  test('concurrent keys in URLs from one address: exactly the budget answers 401', async () => {
    const { srv } = await start(new AuthFailureLimiter({ points: 3, duration: 60 }));
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => send(srv.port, `/notify/v1/x?key=k${i}`)),
    );
    assert.deepEqual(answers.map((a) => a.status).sort(), [
      ...Array<number>(3).fill(401),
      ...Array<number>(9).fill(429),
    ]);
  });

  test('invalid options throw when the step is built', () => {
    assert.throws(
      () => createUrlKeyGuardStep({ checkUrlForKey: undefined as never, noteKeyInUrl: () => 0 }),
      /checkUrlForKey must be a function/,
    );
    assert.throws(
      () => createUrlKeyGuardStep({ checkUrlForKey: () => ({}) as UrlKeyCheck, noteKeyInUrl: 1 as never }),
      /noteKeyInUrl must be a function/,
    );
  });
});
