import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { GatewayConfig } from '../../../src/config/schema.js';
import { EventBus } from '../../../src/events/bus.js';
import { createEventMetrics } from '../../../src/events/metrics.js';
import { RedisEventStore } from '../../../src/events/redis-store.js';
import { MemoryEventStore, type EventStore } from '../../../src/events/store.js';
import type { EventData } from '../../../src/events/types.js';
import { createLogger } from '../../../src/observability/logger.js';
import { createRedisClient, waitForReady, type RedisClient } from '../../../src/redis/connection.js';
import { isoSeconds } from '../../../src/time.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

const logger = createLogger({ level: 'silent' });
const revoked: EventData<'key.revoked'> = {
  companyId: 'acme',
  keyId: 'key_1',
  keyPrefix: 'nk_live_abcd',
  revokedAt: '2030-01-01T00:00:00Z',
  reason: 'revoked',
  actor: 'admin',
};
const ops = {
  ref: { scope: 'gateway' as const, id: 'ops' },
  url: 'http://127.0.0.1:1/h',
  secret: 'whsec_x',
  events: ['key.*'],
};

function bus(store: EventStore, endpoints = [ops]) {
  return new EventBus({
    store,
    gatewayEndpoints: endpoints,
    metrics: createEventMetrics(new Registry()),
    logger,
  });
}

describe('EventBus', () => {
  test('queues one delivery per matching endpoint, the gateway’s and the company’s own', async () => {
    const store = new MemoryEventStore();
    await store.addWebhook(
      {
        id: 'wh_a',
        companyId: 'acme',
        url: 'http://127.0.0.1:1/a',
        secret: 'whsec_y',
        events: ['company.*'],
        createdAt: '2030-01-01T00:00:00Z',
      },
      10,
    );
    await store.addWebhook(
      {
        id: 'wh_b',
        companyId: 'globex',
        url: 'http://127.0.0.1:1/b',
        secret: 'whsec_z',
        events: ['*'],
        createdAt: '2030-01-01T00:00:00Z',
      },
      10,
    );
    const b = bus(store);
    assert.equal(
      await b.publish('company.suspended', { companyId: 'acme', previousStatus: 'active', actor: 'admin' }),
      'queued',
    );
    assert.deepEqual(
      (await store.listDeliveries('pending', 10)).map((d) => d.endpoint.id),
      ['wh_a'],
      'ops asked for key.* only',
    );
    assert.equal(await b.publish('key.revoked', revoked), 'queued');
    const pending = await store.listDeliveries('pending', 10);
    assert.deepEqual(pending.map((d) => d.endpoint.id).sort(), ['ops', 'wh_a']);
    const body = JSON.parse(pending.find((d) => d.type === 'key.revoked')!.body) as Record<string, unknown>;
    assert.deepEqual(Object.keys(body), ['id', 'type', 'timestamp', 'data']);
    assert.match(String(body.id), /^evt_[A-Za-z0-9_-]{16}$/);
    assert.deepEqual(body.data, revoked);
  });

  test('the same revocation reported twice is queued once; no endpoint, nothing queued', async () => {
    const store = new MemoryEventStore();
    const b = bus(store);
    assert.equal(await b.publish('key.revoked', revoked), 'queued');
    assert.equal(
      await b.publish('key.revoked', { ...revoked, reason: 'grace period after a rotation ended' }),
      'duplicate',
    );
    assert.equal(await bus(new MemoryEventStore(), []).publish('key.revoked', revoked), 'no_endpoint');
  });

  test('data that does not match its schema is refused (a bug), naming fields, never values', async () => {
    const lines: string[] = [];
    const b = new EventBus({
      store: new MemoryEventStore(),
      gatewayEndpoints: [ops],
      metrics: createEventMetrics(new Registry()),
      logger: createLogger({ level: 'error', destination: { write: (l: string) => void lines.push(l) } }),
    });
    const bad = {
      ...revoked,
      keyId: 'nk_live_secretvalue!!',
      extra: 1,
    } as unknown as EventData<'key.revoked'>;
    assert.equal(await b.publish('key.revoked', bad), 'invalid');
    assert.match(lines.join(''), /keyId/);
    assert.ok(!lines.join('').includes('secretvalue'));
  });

  test('key.grace_ending more than a day ahead waits for the key scan', async () => {
    const b = bus(new MemoryEventStore());
    const data = { companyId: 'acme', keyId: 'key_1', keyPrefix: 'nk', replacedBy: 'key_2' };
    assert.equal(
      await b.publish('key.grace_ending', { ...data, revokesAt: isoSeconds(Date.now() + 2 * 86_400_000) }),
      'not_yet',
    );
    assert.equal(
      await b.publish('key.grace_ending', { ...data, revokesAt: isoSeconds(Date.now() + 3_600_000) }),
      'queued',
    );
  });
});

describe('EventBus while the Redis event store hangs', () => {
  let redis: TestRedis;
  let client: RedisClient;
  before(async () => {
    redis = await startRedis();
    client = createRedisClient({
      url: redis.url,
      commandTimeoutMs: 200,
      connectTimeoutMs: 500,
    } as GatewayConfig['store']['redis']);
    await waitForReady(client, 2000);
  });
  after(async () => {
    redis?.resume();
    client?.disconnect();
    await redis?.stop();
  });

  test('events wait in memory and are queued, once, when it answers again', async () => {
    const store = new RedisEventStore(client, 'ng-bus:');
    const b = bus(store);
    redis.pause();
    try {
      assert.equal(await b.publish('key.revoked', revoked), 'outbox');
      assert.equal(
        await b.publish('key.revoked', revoked),
        'outbox',
        'both wait: the once-key is claimed at enqueue',
      );
      await assert.rejects(b.flushOutbox());
    } finally {
      redis.resume();
    }
    await waitForReady(client, 2000);
    await b.flushOutbox();
    const pending = await store.listDeliveries('pending', 10);
    assert.equal(pending.length, 1, 'queued once: the second was a duplicate');
    await b.flushOutbox();
    assert.equal((await store.listDeliveries('pending', 10)).length, 1, 'the outbox is empty');
  });
});
