import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { CreatedKey } from '../../src/admin/service.js';
import { hashApiKey } from '../../src/auth/api-key.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { LeaseLimiter } from '../../src/ratelimit/lease-limiter.js';
import { createRedisClient, waitForReady } from '../../src/redis/connection.js';
import { RedisKeyStore } from '../../src/store/redis-store.js';
import { createCompanyAndKey } from '../helpers/admin.js';
import type { TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/http.js';
import {
  assertFailoverFigures,
  auditAndLastUsed,
  exactLimitAcross,
  exactWindowsAcross,
  keyCreatedOnOneWorksOnAll,
  loadThroughFailover,
  revocationReachesAll,
  startGateways,
} from '../helpers/scale.js';
import { auditPagingContract, auditQueryContract } from '../helpers/audit-contract.js';
import { storeConcurrencySuite } from '../helpers/store-concurrency.js';
import {
  redisCmd,
  startCluster,
  startSentinel,
  type TestCluster,
  type TestSentinel,
} from '../helpers/topologies.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// One suite, run over every Redis topology the store supports (like the KeyStore contract runs
// over every store): 3 gateway instances share the topology; the shared scenarios prove the same
// things on each, then each topology adds its own failover drills, and the shared recovery check
// closes the run without restarting anything.

/**
 * Upper bound for any single answer during a failover: a request makes at most 3 sequential store
 * calls (key, company, limiter), each bounded by commandTimeoutMs (500 ms by default), plus slack
 * for this 2-core machine.
 */
const MAX_ANSWER_MS = 2500;

type RedisInput = NonNullable<NonNullable<ConfigInput['store']>['redis']>;

/** What a topology's own tests see, filled in by the suite's `before`. */
interface ScaleContext<T> {
  topo: T;
  gws: TestGateway[];
  upstream: RecordingUpstream;
  /** A key of the `bulk` tier (no practical limit), for the load during failovers. */
  load: CreatedKey;
}

interface Topology<T> {
  /** Short name, printed with the figures. */
  name: string;
  title: string;
  start(): Promise<T>;
  stop(topo: T): Promise<void>;
  /** The gateway's `store.redis` block for this topology. */
  redis(topo: T): RedisInput;
  /** Waits until the topology is whole again after its drills (before the recovery check). */
  settle(topo: T): Promise<unknown>;
  /** This topology's own tests, registered after the shared scenarios, in order. */
  specific(ctx: () => ScaleContext<T>): void;
}

function scaleSuite<T>(topology: Topology<T>): void {
  describe(topology.title, () => {
    const ctx = { gws: [] as TestGateway[] } as ScaleContext<T>;

    before(async () => {
      ctx.topo = await topology.start();
      ctx.upstream = await startUpstream();
      ctx.gws = await startGateways(3, topology.redis(ctx.topo), ctx.upstream);
      ctx.load = await createCompanyAndKey(ctx.gws[0]!.gw.service, 'load-co', {
        tier: 'bulk',
        label: 'scale',
      });
    });
    after(async () => {
      await Promise.all(ctx.gws.map((g) => g.close()));
      await ctx.upstream?.close();
      if (ctx.topo) await topology.stop(ctx.topo);
    });

    test('a key created through one instance authenticates on every instance', async () => {
      await keyCreatedOnOneWorksOnAll(ctx.gws, 'everywhere-co');
    });

    test('the tier limit is exact across 3 instances: 3N concurrent requests → exactly N forwarded', async () => {
      await exactLimitAcross(ctx.gws, ctx.upstream, 'trio-co');
    });

    test("several windows are exact across 3 instances: a company's own and a key's stricter one", async () => {
      await exactWindowsAcross(ctx.gws, ctx.upstream, 'windows-co');
    });

    test('revocation reaches every instance within 1 s', async () => {
      const took = await revocationReachesAll(ctx.gws, 'revoke-co');
      process.stdout.write(
        `# ${topology.name}: revocation seen by the 3 instances after ${took.join(', ')} ms\n`,
      );
    });

    test(`audit stream and lastUsedAt work on ${topology.name}`, async () => {
      await auditAndLastUsed(ctx.gws, 'audit-co');
    });

    topology.specific(() => ctx);

    test('after the failovers, without restarting anything: exact limit, revocation within 1 s, new keys', async () => {
      await topology.settle(ctx.topo);
      await exactLimitAcross(ctx.gws, ctx.upstream, 'trio-after-co');
      await revocationReachesAll(ctx.gws, 'revoke-after-co');
      await keyCreatedOnOneWorksOnAll(ctx.gws, 'everywhere-after-co');
      await auditAndLastUsed(ctx.gws, 'audit-after-co');
      for (const gw of ctx.gws) {
        const r = await fetch(`http://127.0.0.1:${gw.port}/readyz`);
        assert.equal(r.status, 200);
      }
    });
  });
}

// ---- Cluster -------------------------------------------------------------------------------------

const CLUSTER: Topology<TestCluster> = {
  name: 'cluster',
  title: 'Redis Cluster (3 masters + 3 replicas) behind 3 gateway instances',
  start: () => startCluster(),
  stop: (cluster) => cluster.stop(),
  redis: (cluster) => ({ url: `redis://127.0.0.1:${cluster.seeds[0]!.port}`, cluster: cluster.seeds }),
  settle: (cluster) => cluster.waitHealthy(),
  specific(ctx) {
    clusterStoreContract(ctx);
    clusterSettle(ctx);
    test('a hung node holding invalidation subscriptions: instances move their subscription and miss no revocation', async () => {
      await hungSubscriberNode(ctx());
    });
    clusterFailovers(ctx);
  },
};

/**
 * The concurrency section of the store contract (issue 10), on Cluster: every script touches one
 * key, so each runs on the node owning that key's slot. Before the failover tests, on a healthy
 * cluster.
 */
function clusterStoreContract(ctx: () => ScaleContext<TestCluster>): void {
  describe('KeyStore contract, concurrency section, on Cluster', () => {
    let store: RedisKeyStore;
    before(async () => {
      const { seeds } = ctx().topo;
      const cfg = {
        url: `redis://127.0.0.1:${seeds[0]!.port}`,
        cluster: seeds,
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
    auditQueryContract(() => store, 'cluster');
    auditPagingContract(() => store, 'cluster');
  });
}

/**
 * What an insurance admitted while Redis failed is written back to a company's counters with one
 * script per company (LeaseLimiter.settle): the counters and their records share the company's
 * hash tag, so it runs on Cluster whichever node owns the slot, and counts once.
 */
function clusterSettle(ctx: () => ScaleContext<TestCluster>): void {
  test('insurance admissions are written back on Cluster, once, in every slot', async () => {
    const { seeds } = ctx().topo;
    const client = createRedisClient({
      url: `redis://127.0.0.1:${seeds[0]!.port}`,
      cluster: seeds,
      keyPrefix: 'cs:',
      commandTimeoutMs: 1000,
      connectTimeoutMs: 2000,
    });
    try {
      assert.ok(await waitForReady(client, 5000), 'cluster client did not become ready');
      const l = new LeaseLimiter({ redis: client, maxLease: 1, divisor: 1 });
      // Enough companies to land on every master.
      for (let i = 0; i < 12; i++) {
        const ws = [
          { key: `cs:rl:{settle-${i}}:c60`, points: 10, duration: 60 },
          { key: `cs:rl:{settle-${i}}:k:k1:60`, points: 8, duration: 60 },
        ];
        const written = ws.map((w) => ({ key: w.key, msLeft: 30_000, total: 4 }));
        await l.settle('p1', written);
        await l.settle('p1', written); // a retry counts nothing more
        const ds = await Promise.all(Array.from({ length: 8 }, () => l.consume(`settle-${i}`, ws)));
        assert.equal(ds.filter((d) => d.allowed).length, 4, `company ${i}: the key's 8 − 4`);
      }
    } finally {
      client.disconnect();
    }
  });
}

async function hungSubscriberNode({ topo: cluster, gws }: ScaleContext<TestCluster>): Promise<void> {
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
    await eventually(async () => total(await cluster.clientsByNode(':invalidations')) === 3, 5000, 100).catch(
      async () =>
        assert.fail(
          `every instance subscribed again: ${total(await cluster.clientsByNode(':invalidations'))} of 3`,
        ),
    );
  } finally {
    await cluster.resume(port);
  }
}

/** The three failovers under load, each aimed at the master that owns the key under test. */
function clusterFailovers(ctx: () => ScaleContext<TestCluster>): void {
  test('graceful CLUSTER FAILOVER of the master holding the limiter key, under load', async () => {
    const { topo: cluster, gws, load } = ctx();
    const master = await cluster.masterOfKey('ng:rl:bulk:load-co');
    const f = await loadThroughFailover(gws, load.key, () => cluster.failover(master), {
      label: 'cluster CLUSTER FAILOVER',
    });
    assertFailoverFigures(f, MAX_ANSWER_MS);
  });

  test('a hung master (SIGSTOP) holding the limiter key, under load', async () => {
    const { topo: cluster, gws, load } = ctx();
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
    const { topo: cluster, gws, load } = ctx();
    const master = await cluster.masterOfKey(`ng:kh:${hashApiKey(load.key)}`);
    const f = await loadThroughFailover(gws, load.key, () => cluster.killMaster(master), {
      label: 'cluster master killed',
    });
    assertFailoverFigures(f, MAX_ANSWER_MS);
  });
}

// ---- Sentinel ------------------------------------------------------------------------------------

const SENTINEL: Topology<TestSentinel> = {
  name: 'sentinel',
  title: 'Redis Sentinel (master + 1 replica + 3 sentinels) behind 3 gateway instances',
  start: () => startSentinel(),
  stop: (topo) => topo.stop(),
  // The URL's host and port are not used with sentinels (credentials and TLS would be).
  redis: (topo) => ({
    url: 'redis://127.0.0.1:6390',
    sentinels: topo.sentinelAddrs,
    sentinelName: topo.name,
  }),
  // Sentinel's drills each wait for the promotion to complete: nothing left to wait for.
  settle: async () => {},
  specific: sentinelFailovers,
};

/** The three failovers under load; the master is the one node holding every key. */
function sentinelFailovers(ctx: () => ScaleContext<TestSentinel>): void {
  test('graceful SENTINEL FAILOVER under load', async () => {
    const { topo, gws, load } = ctx();
    const f = await loadThroughFailover(gws, load.key, () => topo.failover(), {
      label: 'sentinel SENTINEL FAILOVER',
    });
    assertFailoverFigures(f, MAX_ANSWER_MS);
    await revocationReachesAll(gws, 'revoke-after-switch-co');
  });

  test('a hung master (SIGSTOP) under load, then it comes back as a replica', async () => {
    const { topo, gws, load } = ctx();
    let paused = 0;
    const f = await loadThroughFailover(
      gws,
      load.key,
      async () => {
        paused = await topo.master();
        await topo.pauseMaster();
      },
      { label: 'sentinel master paused' },
    );
    try {
      assertFailoverFigures(f, MAX_ANSWER_MS);
      await revocationReachesAll(gws, 'revoke-after-pause-co');
    } finally {
      const took = await topo.resume(paused);
      process.stdout.write(`# sentinel: old master ${paused} back as a replica ${took} ms after SIGCONT\n`);
    }
  });

  test('killing the master under load: no unknown key admitted, no 500, bounded answers', async () => {
    const { topo, gws, load } = ctx();
    const f = await loadThroughFailover(gws, load.key, () => topo.killMaster(), {
      label: 'sentinel master killed',
    });
    assertFailoverFigures(f, MAX_ANSWER_MS);
  });
}

scaleSuite(CLUSTER);
scaleSuite(SENTINEL);
