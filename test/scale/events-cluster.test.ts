import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { GatewayConfig } from '../../src/config/schema.js';
import { RedisEventStore } from '../../src/events/redis-store.js';
import type { DeliveryRecord } from '../../src/events/types.js';
import { createRedisClient, waitForReady, type RedisClient } from '../../src/redis/connection.js';
import { startCluster, type TestCluster } from '../helpers/topologies.js';

// The event queue's scripts each touch several keys: on Redis Cluster they must share a slot (the
// `{ev}` hash tag), or every script fails with CROSSSLOT and no event is ever delivered.

let cluster: TestCluster;
let client: RedisClient;
before(async () => {
  cluster = await startCluster();
  client = createRedisClient({
    url: 'redis://127.0.0.1:6379',
    cluster: cluster.seeds,
    commandTimeoutMs: 2000,
    connectTimeoutMs: 2000,
  } as GatewayConfig['store']['redis']);
  await waitForReady(client, 10_000);
});
after(async () => {
  client?.disconnect();
  await cluster?.stop();
});

function record(id: string): DeliveryRecord {
  const at = '2030-01-01T00:00:00Z';
  return {
    id,
    eventId: `evt_${id}`,
    type: 'key.revoked',
    companyId: 'acme',
    endpoint: { scope: 'gateway', id: 'ops' },
    status: 'pending',
    attempts: 0,
    createdAt: at,
    lastAttemptAt: null,
    nextAttemptAt: at,
    lastStatus: null,
    lastError: null,
    body: '{}',
  };
}

describe('the Redis event store on Redis Cluster', () => {
  test('once-key and enqueue, claim, retry, dead letter, requeue and company endpoints all run', async () => {
    const s = new RedisEventStore(client, 'ng:');
    assert.equal(
      await s.enqueue([record('dlv_a'), record('dlv_b')], { key: 'key.revoked:k1', ttlMs: 60_000 }),
      'queued',
    );
    assert.equal(await s.enqueue([record('dlv_c')], { key: 'key.revoked:k1', ttlMs: 60_000 }), 'duplicate');
    assert.equal(
      await s.enqueue([record('dlv_q')], { key: 'quota:acme:-:86400:80', untilMs: Date.now() + 60_000 }),
      'queued',
    );
    const { claimed, depth } = await s.claimDue(10, 60_000);
    assert.deepEqual(claimed.map((c) => c.record.id).sort(), ['dlv_a', 'dlv_b', 'dlv_q']);
    assert.equal(depth.pending, 3);
    const [a, b, q] = [...claimed].sort((x, y) => x.record.id.localeCompare(y.record.id));
    assert.ok(await s.settle(a!, { kind: 'delivered', record: a!.record }));
    assert.ok(await s.settle(b!, { kind: 'dead', record: { ...b!.record, status: 'dead' } }));
    assert.ok(await s.settle(q!, { kind: 'retry', delayMs: 60_000, record: q!.record }));
    assert.equal((await s.requeueDead('dlv_b', '2030-01-02T00:00:00Z'))?.attempts, 0);
    assert.equal(await s.claimOnce('key-scan', 60_000), true);
    assert.equal(
      await s.addWebhook(
        {
          id: 'wh_1',
          companyId: 'acme',
          url: 'http://127.0.0.1:1/',
          secret: 'whsec_x',
          events: ['*'],
          createdAt: '2030-01-01T00:00:00Z',
        },
        10,
      ),
      true,
    );
    assert.equal((await s.listWebhooks('acme')).length, 1);
    assert.deepEqual(
      (await s.listDeliveries('delivered', 10)).map((d) => d.id),
      ['dlv_a'],
    );
    assert.deepEqual((await s.listDeliveries('pending', 10)).map((d) => d.id).sort(), ['dlv_b', 'dlv_q']);
  });
});
