import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { GatewayConfig } from '../../../src/config/schema.js';
import { RedisEventStore } from '../../../src/events/redis-store.js';
import { MemoryEventStore, type EventStore } from '../../../src/events/store.js';
import type { CompanyWebhook, DeliveryRecord } from '../../../src/events/types.js';
import { createRedisClient, waitForReady, type RedisClient } from '../../../src/redis/connection.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

// One contract for both event stores: every rule that depends on current state (a once-key, a
// claim, a dead letter's retry, the endpoint cap) holds when many callers race for it.

let n = 0;
function record(over: Partial<DeliveryRecord> = {}): DeliveryRecord {
  const at = '2030-01-01T00:00:00Z';
  return {
    id: `dlv_${++n}`,
    eventId: `evt_${n}`,
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
    body: JSON.stringify({
      id: `evt_${n}`,
      type: 'key.revoked',
      timestamp: at,
      data: { keyId: 'k\u00e9/1' },
    }),
    ...over,
  };
}

function webhook(companyId: string, i: number): CompanyWebhook {
  return {
    id: `wh_${companyId}_${i}`,
    companyId,
    url: 'http://127.0.0.1:1/h',
    secret: 'whsec_x',
    events: ['*'],
    createdAt: '2030-01-01T00:00:00Z',
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Claims until nothing is due and settles each as delivered, returning the ids (the queue is empty after). */
async function drain(s: EventStore): Promise<string[]> {
  const ids: string[] = [];
  for (;;) {
    const { claimed } = await s.claimDue(100, 60_000);
    if (claimed.length === 0) return ids;
    for (const c of claimed) assert.equal(await s.settle(c, { kind: 'delivered', record: c.record }), true);
    ids.push(...claimed.map((c) => c.record.id));
  }
}

function contract(name: string, make: () => Promise<EventStore>): void {
  describe(`${name} event store`, () => {
    let s: EventStore;
    before(async () => (s = await make()));

    test('a once-key lets exactly one of 20 concurrent enqueues in, and frees itself when it expires', async () => {
      const results = await Promise.all(
        Array.from({ length: 20 }, () => s.enqueue([record()], { key: 'k.exposed:1', ttlMs: 150 })),
      );
      assert.deepEqual(results.filter((r) => r === 'queued').length, 1);
      assert.equal(results.filter((r) => r === 'duplicate').length, 19);
      assert.equal((await drain(s)).length, 1, 'one delivery queued, not 20');
      await sleep(200);
      assert.equal(await s.enqueue([record()], { key: 'k.exposed:1', ttlMs: 150 }), 'queued');
      assert.equal(await s.claimOnce('lock', 1000), true);
      assert.equal(await s.claimOnce('lock', 1000), false);
      await drain(s);
    });

    test('concurrent claims never take one delivery twice; a lapsed lease makes it due again', async () => {
      const records = Array.from({ length: 30 }, () => record());
      assert.equal(await s.enqueue(records), 'queued');
      const claims = await Promise.all(Array.from({ length: 6 }, () => s.claimDue(10, 150)));
      const ids = claims.flatMap((c) => c.claimed.map((x) => x.record.id));
      assert.equal(ids.length, 30);
      assert.equal(new Set(ids).size, 30, 'no delivery claimed twice');
      assert.equal((await s.claimDue(10, 150)).claimed.length, 0, 'in flight: not due');
      const first = claims.find((c) => c.claimed.length > 0)!.claimed[0]!;
      await sleep(200);
      const again = await drain(s);
      assert.equal(again.length, 30, 'every lapsed lease is due again');
      // The first claim's token is stale: its settle changes nothing.
      assert.equal(await s.settle(first, { kind: 'delivered', record: first.record }), false);
    });

    test('settle: delivered and dead are listed newest first, retry is due after its delay, release at once', async () => {
      const [a, b, c, d] = [record(), record(), record(), record()];
      await s.enqueue([a, b, c, d]);
      const { claimed } = await s.claimDue(4, 60_000);
      const byId = new Map(claimed.map((x) => [x.record.id, x]));
      assert.equal(
        await s.settle(byId.get(a.id)!, {
          kind: 'delivered',
          record: { ...a, status: 'delivered', attempts: 1 },
        }),
        true,
      );
      assert.equal(
        await s.settle(byId.get(b.id)!, { kind: 'dead', record: { ...b, status: 'dead', attempts: 5 } }),
        true,
      );
      assert.equal(
        await s.settle(byId.get(c.id)!, { kind: 'retry', delayMs: 150, record: { ...c, attempts: 1 } }),
        true,
      );
      assert.equal(await s.settle(byId.get(d.id)!, { kind: 'release' }), true);
      assert.equal(await s.settle(byId.get(d.id)!, { kind: 'release' }), false, 'settled once');
      const released = (await s.claimDue(10, 60_000)).claimed;
      assert.deepEqual(
        released.map((x) => x.record.id),
        [d.id],
      );
      await sleep(200);
      const retried = (await s.claimDue(10, 60_000)).claimed;
      assert.deepEqual(
        retried.map((x) => [x.record.id, x.record.attempts]),
        [[c.id, 1]],
      );
      assert.equal((await s.listDeliveries('delivered', 10))[0]!.id, a.id);
      const dead = await s.listDeliveries('dead', 10);
      assert.deepEqual(
        dead.map((x) => [x.id, x.status, x.body]),
        [[b.id, 'dead', b.body]],
      );
      assert.deepEqual((await s.listDeliveries('pending', 10)).map((x) => x.id).sort(), [c.id, d.id].sort());
      await s.settle(retried[0]!, { kind: 'release' });
      await s.settle(released[0]!, { kind: 'release' });
      await drain(s);
      assert.deepEqual(await s.listDeliveries('pending', 10), []);
    });

    test('a dead letter is queued again by one of five concurrent retries, attempts from 0, body unchanged', async () => {
      const r = record();
      await s.enqueue([r]);
      const [c] = (await s.claimDue(1, 60_000)).claimed;
      await s.settle(c!, { kind: 'dead', record: { ...r, status: 'dead', attempts: 3, lastStatus: 500 } });
      const answers = await Promise.all(
        Array.from({ length: 5 }, () => s.requeueDead(r.id, '2030-01-02T00:00:00Z')),
      );
      const won = answers.filter((x) => x !== null);
      assert.equal(won.length, 1);
      assert.deepEqual(
        {
          status: won[0]!.status,
          attempts: won[0]!.attempts,
          next: won[0]!.nextAttemptAt,
          body: won[0]!.body,
          last: won[0]!.lastStatus,
        },
        { status: 'pending', attempts: 0, next: '2030-01-02T00:00:00Z', body: r.body, last: 500 },
      );
      assert.ok((await drain(s)).includes(r.id));
      assert.equal(await s.requeueDead('dlv_nothing', 'x'), null);
    });

    test('at most 10 endpoints per company under 15 concurrent adds; a delete answers once', async () => {
      assert.equal(await s.hasWebhooks(), false);
      const added = await Promise.all(
        Array.from({ length: 15 }, (_, i) => s.addWebhook(webhook('acme', i), 10)),
      );
      assert.equal(added.filter(Boolean).length, 10);
      assert.equal((await s.listWebhooks('acme')).length, 10);
      assert.equal((await s.listWebhooks('globex')).length, 0);
      const id = (await s.listWebhooks('acme'))[0]!.id;
      const dels = await Promise.all([s.deleteWebhook('acme', id), s.deleteWebhook('acme', id)]);
      assert.equal(dels.filter((x) => x !== null).length, 1);
      assert.equal(await s.deleteWebhook('globex', id), null);
      assert.equal(await s.hasWebhooks(), true);
      for (const w of await s.listWebhooks('acme')) assert.ok(await s.deleteWebhook('acme', w.id));
      assert.equal(await s.hasWebhooks(), false, 'the last endpoint gone: nobody listens');
    });
  });
}

contract('memory', () => Promise.resolve(new MemoryEventStore()));

let redis: TestRedis;
let client: RedisClient;
before(async () => {
  redis = await startRedis();
  client = createRedisClient({
    url: redis.url,
    commandTimeoutMs: 1000,
    connectTimeoutMs: 1000,
  } as GatewayConfig['store']['redis']);
  await waitForReady(client, 2000);
});
after(async () => {
  client?.disconnect();
  await redis?.stop();
});
contract('Redis', () => Promise.resolve(new RedisEventStore(client, 'ng-test:')));

describe('Redis event store keys', () => {
  test('every key shares the {ev} hash tag (one Cluster slot for each script)', async () => {
    const keys = await client.keys('ng-test:*');
    assert.ok(keys.length > 0);
    assert.deepEqual(
      keys.filter((k) => !k.startsWith('ng-test:{ev}:')),
      [],
    );
  });
});
