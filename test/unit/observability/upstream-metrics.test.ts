import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { createUpstreamMetrics } from '../../../src/observability/upstream-metrics.js';

describe('createUpstreamMetrics', () => {
  test('the health gauge reads the pools at each scrape; a second registration takes the names over', async () => {
    const registry = new Registry();
    let healthy = true;
    createUpstreamMetrics(registry, () => [{ route: '/a', target: 'http://b:1/', healthy }]);
    const m = createUpstreamMetrics(registry, () => [{ route: '/a', target: 'http://b:1/', healthy }]);
    m.retries.labels('/a').inc();
    let text = await registry.metrics();
    assert.match(text, /gateway_upstream_target_healthy\{route="\/a",target="http:\/\/b:1\/"\} 1/);
    assert.match(text, /gateway_upstream_retries_total\{route="\/a"\} 1/);
    healthy = false;
    text = await registry.metrics();
    assert.match(text, /gateway_upstream_target_healthy\{route="\/a",target="http:\/\/b:1\/"\} 0/);
  });
});
