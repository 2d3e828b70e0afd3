import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createUrlKeyGuard } from '../../../../src/auth/url-key-guard.js';
import { DEFAULT_URL_KEY_PARAMS } from '../../../../src/config/schema.js';
import { createUrlKeyGuardStep } from '../../../../src/http/steps/url-key-guard.js';
import { AuthFailureLimiter } from '../../../../src/ratelimit/tier-limiter.js';
import { send } from '../../../helpers/http.js';
import { serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

async function start(authFailures: AuthFailureLimiter | null) {
  const noted: { url: string; candidates: string[] }[] = [];
  const step = createUrlKeyGuardStep({
    checkUrlForKey: createUrlKeyGuard(DEFAULT_URL_KEY_PARAMS),
    noteKeyInUrl: (req, candidates) => noted.push({ url: req.url ?? '', candidates }),
    authFailures,
  });
  const srv = await serveStep(step);
  servers.push(srv);
  return { srv, noted };
}

describe('URL key guard step', () => {
  test('a URL without a key goes on unchanged', async () => {
    const { srv, noted } = await start(null);
    const r = await send(srv.port, '/notify/v1/x?to=alice&n=2');
    assert.equal(r.status, 200);
    assert.equal(srv.reached[0]!.url, '/notify/v1/x?to=alice&n=2');
    assert.deepEqual(noted, []);
  });

  test('a key in the URL: 401, nothing goes on, and the key is noted', async () => {
    const { srv, noted } = await start(new AuthFailureLimiter({ points: 5, duration: 60 }));
    const r = await send(srv.port, '/notify/v1/x?api_key=some-secret');
    assert.equal(r.status, 401);
    assert.deepEqual(r.json, {
      error: 'Unauthorized',
      details: 'API key must be sent in the X-API-Key header, not in the URL',
    });
    assert.equal(r.headers['retry-after'], undefined);
    assert.equal(srv.reached.length, 0);
    assert.equal(noted.length, 1);
    assert.equal(noted[0]!.url, '/notify/v1/x?api_key=some-secret');
    assert.equal(srv.finished[0]?.error, 'KEY_IN_URL');
  });

  test('an address over its failed-authentication budget gets 429 with Retry-After; the key is still noted', async () => {
    const limiter = new AuthFailureLimiter({ points: 2, duration: 60 });
    const { srv, noted } = await start(limiter);
    await limiter.recordFailure('127.0.0.1');
    await limiter.recordFailure('127.0.0.1');
    const r = await send(srv.port, '/notify/v1/x?token=abc');
    assert.equal(r.status, 429);
    assert.equal(
      (r.json as { details: string }).details,
      'Too many failed authentications from this address; retry after the delay in Retry-After',
    );
    assert.ok(Number(r.headers['retry-after']) >= 1);
    assert.equal(noted.length, 1);
    assert.equal(srv.finished[0]?.denyReason, 'auth_failures');
    assert.equal(srv.finished[0]?.error, 'AUTH_RATE_LIMITED');
  });

  test('invalid options throw when the step is built', () => {
    assert.throws(
      () =>
        createUrlKeyGuardStep({
          checkUrlForKey: undefined as never,
          noteKeyInUrl: () => {},
          authFailures: null,
        }),
      /checkUrlForKey must be a function/,
    );
    assert.throws(
      () =>
        createUrlKeyGuardStep({
          checkUrlForKey: () => ({ found: false }),
          noteKeyInUrl: () => {},
          authFailures: {} as never,
        }),
      /authFailures.blockedFor must be a function/,
    );
  });
});
