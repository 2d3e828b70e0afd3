import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { UpstreamPool, type PoolEvent } from '../../../src/upstream/pool.js';

const outlier = { consecutiveFailures: 2, baseEjectionMs: 1000, maxEjectionMs: 8000, maxEjectedPercent: 100 };
const targets = [
  { url: 'http://u:p@a:1', weight: 1 },
  { url: 'http://b:1/base/', weight: 1 },
];

describe('UpstreamPool', () => {
  test('skips tried and ejected targets; panic picks among all when none is healthy', () => {
    let now = 1000;
    const events: PoolEvent[] = [];
    const pool = new UpstreamPool({
      targets,
      balancing: 'round-robin',
      outlier,
      whenNoneHealthy: 'panic',
      now: () => now,
      onEvent: (e) => events.push(e),
    });
    const [a, b] = pool.targets;
    assert.equal(b!.basePath, '/base');
    assert.equal(pool.pick('c', new Set([a!])), b);
    pool.onResult(a!, 'connect');
    pool.onResult(a!, 'connect');
    assert.equal(events[0]?.kind, 'ejected');
    for (let i = 0; i < 4; i++) assert.equal(pool.pick('c', new Set()), b);
    pool.onResult(b!, 'status 503');
    pool.onResult(b!, 'status 503');
    assert.equal(pool.healthyCount(), 0);
    const first = pool.pick('c', new Set());
    assert.ok(first === a || first === b);
    assert.equal(pool.pick('c', new Set([a!, b!])), undefined);
    assert.deepEqual(
      events.filter((e) => e.kind === 'none-healthy'),
      [{ kind: 'none-healthy', mode: 'panic', first: true }],
    );
    now += 1000;
    assert.equal(pool.healthyCount(), 2, 'back after the ejection time');
    const view = pool.view();
    assert.equal(view[0]!.url.includes(':p@'), false, 'credentials masked');
  });

  test('refuse mode answers refuse; active checks mark unhealthy and end an ejection', () => {
    const now = 1000;
    const pool = new UpstreamPool({
      targets: targets.slice(0, 1),
      balancing: 'least-requests',
      outlier,
      whenNoneHealthy: 'refuse',
      healthyThreshold: 2,
      unhealthyThreshold: 2,
      now: () => now,
    });
    const [a] = pool.targets;
    pool.onCheck(a!, false);
    assert.equal(pool.pick('c', new Set()), a);
    pool.onCheck(a!, false);
    assert.equal(pool.pick('c', new Set()), 'refuse');
    assert.equal(pool.view()[0]!.state, 'unhealthy');
    pool.onCheck(a!, true);
    pool.onCheck(a!, true);
    assert.equal(pool.pick('c', new Set()), a);
    pool.onResult(a!, 'timeout');
    pool.onResult(a!, 'timeout');
    assert.equal(pool.view()[0]!.state, 'ejected');
    pool.onCheck(a!, true);
    pool.onCheck(a!, true);
    assert.equal(pool.view()[0]!.state, 'healthy', 'a passing check ends the ejection');
  });

  test('setTargets keeps the state of targets that stay', () => {
    const pool = new UpstreamPool({ targets, balancing: 'round-robin', outlier, whenNoneHealthy: 'panic' });
    const a = pool.targets[0]!;
    a.ejections = 3;
    pool.setTargets([targets[0]!, { url: 'http://c:1', weight: 2 }]);
    assert.equal(pool.targets[0], a);
    assert.equal(pool.targets[1]!.weight, 2);
  });
});
