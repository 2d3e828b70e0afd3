import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { after, describe, test } from 'node:test';
import { generateApiKey } from '../../../../src/auth/api-key.js';
import { DEFAULT_METHOD_OVERRIDE_PARAMS, DEFAULT_URL_KEY_PARAMS } from '../../../../src/config/schema.js';
import { createKeyMatcherOf } from '../../../../src/guards/key-material.js';
import { createUrlKeyGuard } from '../../../../src/guards/url-key-guard.js';
import {
  ACCESS_LINE_FIELDS,
  createRequestContext,
  upstreamCause,
} from '../../../../src/http/steps/request-context.js';
import { REDACTED_NAMES } from '../../../../src/observability/logger.js';
import { createMetrics } from '../../../../src/observability/metrics.js';
import { eventually, send } from '../../../helpers/http.js';
import { captureLogger, serveStep, seriesValue, type StepServer } from '../../../helpers/step-server.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** The key checks as app.ts passes them, at the default level. */
const GUARDS = {
  keyMatcherOf: createKeyMatcherOf('default', { maxLength: 256, acceptLegacy: false }),
  checkUrlForKey: createUrlKeyGuard({
    paramNames: DEFAULT_URL_KEY_PARAMS,
    overrideNames: DEFAULT_METHOD_OVERRIDE_PARAMS,
    maxParams: 256,
    maxPathSegments: 128,
    level: 'default',
  }),
};

async function start(over: Partial<Parameters<typeof createRequestContext>[0]> = {}) {
  const log = captureLogger();
  const metrics = createMetrics({ processMetrics: false });
  const step = createRequestContext({
    requestIdHeader: 'x-request-id',
    acceptClientRequestId: false,
    trustedProxies: [],
    ...GUARDS,
    accessLog: true,
    logger: log.logger,
    metrics,
    ...over,
  });
  const srv = await serveStep(step, { state: false });
  servers.push(srv);
  return { srv, log, metrics };
}
const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

describe('request context step', () => {
  test('the access line (written without the redaction pass) holds no field the logger redacts', async () => {
    for (const field of ACCESS_LINE_FIELDS) assert.ok(!REDACTED_NAMES.includes(field), field);
    const { srv, log } = await start();
    const key = 'nk_live_' + 'a1B2c3D4e5'.repeat(3) + 'XyZ9ab';
    await send(srv.port, '/x?y=1', { headers: { 'X-API-Key': key, Authorization: `Bearer ${key}` } });
    await eventually(async () => log.lines().some((l) => l.msg === 'request'), 2000);
    const line = log.lines().find((l) => l.msg === 'request')!;
    const allowed = new Set<string>([...ACCESS_LINE_FIELDS, 'level', 'time', 'service', 'msg']);
    for (const [name, value] of Object.entries(line)) {
      assert.ok(allowed.has(name), `unexpected field ${name}`);
      assert.notEqual(typeof value, 'object', `${name} is not a scalar`);
    }
    assert.ok(!JSON.stringify(line).includes('a1B2c3D4e5'));
  });

  test('a client request id that carries the presented key is not adopted', async () => {
    const { srv } = await start({ acceptClientRequestId: true });
    const key = 'nk_live_' + 'a1B2c3D4e5'.repeat(3) + 'XyZ9ab';
    const leaked = await send(srv.port, '/x', { headers: { 'X-API-Key': key, 'X-Request-Id': key } });
    assert.match(String(leaked.headers['x-request-id']), UUID);
    const fine = await send(srv.port, '/x', { headers: { 'X-API-Key': key, 'X-Request-Id': 'trace-42' } });
    assert.equal(fine.headers['x-request-id'], 'trace-42');
  });

  test('a client request id that carries any key, raw or %-encoded, is not adopted (echoed and logged fields)', async () => {
    const { srv } = await start({ acceptClientRequestId: true });
    const key = generateApiKey('live');
    const other = generateApiKey('test');
    for (const [presented, id] of [
      [key, `req-${key.slice(8)}`],
      [key, other],
      ['', `x-${other}`],
    ] as const) {
      const r = await send(srv.port, '/x', {
        headers: presented ? { 'X-API-Key': presented, 'X-Request-Id': id } : { 'X-Request-Id': id },
      });
      assert.match(String(r.headers['x-request-id']), UUID, id);
    }
  });

  test('the client address from a trusted proxy must be an address; anything else is the peer', async () => {
    const { srv, log } = await start({ trustedProxies: ['127.0.0.1'] });
    const key = generateApiKey('live');
    await send(srv.port, '/a', { headers: { 'X-Forwarded-For': `${key}` } });
    assert.equal(srv.reached[0]!.gw!.clientIp, '127.0.0.1');
    await eventually(async () => log.lines().some((l) => l.msg === 'request'), 2000);
    assert.ok(!JSON.stringify(log.lines()).includes(key.slice(8)));
  });

  test('sets the request state and answers a fresh request id, ignoring the client one', async () => {
    const { srv } = await start();
    const r = await send(srv.port, '/notify/v1/x?q=1', { headers: { 'X-Request-Id': 'client-chosen' } });
    assert.equal(r.status, 200);
    const gw = srv.reached[0]!.gw!;
    assert.match(gw.id, UUID);
    assert.equal(r.headers['x-request-id'], gw.id);
    assert.equal(gw.route, '-');
    assert.equal(gw.clientIp, '127.0.0.1');
    assert.equal(gw.peerTrusted, false);
    assert.equal(typeof gw.start, 'bigint');
  });

  test('reuses a well-formed client request id when allowed, replaces a malformed one', async () => {
    const { srv } = await start({ acceptClientRequestId: true });
    const ok = await send(srv.port, '/a', { headers: { 'X-Request-Id': 'abc.DEF_1:2-3' } });
    assert.equal(ok.headers['x-request-id'], 'abc.DEF_1:2-3');
    assert.equal(srv.reached[0]!.gw!.id, 'abc.DEF_1:2-3');
    for (const bad of ['has space', 'x'.repeat(129), 'semi;colon']) {
      const r = await send(srv.port, '/a', { headers: { 'X-Request-Id': bad } });
      assert.match(String(r.headers['x-request-id']), UUID, bad);
    }
  });

  test('believes X-Forwarded-For only from a trusted proxy', async () => {
    const untrusted = (await start()).srv;
    await send(untrusted.port, '/a', { headers: { 'X-Forwarded-For': '203.0.113.9' } });
    assert.equal(untrusted.reached[0]!.gw!.clientIp, '127.0.0.1');
    const trusted = (await start({ trustedProxies: ['127.0.0.1'] })).srv;
    await send(trusted.port, '/a', { headers: { 'X-Forwarded-For': '203.0.113.9' } });
    assert.equal(trusted.reached[0]!.gw!.clientIp, '203.0.113.9');
    assert.equal(trusted.reached[0]!.gw!.peerTrusted, true);
  });

  test('on close: counts the request, releases the in-flight gauge and writes one access log line without the query', async () => {
    const { srv, log, metrics } = await start();
    const r = await send(srv.port, '/notify/v1/x?api_secret=zzz');
    await eventually(async () => log.lines().some((l) => l.msg === 'request'), 2000);
    const line = log.lines().find((l) => l.msg === 'request')!;
    assert.equal(line.level, 'info');
    assert.equal(line.requestId, r.headers['x-request-id']);
    assert.equal(line.path, '/notify/v1/x');
    assert.equal(line.method, 'GET');
    assert.equal(line.status, 200);
    assert.equal(line.route, '-');
    assert.equal(line.clientIp, '127.0.0.1');
    assert.doesNotMatch(JSON.stringify(log.lines()), /zzz/);
    assert.equal(await seriesValue(metrics.requests, { route: '-', status: '200' }), 1);
    assert.equal(await seriesValue(metrics.inflight), 0);
  });

  test('probes log at debug level; a URL that carried a key is logged redacted', async () => {
    const { srv, log } = await start();
    await send(srv.port, '/healthz');
    const keyed = await startKeyInUrl();
    await send(keyed.srv.port, '/a;api_key=secret-value');
    await eventually(async () => log.lines().length === 1 && keyed.log.lines().length === 1, 2000);
    assert.equal(log.lines()[0]!.level, 'debug');
    assert.equal(keyed.log.lines()[0]!.path, '[redacted: key in URL]');
    assert.doesNotMatch(JSON.stringify(keyed.log.lines()), /secret-value/);
  });

  test('user agent: logged as sent; not logged when it holds key material or is too long', async () => {
    const key = generateApiKey('live');
    const other = generateApiKey('test');
    const { srv, log } = await start();
    const cases: [Record<string, string>, string | undefined][] = [
      [{ 'User-Agent': 'curl/8.5.0' }, 'curl/8.5.0'],
      [{}, undefined],
      // The presented key's body, even without its nk_ prefix; another key whatever the header.
      [{ 'User-Agent': `bot ${key.slice(8)}`, 'X-API-Key': key }, '[redacted: key material]'],
      [{ 'User-Agent': `bot/${other}` }, '[redacted: key material]'],
      [{ 'User-Agent': 'x'.repeat(600) }, '[not logged: too long]'],
    ];
    for (const [headers] of cases) await send(srv.port, '/x', { headers });
    await eventually(async () => log.lines().length === cases.length, 2000);
    assert.deepEqual(
      log.lines().map((l) => l.userAgent),
      cases.map(([, want]) => want),
    );
    const text = JSON.stringify(log.lines());
    assert.ok(!text.includes(key.slice(8)) && !text.includes(other), 'no key material in any line');
  });

  test('bytes in and out are per request, also on a kept-alive connection; time in milliseconds', async () => {
    const log = captureLogger();
    const step = createRequestContext({
      requestIdHeader: 'x-request-id',
      acceptClientRequestId: false,
      trustedProxies: [],
      ...GUARDS,
      accessLog: true,
      logger: log.logger,
      metrics: createMetrics({ processMetrics: false }),
    });
    const srv = await serveStep(step, {
      state: false,
      final: (req, res) => {
        let n = 0;
        req.on('data', (c: Buffer) => (n += c.length));
        req.on('end', () => res.end('y'.repeat(n * 2)));
      },
    });
    servers.push(srv);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const post = (size: number) =>
      new Promise<void>((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port: srv.port, path: '/up', method: 'POST', agent },
          (res) => res.resume().on('end', resolve),
        );
        req.on('error', reject);
        req.end('x'.repeat(size));
      });
    await post(5000);
    await post(10);
    agent.destroy();
    await eventually(async () => log.lines().length === 2, 2000);
    const [big, small] = log.lines() as { bytesIn: number; bytesOut: number; time: string }[];
    // Head and body: the body's size, plus a head of some dozens of bytes.
    assert.ok(big!.bytesIn > 5000 && big!.bytesIn < 5400, `in ${big!.bytesIn}`);
    assert.ok(big!.bytesOut > 10_000 && big!.bytesOut < 10_400, `out ${big!.bytesOut}`);
    assert.ok(
      small!.bytesIn > 10 && small!.bytesIn < 400,
      `in ${small!.bytesIn}: not the connection's total`,
    );
    assert.ok(small!.bytesOut > 20 && small!.bytesOut < 400, `out ${small!.bytesOut}`);
    assert.match(big!.time, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  test('no access log line when the access log is off; metrics still count', async () => {
    const { srv, log, metrics } = await start({ accessLog: false });
    await send(srv.port, '/a');
    await eventually(
      async () => (await seriesValue(metrics.requests, { route: '-', status: '200' })) === 1,
      2000,
    );
    assert.deepEqual(log.lines(), []);
  });

  test('invalid options throw when the step is built', () => {
    const { logger } = captureLogger();
    const metrics = createMetrics({ processMetrics: false });
    const base = {
      requestIdHeader: 'x-request-id',
      acceptClientRequestId: false,
      trustedProxies: [],
      ...GUARDS,
      accessLog: true,
      logger,
      metrics,
    };
    assert.throws(() => createRequestContext({ ...base, keyMatcherOf: undefined as never }), TypeError);
    assert.throws(() => createRequestContext({ ...base, requestIdHeader: 'X-Request-Id' }), TypeError);
    assert.throws(() => createRequestContext({ ...base, requestIdHeader: '' }), TypeError);
    assert.throws(() => createRequestContext({ ...base, trustedProxies: ['not an address'] }));
  });
});

/** The step followed by a handler that marks the URL as having carried a key (as the URL key guard does). */
async function startKeyInUrl() {
  const log = captureLogger();
  const step = createRequestContext({
    requestIdHeader: 'x-request-id',
    acceptClientRequestId: false,
    trustedProxies: [],
    ...GUARDS,
    accessLog: true,
    logger: log.logger,
    metrics: createMetrics({ processMetrics: false }),
  });
  const srv = await serveStep(step, {
    state: false,
    final: (req, res) => {
      req.gw.keyInUrl = true;
      res.status(401).end();
    },
  });
  servers.push(srv);
  return { srv, log };
}

test('upstreamCause: the code and the host or address from the error fields, else the message', () => {
  const err = (message: string, fields: Record<string, unknown>) => Object.assign(new Error(message), fields);
  assert.equal(
    upstreamCause(err('getaddrinfo ENOTFOUND backend', { code: 'ENOTFOUND', hostname: 'backend' })),
    'ENOTFOUND backend',
  );
  assert.equal(
    upstreamCause(
      err('connect ECONNREFUSED 10.0.0.7:9090', { code: 'ECONNREFUSED', address: '10.0.0.7', port: 9090 }),
    ),
    'ECONNREFUSED 10.0.0.7:9090',
  );
  assert.equal(upstreamCause(err('socket hang up', { code: 'ECONNRESET' })), 'ECONNRESET');
  assert.equal(upstreamCause(new Error('upstream timeout')), 'upstream timeout');
  assert.equal(upstreamCause(new Error('x'.repeat(1000))).length, 200);
});
