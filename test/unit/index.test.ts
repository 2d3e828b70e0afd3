import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as api from '../../src/index.js';

// The public surface, sorted. Changing it is a decision: update this list and the CHANGELOG.
const EXPECTED = [
  'AdminService',
  'AuthFailureLimiter',
  'ERRORS',
  'FileKeyStore',
  'GatewayError',
  'KeyVerifier',
  'MemoryKeyStore',
  'RedisKeyStore',
  'StoreReadOnlyError',
  'TRACING_OFF',
  'TierRateLimiter',
  'WEBHOOK_HEADERS',
  'configSchema',
  'createApp',
  'createLogger',
  'createMetrics',
  'createRedisClient',
  'createStore',
  'createTracing',
  'gatewaySignatureMiddleware',
  'generateApiKey',
  'generateWebhookSecret',
  'hashApiKey',
  'loadConfig',
  'parseApiKey',
  'signGatewayRequest',
  'signWebhook',
  'startGateway',
  'tracingSettings',
  'validateConfig',
  'verifyGatewaySignature',
  'verifyWebhook',
];

test('the library exports exactly the gateway building blocks, nothing from the demo', () => {
  assert.deepEqual(Object.keys(api).sort(), EXPECTED);
  assert.ok(!('createExampleBackend' in api));
  for (const name of EXPECTED) {
    const value = (api as Record<string, unknown>)[name];
    assert.ok(value !== undefined && value !== null, `${name} is exported but undefined`);
  }
});
