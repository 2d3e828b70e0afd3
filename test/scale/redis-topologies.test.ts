import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { hashApiKey } from '../../src/auth/api-key.js';
import type { TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/http.js';
import {
  assertFailoverFigures,
  auditAndLastUsed,
  createCompanyAndKey,
  exactLimitAcross,
  keyCreatedOnOneWorksOnAll,
  loadThroughFailover,
  revocationReachesAll,
  startGateways,
} from '../helpers/scale.js';
import { storeConcurrencySuite } from '../helpers/store-concurrency.js';
import { redisCmd, startCluster, type TestCluster } from '../helpers/topologies.js';
import { createRedisClient, waitForReady } from '../../src/redis/connection.js';
import { RedisKeyStore } from '../../src/store/redis-store.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/** Upper bound for any single answer during a failover (commandTimeoutMs is 500 by default). */
const MAX_ANSWER_MS = 2500;

describe('Redis Cluster (3 masters + 3 replicas) behind 3 gateway instances', () => {
  let cluster: TestCluster;
  let upstream: RecordingUpstream;
  let gws: TestGateway[] = [];
  let load: { id: string; key: string };

  before(async () => {
    cluster = await startCluster();
    upstream = await startUpstream();
    gws = await startGateways(
      3,
      { url: `redis://127.0.0.1:${cluster.seeds[0]!.port}`, cluster: cluster.seeds },
      upstream,
    );
    load = await createCompanyAndKey(gws[0]!, 'load-co', 'bulk');
  });
  after(async () => {
    await Promise.all(gws.map((g) => g.close()));
    await upstream?.close();
    await cluster?.stop();
  });

  test('a key created through one instance authenticates on every instance', async () => {
    await keyCreatedOnOneWorksOnAll(gws, 'everywhere-co');
  });

  test('the tier limit is exact across 3 instances: 3N concurrent requests → exactly N forwarded', async () => {
    await exactLimitAcross(gws, upstream, 'trio-co');
  });

  test('revocation reaches every instance within 1 s', async () => {
    const took = await revocationReachesAll(gws, 'revoke-co');
    process.stdout.write(`# cluster: revocation seen by the 3 instances after ${took.join(', ')} ms\n`);
  });

  test('audit stream and lastUsedAt work on Cluster', async () => {
    await auditAndLastUsed(gws, 'audit-co');
  });

  // The concurrency section of the store contract (issue 10), on Cluster: every script touches one
  // key, so each runs on the node owning that key's slot. Before the failover tests, on a healthy
  // cluster.
  describe('KeyStore contract, concurrency section, on Cluster', () => {
    let store: RedisKeyStore;
    before(async () => {
      const cfg = {
        url: `redis://127.0.0.1:${cluster.seeds[0]!.port}`,
        cluster: cluster.seeds,
        keyPrefix: 'cc:',
        commandTimeoutMs: 1000,
        connectTimeoutMs: 2000,
      };
      const client = createRedisClient(cfg);
      assert.ok(await waitForReady(client, 5000), 'cluster client did not become ready');
      store = new RedisKeyStore(client, createRedisClient(cfg), 'cc:');
    });
    after(async () => store?.close());
    storeConcurrencySuite(() => store, 'cluster');
  });

  test('a hung node holding invalidation subscriptions: instances move their subscription and miss no revocation', async () => {
    const total = (m: Map<number, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    // Subscriptions prefer replicas once the clients' slot map lists them (CLUSTER SLOTS omits a
    // replica until it has replicated something, so right after startup they sit on masters).
    // Drop the connections of those on masters until all have moved: this also proves a lost
    // subscription comes back by itself.
    let dropped = 0;
    await eventually(
      async () => {
        const replicas = new Set(
          (await cluster.topology()).filter((t) => t.role === 'replica' && !t.failed).map((t) => t.port),
        );
        const subs = await cluster.clientsByNode(':invalidations');
        const onMasters = [...subs].filter(([p, n]) => n > 0 && !replicas.has(p));
        if (total(subs) === 3 && onMasters.length === 0) return true;
        for (const [p] of onMasters) {
          dropped += Number(await redisCmd(p, 'CLIENT', 'KILL', 'TYPE', 'pubsub'));
        }
        return false;
      },
      10_000,
      500,
    );
    const subs = await cluster.clientsByNode(':invalidations');
    const [port, count] = [...subs.entries()].sort((a, b) => b[1] - a[1])[0]!;
    // The replica hangs: its connections stay open, it answers nothing. The data path (masters) is
    // untouched, so only the subscribers on it are affected: their PING heartbeat must notice, move
    // to another node, and drop their caches, since the revocation message went out meanwhile.
    try {
      const took = await revocationReachesAll(gws, 'hung-sub-co', {
        withinMs: 3000,
        between: () => cluster.pause(port),
      });
      process.stdout.write(
        `# cluster: ${dropped} subscriptions dropped on masters came back; replica ${port} (${count} of 3 subscriptions) paused; revocation refused by the 3 instances after ${took.join(', ')} ms\n`,
      );
      // An instance may refuse the revoked key (its caches dropped once its new subscription was
      // confirmed) a moment before the node lists that connection: poll rather than sample once.
      await eventually(
        async () => total(await cluster.clientsByNode(':invalidations')) === 3,
        5000,
        100,
      ).catch(async () =>
        assert.fail(
          `every instance subscribed again: ${total(await cluster.clientsByNode(':invalidations'))} of 3`,
        ),
      );
    } finally {
      await cluster.resume(port);
    }
  });

  test('graceful CLUSTER FAILOVER of the master holding the limiter key, under load', async () => {
    const master = await cluster.masterOfKey('ng:rl:bulk:load-co');
    const f = await loadThroughFailover(gws, load.key, () => cluster.failover(master), {
      label: 'cluster CLUSTER FAILOVER',
    });
    assertFailoverFigures(f, MAX_ANSWER_MS);
  });

  test('a hung master (SIGSTOP) holding the limiter key, under load', async () => {
    const master = await cluster.masterOfKey('ng:rl:bulk:load-co');
    const f = await loadThroughFailover(gws, load.key, () => cluster.pauseMaster(master), {
      label: 'cluster master paused',
      afterMs: 7000,
    });
    try {
      assertFailoverFigures(f, MAX_ANSWER_MS);
    } finally {
      await cluster.resume(master);
    }
  });

  test('killing the master holding the key record, under load: no unknown key admitted, no 500, bounded answers', async () => {
    const master = await cluster.masterOfKey(`ng:kh:${hashApiKey(load.key)}`);
    const f = await loadThroughFailover(gws, load.key, () => cluster.killMaster(master), {
      label: 'cluster master killed',
    });
    assertFailoverFigures(f, MAX_ANSWER_MS);
  });

  test('after the failovers, without restarting anything: exact limit, revocation within 1 s, new keys', async () => {
    await cluster.waitHealthy();
    await exactLimitAcross(gws, upstream, 'trio-after-co');
    await revocationReachesAll(gws, 'revoke-after-co');
    await keyCreatedOnOneWorksOnAll(gws, 'everywhere-after-co');
    await auditAndLastUsed(gws, 'audit-after-co');
    for (const gw of gws) {
      const r = await fetch(`http://127.0.0.1:${gw.port}/readyz`);
      assert.equal(r.status, 200);
    }
  });
});
