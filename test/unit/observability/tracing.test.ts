import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger } from '../../../src/observability/logger.js';
import {
  createTracing,
  scrubTraceState,
  tracingSettings,
  TRACING_OFF,
} from '../../../src/observability/tracing.js';

const EP = 'http://collector:4318';

describe('tracingSettings', () => {
  test('off unless an OTLP endpoint is set, or when disabled', () => {
    assert.deepEqual(tracingSettings({}), { ok: true, enabled: false });
    assert.deepEqual(tracingSettings({ OTEL_SERVICE_NAME: 'x' }), { ok: true, enabled: false });
    assert.deepEqual(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: EP, OTEL_SDK_DISABLED: 'true' }), {
      ok: true,
      enabled: false,
    });
    assert.deepEqual(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: EP, OTEL_TRACES_EXPORTER: 'none' }), {
      ok: true,
      enabled: false,
    });
  });

  test('the protocol: http/protobuf by default, the traces variable first', () => {
    assert.deepEqual(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: EP }), {
      ok: true,
      enabled: true,
      protocol: 'http/protobuf',
    });
    assert.deepEqual(
      tracingSettings({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${EP}/v1/traces`,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      }),
      { ok: true, enabled: true, protocol: 'http/json' },
    );
    assert.deepEqual(
      tracingSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: EP,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      }),
      { ok: true, enabled: true, protocol: 'http/json' },
    );
  });

  test('grpc, an unknown protocol or exporter, a bad endpoint: a problem naming the variable, not the value', () => {
    const grpc = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: EP, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    assert.equal(grpc.ok, false);
    assert.match(
      !grpc.ok ? grpc.problem : '',
      /^OTEL_EXPORTER_OTLP_PROTOCOL=grpc: .*not installed.*http\/protobuf/,
    );
    const other = tracingSettings({
      OTEL_EXPORTER_OTLP_ENDPOINT: EP,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'thrift',
    });
    assert.deepEqual(other, {
      ok: false,
      problem: 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: must be http/protobuf or http/json',
    });
    const secret = tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318/?token=s3cret' });
    assert.deepEqual(secret, {
      ok: false,
      problem: 'OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL',
    });
    assert.equal(
      tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: EP, OTEL_TRACES_EXPORTER: 'zipkin' }).ok,
      false,
    );
  });
});

describe('createTracing', () => {
  const logger = createLogger({ level: 'silent' });
  test('off: the shared no-op, whose guard is false', async () => {
    assert.equal(await createTracing({ env: {}, logger }), TRACING_OFF);
    assert.equal(TRACING_OFF.on, false);
    assert.ok(Object.isFrozen(TRACING_OFF));
  });
  test('a settings problem throws before anything starts', async () => {
    await assert.rejects(
      createTracing({
        env: { OTEL_EXPORTER_OTLP_ENDPOINT: EP, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' },
        logger,
      }),
      /tracing: OTEL_EXPORTER_OTLP_PROTOCOL=grpc/,
    );
  });
  test('on with an endpoint; shuts down cleanly with nothing sent', async () => {
    const t = await createTracing({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }, logger });
    assert.equal(t.on, true);
    await t.shutdown();
  });
});

describe('scrubTraceState', () => {
  test('drops entries that may hold key material, keeps the others in order', () => {
    const key = 'nk_live_' + 'A1b2C3d4'.repeat(4) + 'Zz9876';
    assert.equal(scrubTraceState(`a=1,vendor=${key}, b=x-2`), 'a=1,b=x-2');
    assert.equal(scrubTraceState(['a=1', `k=${key.slice(8)}`]), 'a=1');
    assert.equal(scrubTraceState('p=nk_'), undefined);
    assert.equal(scrubTraceState(''), undefined);
    assert.equal(
      scrubTraceState('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7'),
      'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7',
    );
  });

  test("an entry the request's key-material check finds material in goes too (a key in base64 split by + or /)", () => {
    // Runs of fewer than 32 letters and digits: only the request's check can tell.
    const entry = 'vendor=AbCdEfGhIjKlMnOp+QrStUvWxYz0123/456789abcdefghij';
    assert.equal(scrubTraceState(`a=1,${entry}`), `a=1,${entry}`);
    assert.equal(
      scrubTraceState(`a=1,${entry}`, (text) => text.includes('+QrSt')),
      'a=1',
    );
  });
});
