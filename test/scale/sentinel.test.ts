import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TestGateway } from '../helpers/gateway.js';
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
import { startSentinel, type TestSentinel } from '../helpers/topologies.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/**
 * Upper bound for any single answer during a failover: a request makes at most 3 sequential store
 * calls (key, company, limiter), each bounded by commandTimeoutMs (500 ms by default), plus slack
 * for this 2-core machine.
 */
const MAX_ANSWER_MS = 2500;

describe('Redis Sentinel (master + 1 replica + 3 sentinels) behind 3 gateway instances', () => {
  let topo: TestSentinel;
  let upstream: RecordingUpstream;
  let gws: TestGateway[] = [];
  let load: { id: string; key: string };

  before(async () => {
    topo = await startSentinel();
    upstream = await startUpstream();
    gws = await startGateways(
      3,
      // The URL's host and port are not used with sentinels (credentials and TLS would be).
      { url: 'redis://127.0.0.1:6390', sentinels: topo.sentinelAddrs, sentinelName: topo.name },
      upstream,
    );
    load = await createCompanyAndKey(gws[0]!, 'load-co', 'bulk');
  });
  after(async () => {
    await Promise.all(gws.map((g) => g.close()));
    await upstream?.close();
    await topo?.stop();
  });

  test('a key created through one instance authenticates on every instance', async () => {
    await keyCreatedOnOneWorksOnAll(gws, 'everywhere-co');
  });

  test('the tier limit is exact across 3 instances: 3N concurrent requests → exactly N forwarded', async () => {
    await exactLimitAcross(gws, upstream, 'trio-co');
  });

  test('revocation reaches every instance within 1 s', async () => {
    const took = await revocationReachesAll(gws, 'revoke-co');
    process.stdout.write(`# sentinel: revocation seen by the 3 instances after ${took.join(', ')} ms\n`);
  });

  test('audit stream and lastUsedAt work on Sentinel', async () => {
    await auditAndLastUsed(gws, 'audit-co');
  });

  test('graceful SENTINEL FAILOVER under load', async () => {
    const f = await loadThroughFailover(gws, load.key, () => topo.failover(), {
      label: 'sentinel SENTINEL FAILOVER',
    });
    assertFailoverFigures(f, MAX_ANSWER_MS);
    await revocationReachesAll(gws, 'revoke-after-switch-co');
  });

  test('a hung master (SIGSTOP) under load, then it comes back as a replica', async () => {
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
    const f = await loadThroughFailover(gws, load.key, () => topo.killMaster(), {
      label: 'sentinel master killed',
    });
    assertFailoverFigures(f, MAX_ANSWER_MS);
  });

  test('after the failovers, without restarting anything: exact limit, revocation within 1 s, new keys', async () => {
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
