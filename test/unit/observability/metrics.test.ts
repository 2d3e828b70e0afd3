import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createMetrics, routeStatusCache, statusClass } from '../../../src/observability/metrics.js';

describe('metrics', () => {
  test("process and Node metrics carry prom-client's standard names, without a prefix", async () => {
    const m = createMetrics({ processMetrics: true, build: { version: '1.2.3' } });
    const names = (await m.registry.getMetricsAsJSON()).map((x) => x.name);
    // The names stock dashboards (Grafana's Node.js ones) query.
    for (const n of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'process_start_time_seconds',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
      'nodejs_version_info',
    ])
      assert.ok(names.includes(n), `${n} in ${names.join()}`);
    assert.deepEqual(
      names.filter((n) => n.startsWith('gateway_process') || n.startsWith('gateway_nodejs')),
      [],
    );
  });

  test('gateway_build_info: 1, with version, Node version and commit (unknown when not given)', async () => {
    const a = await createMetrics({
      processMetrics: false,
      build: { version: '1.2.3', commit: 'abc123' },
    }).registry.getSingleMetricAsString('gateway_build_info');
    assert.match(
      a,
      new RegExp(
        `gateway_build_info\\{version="1.2.3",node_version="${process.version}",commit="abc123"\\} 1`,
      ),
    );
    const b = await createMetrics({ processMetrics: false }).registry.getSingleMetricAsString(
      'gateway_build_info',
    );
    assert.match(b, /version="unknown",node_version="v[\d.]+",commit="unknown"\} 1/);
  });

  test('status classes are bounded: 1xx-5xx, anything else aborted', () => {
    assert.deepEqual([0, 101, 200, 204, 302, 404, 429, 502, 599, 600, 999].map(statusClass), [
      'aborted',
      '1xx',
      '2xx',
      '2xx',
      '3xx',
      '4xx',
      '4xx',
      '5xx',
      '5xx',
      'aborted',
      'aborted',
    ]);
  });

  test('routeStatusCache resolves a child once per route and status', async () => {
    const m = createMetrics({ processMetrics: false });
    let calls = 0;
    const counting = {
      labels: (...v: string[]) => {
        calls++;
        return m.duration.labels(...v);
      },
    };
    const by = routeStatusCache(counting, statusClass);
    for (let i = 0; i < 5; i++) by('/a', 200).observe(0.01);
    by('/a', 201).observe(0.01);
    by('/b', 0).observe(0.01);
    assert.equal(calls, 3);
    const text = await m.registry.getSingleMetricAsString('gateway_request_duration_seconds');
    assert.match(text, /_count\{route="\/a",status_class="2xx"\} 6/);
    assert.match(text, /_count\{route="\/b",status_class="aborted"\} 1/);
  });
});
