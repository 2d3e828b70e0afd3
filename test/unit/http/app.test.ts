import assert from 'node:assert/strict';
import { createServer, IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import express from 'express';
import { generateApiKey, hashApiKey } from '../../../src/auth/api-key.js';
import { KeyVerifier } from '../../../src/auth/verify.js';
import { validateConfig } from '../../../src/config/load.js';
import { createApp } from '../../../src/http/app.js';
import { createLogger } from '../../../src/observability/logger.js';
import { createMetrics } from '../../../src/observability/metrics.js';
import { TierRateLimiter } from '../../../src/ratelimit/tier-limiter.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import { isoSeconds } from '../../../src/time.js';
import { send } from '../../helpers/http.js';
import { startUpstream } from '../../helpers/upstream.js';

const closers: (() => Promise<void>)[] = [];
after(() => Promise.all(closers.map((c) => c())));

async function listen(handler: Parameters<typeof createServer>[1]): Promise<number> {
  const server: Server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => server.close(() => r())));
  return (server.address() as AddressInfo).port;
}

async function gatewayApp() {
  const upstream = await startUpstream();
  closers.push(() => upstream.close());
  const loaded = validateConfig({ routes: [{ prefix: '/notify/v1', target: upstream.url }] });
  assert.ok(loaded.ok);
  const config = loaded.config;
  const store = new MemoryKeyStore();
  const at = isoSeconds(Date.now());
  await store.createCompany({
    id: 'acme',
    name: 'Acme',
    tier: 'standard',
    status: 'active',
    apiAccess: true,
    scopes: null,
    limits: null,
    createdAt: at,
    updatedAt: at,
  });
  const key = generateApiKey('live');
  await store.createKey(
    {
      id: 'key_1',
      companyId: 'acme',
      hash: hashApiKey(key),
      prefix: key.slice(0, 14),
      label: null,
      environment: 'live',
      createdAt: at,
      expiresAt: null,
      revokedAt: null,
      lastUsedAt: null,
      exposedAt: null,
      rotatedTo: null,
      scopes: null,
      limits: null,
    },
    0,
    at,
  );
  const seen: IncomingMessage[] = [];
  const app = createApp({
    config,
    logger: createLogger({ level: 'silent' }),
    metrics: createMetrics({ processMetrics: false }),
    verifier: new KeyVerifier({
      store,
      ...config.cache,
      maxKeyLength: config.keys.maxLength,
      acceptLegacyFormat: config.keys.acceptLegacyFormat,
      lastUsedIntervalMs: 60_000,
    }),
    limiter: new TierRateLimiter({
      tiers: config.rateLimit.tiers,
      keyPrefix: 'ng:',
      failurePolicy: 'insurance',
    }),
    authFailures: null,
    ready: async () => ({ ok: true, checks: { store: 'ok' } }),
    onKeyInUrl: (_candidates, req) => seen.push(req),
  });
  closers.push(async () => app.closeAgents());
  return { app, key, upstream, seen };
}

test('the steps run on Node request and response objects: Express never swaps their prototypes', async () => {
  const { app, key, upstream, seen } = await gatewayApp();
  const port = await listen(app);
  const ok = await send(port, '/notify/v1/otps', { headers: { 'X-API-Key': key } });
  assert.equal(ok.status, 200);
  assert.equal(upstream.received.length, 1);
  assert.equal(upstream.received[0]!.headers['x-api-key'], undefined);
  // A key in the URL hands the request to onKeyInUrl: it is the server's own IncomingMessage.
  const leaked = await send(port, `/notify/v1/otps?api_key=${key}`, { headers: { 'X-API-Key': key } });
  assert.equal(leaked.status, 401);
  assert.equal(seen.length, 1);
  assert.equal(Object.getPrototypeOf(seen[0]), IncomingMessage.prototype);
});

test('/healthz and /readyz answer JSON with Node API; unrouted paths 404 in the spec shape', async () => {
  const { app } = await gatewayApp();
  const port = await listen(app);
  const health = await send(port, '/healthz');
  assert.equal(health.status, 200);
  assert.equal(health.headers['content-type'], 'application/json; charset=utf-8');
  assert.equal(health.headers['content-length'], String(Buffer.byteLength(health.body)));
  assert.deepEqual(health.json, { status: 'ok' });
  const ready = await send(port, '/readyz');
  assert.deepEqual(ready.json, { status: 'ready' }); // the public port says the status only
  assert.equal((await send(port, '/healthz', { method: 'HEAD' })).body, '');
  const missing = await send(port, '/nope');
  assert.equal(missing.status, 404);
  assert.deepEqual(missing.json, { error: 'Not Found', details: 'No route matches this path' });
});

test('mounted in another Express app, it still answers every request itself', async () => {
  const { app, key, upstream } = await gatewayApp();
  const outer = express();
  outer.use(app);
  outer.use((_req, res) => void res.status(599).end());
  const port = await listen(outer);
  assert.equal((await send(port, '/notify/v1/otps', { headers: { 'X-API-Key': key } })).status, 200);
  assert.equal((await send(port, '/elsewhere')).status, 404);
  assert.equal(upstream.received.length, 1);
});
