import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key.js';
import { createCompanyAndKey } from '../helpers/admin.js';
import { runCli, startServe, stopCli } from '../helpers/cli-run.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, send } from '../helpers/http.js';
import { freePort } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

const CLIENT_TRACE = '0af7651916cd43dd8448eb211c80319c';
const CLIENT_PARENT = `00-${CLIENT_TRACE}-b7ad6b7169203331-01`;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;

/**
 * Flushes until the exporter holds `servers` finished server spans: the server span ends on the
 * response's 'close', which may come just after the client has read the answer.
 */
async function settled(gw: TestGateway, exporter: InMemorySpanExporter, servers = 1): Promise<void> {
  await eventually(async () => {
    await gw.gw.flushTraces();
    return exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.SERVER).length >= servers;
  }, 5000);
}

/** The spans of one trace, by name; the server span is the one of kind SERVER. */
function traceOf(spans: ReadableSpan[], traceId: string) {
  const mine = spans.filter((s) => s.spanContext().traceId === traceId);
  const server = mine.find((s) => s.kind === SpanKind.SERVER);
  assert.ok(server, `no server span in trace ${traceId}`);
  const child = (name: string) => mine.find((s) => s.name === name);
  return { mine, server, child };
}

describe('OpenTelemetry tracing, in-memory exporter', () => {
  let upstream: RecordingUpstream;
  let t: TestGateway;
  let trusted: TestGateway;
  let off: TestGateway;
  const exporter = new InMemorySpanExporter();
  const trustedExporter = new InMemorySpanExporter();
  let key: string;
  let keyId: string;

  before(async () => {
    upstream = await startUpstream();
    const cfg = {
      store: { type: 'memory' as const },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
    };
    t = await startTestGateway(cfg, { traceExporter: exporter, processMetrics: false });
    trusted = await startTestGateway(
      { ...cfg, server: { trustedProxies: ['127.0.0.1'] } },
      { traceExporter: trustedExporter, processMetrics: false },
    );
    off = await startTestGateway(cfg, { processMetrics: false });
    const created = await createCompanyAndKey(t.gw.service, 'acme');
    key = created.key;
    keyId = created.id;
    await createCompanyAndKey(off.gw.service, 'acme');
  });
  after(async () => {
    await t?.close();
    await trusted?.close();
    await off?.close();
    await upstream?.close();
  });

  test('one server span with route, company, key id, decision and status; child spans; traceparent to the upstream', async () => {
    exporter.reset();
    upstream.received.length = 0;
    const r = await send(t.port, '/notify/v1/send?to=someone&x=1', { headers: { 'X-API-Key': key } });
    assert.equal(r.status, 200);
    await settled(t, exporter);
    const seen = upstream.received[0]!.headers.traceparent;
    const m = TRACEPARENT.exec(String(seen));
    assert.ok(m, `the upstream saw traceparent ${String(seen)}`);
    const { server, child, mine } = traceOf(exporter.getFinishedSpans(), m[1]!);
    assert.equal(server.name, 'GET /notify/v1');
    assert.equal(server.parentSpanContext, undefined, 'a new trace');
    assert.deepEqual(
      {
        route: server.attributes['http.route'],
        method: server.attributes['http.request.method'],
        status: server.attributes['http.response.status_code'],
        company: server.attributes['gateway.company_id'],
        keyId: server.attributes['gateway.key_id'],
        decision: server.attributes['gateway.decision'],
        requestId: server.attributes['gateway.request_id'],
      },
      {
        route: '/notify/v1',
        method: 'GET',
        status: 200,
        company: 'acme',
        keyId,
        decision: 'forwarded',
        requestId: r.headers['x-request-id'],
      },
    );
    const lookup = child('key lookup');
    const limit = child('rate limit');
    const up = child('upstream');
    assert.ok(lookup && limit && up, mine.map((s) => s.name).join(', '));
    for (const s of [lookup, limit, up])
      assert.equal(s.parentSpanContext?.spanId, server.spanContext().spanId);
    assert.equal(lookup.attributes['gateway.outcome'], 'ok');
    assert.match(String(limit.attributes['gateway.outcome']), /^allowed/);
    assert.equal(up.kind, SpanKind.CLIENT);
    // The upstream continues the upstream span: same trace, that span as its parent.
    assert.equal(m[2], up.spanContext().spanId);
    // Never the key, never the query string, in any span.
    const dump = JSON.stringify(
      exporter.getFinishedSpans().map((s) => ({ n: s.name, a: s.attributes, e: s.events, l: s.links })),
    );
    assert.ok(!dump.includes(key), 'the key is in a span');
    assert.ok(!dump.includes(key.slice(8)), 'the key body is in a span');
    assert.ok(!dump.includes('someone'), 'the query is in a span');
    // The access line names the trace, so a log store links it to the spans.
    const line = t.logs().find((l) => l.msg === 'request' && l.requestId === r.headers['x-request-id']);
    assert.equal(line?.trace_id, server.spanContext().traceId);
  });

  test('a refused request: decision and status on the server span, no upstream span', async () => {
    exporter.reset();
    const bad = key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');
    const r = await send(t.port, '/notify/v1/send', { headers: { 'X-API-Key': bad } });
    assert.equal(r.status, 401);
    await settled(t, exporter);
    const spans = exporter.getFinishedSpans();
    const server = spans.find((s) => s.kind === SpanKind.SERVER)!;
    assert.equal(server.attributes['gateway.decision'], 'INVALID_KEY');
    assert.equal(server.attributes['http.response.status_code'], 401);
    assert.equal(server.attributes['gateway.key_id'], undefined);
    assert.equal(spans.find((s) => s.name === 'key lookup')?.attributes['gateway.outcome'], 'INVALID_KEY');
    assert.equal(
      spans.find((s) => s.name === 'upstream'),
      undefined,
    );
    assert.ok(!JSON.stringify(spans.map((s) => s.attributes)).includes(bad.slice(8)));
  });

  test("a client's traceparent: continued from a trusted proxy, only linked from anyone else", async () => {
    exporter.reset();
    trustedExporter.reset();
    upstream.received.length = 0;
    const headers = { 'X-API-Key': key, traceparent: CLIENT_PARENT, tracestate: 'client=1' };
    assert.equal((await send(t.port, '/notify/v1/a', { headers })).status, 200);
    await settled(t, exporter);
    const untrustedSeen = TRACEPARENT.exec(String(upstream.received[0]!.headers.traceparent))!;
    assert.notEqual(untrustedSeen[1], CLIENT_TRACE, 'an untrusted client joined our trace');
    assert.equal(
      upstream.received[0]!.headers.tracestate,
      undefined,
      "the client's tracestate was forwarded",
    );
    const { server } = traceOf(exporter.getFinishedSpans(), untrustedSeen[1]!);
    assert.equal(server.links[0]?.context.traceId, CLIENT_TRACE);

    const trustedKey = await createCompanyAndKey(trusted.gw.service, 'acme-trusted');
    assert.equal(
      (await send(trusted.port, '/notify/v1/b', { headers: { ...headers, 'X-API-Key': trustedKey.key } }))
        .status,
      200,
    );
    await settled(trusted, trustedExporter);
    const trustedSeen = TRACEPARENT.exec(String(upstream.received[1]!.headers.traceparent))!;
    assert.equal(trustedSeen[1], CLIENT_TRACE);
    const continued = traceOf(trustedExporter.getFinishedSpans(), CLIENT_TRACE).server;
    assert.equal(continued.parentSpanContext?.spanId, 'b7ad6b7169203331');
  });

  test("a key in the client's tracestate reaches no exported span and no upstream, trusted or not", async () => {
    exporter.reset();
    trustedExporter.reset();
    upstream.received.length = 0;
    const untrustedKey = (await createCompanyAndKey(t.gw.service, 'acme-state')).key;
    const trustedKey = (await createCompanyAndKey(trusted.gw.service, 'acme-state-trusted')).key;
    for (const [gw, exp, k] of [
      [t, exporter, untrustedKey],
      [trusted, trustedExporter, trustedKey],
    ] as const) {
      const headers = {
        'X-API-Key': k,
        traceparent: CLIENT_PARENT,
        tracestate: `vendor=${k},other=ok-1,body=${k.slice(k.lastIndexOf('_') + 1)}`,
      };
      assert.equal((await send(gw.port, '/notify/v1/state', { headers })).status, 200);
      await settled(gw, exp);
      const body = k.slice(k.lastIndexOf('_') + 1);
      const spans = exp.getFinishedSpans().map((sp) => ({
        context: sp.spanContext(),
        parent: sp.parentSpanContext,
        links: sp.links,
        attributes: sp.attributes,
        events: sp.events,
        name: sp.name,
      }));
      const text = JSON.stringify(spans, (_k, v: unknown) =>
        v && typeof v === 'object' && 'serialize' in v ? (v as { serialize(): string }).serialize() : v,
      );
      assert.ok(!text.includes(body), `the key is in an exported span: ${text}`);
    }
    // A trusted proxy's other tracestate entries are continued; none of the key's.
    const forwarded = upstream.received.map((r) => String(r.headers.tracestate ?? ''));
    assert.ok(!forwarded.some((v) => v.includes(untrustedKey.slice(8)) || v.includes(trustedKey.slice(8))));
    assert.equal(upstream.received[1]!.headers.tracestate, 'other=ok-1');
  });

  test('an upstream that is down: the upstream span ends in error with the 502', async () => {
    const dead = await startTestGateway(
      { store: { type: 'memory' }, routes: [{ prefix: '/notify/v1', target: 'http://127.0.0.1:1' }] },
      { traceExporter: exporter, processMetrics: false },
    );
    try {
      exporter.reset();
      const k = await createCompanyAndKey(dead.gw.service, 'acme');
      assert.equal((await send(dead.port, '/notify/v1/x', { headers: { 'X-API-Key': k.key } })).status, 502);
      await settled(dead, exporter);
      const spans = exporter.getFinishedSpans();
      const up = spans.find((s) => s.name === 'upstream')!;
      assert.equal(up.status.code, 2 /* ERROR */);
      const server = spans.find((s) => s.kind === SpanKind.SERVER)!;
      assert.equal(server.attributes['gateway.decision'], 'UPSTREAM_UNREACHABLE');
      assert.equal(server.status.code, 2);
    } finally {
      await dead.close();
    }
  });

  test('off by default: no spans, and traceparent passes through untouched', async () => {
    upstream.received.length = 0;
    const k = await off.gw.service.createKey('acme', {});
    assert.ok(k.ok);
    const r = await send(off.port, '/notify/v1/c', {
      headers: { 'X-API-Key': k.value.key, traceparent: CLIENT_PARENT },
    });
    assert.equal(r.status, 200);
    assert.equal(upstream.received[0]!.headers.traceparent, CLIENT_PARENT);
  });
});

interface Export {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** A real OTLP/HTTP endpoint on loopback: records every POST and answers 200. */
async function startCollector(): Promise<{ url: string; posts: Export[]; close(): Promise<void> }> {
  const posts: Export[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      posts.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      const json = String(req.headers['content-type']).startsWith('application/json');
      res.setHeader('Content-Type', json ? 'application/json' : 'application/x-protobuf');
      res.end(json ? '{}' : '');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, posts, close: () => new Promise((r) => server.close(() => r())) };
}

/** `notify-gateway serve` with the file store and one key, as users run it, with `env` added. */
async function serve(
  upstreamUrl: string,
  env: Record<string, string>,
): Promise<{ proc: ChildProcess; port: number; key: string; output: () => string }> {
  const dir = mkdtempSync(join(tmpdir(), 'ng-otel-'));
  const key = generateApiKey('live');
  writeFileSync(
    join(dir, 'keys.yaml'),
    `companies:\n  - id: acme\n    tier: free\n    keys:\n      - id: k1\n        hash: ${hashApiKey(key)}\n`,
  );
  const port = await freePort();
  writeFileSync(
    join(dir, 'gateway.yaml'),
    `server: { port: ${port}, host: 127.0.0.1 }\nadmin: { enabled: false }\nroutes: [{ prefix: /notify/v1, target: '${upstreamUrl}' }]\n`,
  );
  const { proc, output } = await startServe(['--config', join(dir, 'gateway.yaml')], env, port);
  return { proc, port, key, output };
}

describe('OpenTelemetry export over OTLP/HTTP, `serve` with the OTEL_* variables', () => {
  let upstream: RecordingUpstream;
  let collector: Awaited<ReturnType<typeof startCollector>>;
  before(async () => {
    upstream = await startUpstream();
    collector = await startCollector();
  });
  after(async () => {
    await upstream?.close();
    await collector?.close();
  });

  test('http/json: the spans reach the endpoint with the service name and resource attributes', async () => {
    const gw = await serve(upstream.url, {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_SERVICE_NAME: 'gateway-under-test',
      OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=ci',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    try {
      upstream.received.length = 0;
      const r = await send(gw.port, '/notify/v1/send?q=1', { headers: { 'X-API-Key': gw.key } });
      assert.equal(r.status, 200);
      const traceId = TRACEPARENT.exec(String(upstream.received[0]!.headers.traceparent))![1]!;
      // A batch may hold part of a trace (the children end first): read every post.
      type OtlpJson = {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { spans: { name: string; traceId: string }[] }[];
        }[];
      };
      const docs = () => collector.posts.map((p) => JSON.parse(p.body.toString()) as OtlpJson);
      const spansOf = () =>
        docs()
          .flatMap((d) => d.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((s) => s.spans)))
          .filter((s) => s.traceId === traceId);
      await eventually(async () => spansOf().length >= 4, 10_000, 50);
      for (const post of collector.posts) {
        assert.equal(post.path, '/v1/traces');
        assert.match(String(post.headers['content-type']), /^application\/json/);
        assert.ok(!post.body.includes(gw.key.slice(8)), 'the key was exported');
      }
      const rs = docs()[0]!.resourceSpans[0]!;
      const attr = (k: string) => rs.resource.attributes.find((a) => a.key === k)?.value.stringValue;
      assert.equal(attr('service.name'), 'gateway-under-test');
      assert.equal(attr('deployment.environment.name'), 'ci');
      assert.deepEqual(
        spansOf()
          .map((s) => s.name)
          .sort(),
        ['GET /notify/v1', 'key lookup', 'rate limit', 'upstream'],
      );
    } finally {
      assert.equal(await stopCli(gw.proc), 0, gw.output());
    }
  });

  test('http/protobuf by default; the last spans are flushed on SIGTERM', async () => {
    const before = collector.posts.length;
    const gw = await serve(upstream.url, {
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/custom/traces`,
      OTEL_SERVICE_NAME: 'gateway-proto',
      // Longer than the test: only the shutdown flush can deliver these spans.
      OTEL_BSP_SCHEDULE_DELAY: '60000',
    });
    upstream.received.length = 0;
    let code: number | null = null;
    try {
      assert.equal((await send(gw.port, '/notify/v1/p', { headers: { 'X-API-Key': gw.key } })).status, 200);
    } finally {
      code = await stopCli(gw.proc);
    }
    assert.equal(code, 0, gw.output());
    const posts = collector.posts.slice(before);
    assert.equal(posts.length, 1, 'one export, at shutdown');
    assert.equal(posts[0]!.path, '/custom/traces');
    assert.equal(posts[0]!.headers['content-type'], 'application/x-protobuf');
    // Protobuf carries strings as they are and ids as raw bytes.
    const traceId = TRACEPARENT.exec(String(upstream.received[0]!.headers.traceparent))![1]!;
    assert.ok(posts[0]!.body.includes('gateway-proto'));
    assert.ok(posts[0]!.body.includes(Buffer.from(traceId, 'hex')));
  });

  test('grpc: `serve` and `config check` refuse it as a configuration error (exit 2), naming the variable', async () => {
    for (const args of [['serve'], ['config', 'check']]) {
      const { code, stderr } = await runCli(args, {
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        PORT: '0',
        ADMIN_PORT: '0',
      });
      assert.equal(code, 2, `${args.join(' ')}: ${stderr}`);
      assert.match(stderr, /OTEL_EXPORTER_OTLP_PROTOCOL=grpc: the gRPC exporter is not installed/);
    }
  });
});
