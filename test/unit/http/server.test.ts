import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { validateConfig } from '../../../src/config/load.js';
import type { GatewayConfig } from '../../../src/config/schema.js';
import { createAdminServer, createGatewayServer, drain, listen } from '../../../src/http/server.js';
import { send, sendRaw } from '../../helpers/http.js';

const servers: Server[] = [];
after(() => Promise.all(servers.map((s) => drain(s, 100))));

function serverSettings(server: Record<string, unknown> = {}): GatewayConfig['server'] {
  const r = validateConfig({ server });
  assert.ok(r.ok);
  return r.config.server;
}

/** An app that answers 200 `{"app":true}` and counts what reached it. */
function countingApp() {
  const seen: string[] = [];
  const app = (req: { method?: string; url?: string }, res: ServerResponse) => {
    seen.push(`${req.method} ${req.url}`);
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end('{"app":true}');
  };
  return { app, seen };
}

async function started(server: Server): Promise<number> {
  servers.push(server);
  await listen(server, 0, '127.0.0.1');
  return (server.address() as AddressInfo).port;
}

/** Status line, headers (lowercased names) and body of a raw answer. */
function parseRaw(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

describe('createGatewayServer', () => {
  test('a request the parser accepts reaches the app', async () => {
    const { app, seen } = countingApp();
    const port = await started(createGatewayServer(serverSettings(), app));
    const r = await send(port, '/x');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { app: true });
    assert.deepEqual(seen, ['GET /x']);
  });

  test('smuggling shapes and bad bytes: 400 in the spec shape, security headers, connection closed; the app sees nothing', async () => {
    const { app, seen } = countingApp();
    const port = await started(createGatewayServer(serverSettings(), app));
    for (const raw of [
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      'GET / HTTP/1.1\nHost: x\n\n',
      'GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n',
    ]) {
      const a = parseRaw(await sendRaw(port, raw));
      assert.equal(a.status, 400, raw);
      assert.match(a.headers['content-type'] ?? '', /^application\/json/);
      assert.deepEqual(JSON.parse(a.body), { error: 'Bad Request', details: 'Malformed request' });
      assert.equal(a.headers['x-content-type-options'], 'nosniff');
      assert.equal(a.headers['strict-transport-security'], undefined, 'no HSTS over plain HTTP');
    }
    assert.deepEqual(seen, []);
  });

  test('a request without Host is refused by the parser (requireHostHeader)', async () => {
    const { app, seen } = countingApp();
    const port = await started(createGatewayServer(serverSettings(), app));
    assert.equal(parseRaw(await sendRaw(port, 'GET / HTTP/1.1\r\n\r\n')).status, 400);
    assert.deepEqual(seen, []);
  });

  test('headers over server.maxHeaderSize: 431', async () => {
    const { app } = countingApp();
    const port = await started(createGatewayServer(serverSettings({ maxHeaderSize: 2048 }), app));
    const a = parseRaw(
      await sendRaw(port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(4096)}\r\n\r\n`),
    );
    assert.equal(a.status, 431);
    assert.equal(JSON.parse(a.body).error, 'Request Header Fields Too Large');
  });

  test('an unknown but well-formed method is 405 with Allow; a garbled request line is 400', async () => {
    const { app } = countingApp();
    const port = await started(createGatewayServer(serverSettings(), app));
    for (const method of ['TRACK', 'trace']) {
      const a = parseRaw(await sendRaw(port, `${method} / HTTP/1.1\r\nHost: x\r\n\r\n`));
      assert.equal(a.status, 405, method);
      assert.match(a.headers.allow ?? '', /\bGET\b/);
      assert.ok(!/TRACE|CONNECT/.test(a.headers.allow ?? ''), a.headers.allow);
    }
    assert.equal(parseRaw(await sendRaw(port, '\x01\x02 / HTTP/1.1\r\nHost: x\r\n\r\n')).status, 400);
  });

  test('CONNECT: 405 in the spec shape, no tunnel', async () => {
    const { app, seen } = countingApp();
    const port = await started(createGatewayServer(serverSettings(), app));
    const a = parseRaw(await sendRaw(port, 'CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n'));
    assert.equal(a.status, 405);
    assert.equal(JSON.parse(a.body).error, 'Method Not Allowed');
    assert.ok(a.headers.allow);
    assert.deepEqual(seen, []);
  });

  test('Expect: 100-continue is left to the app: Node does not answer 100 by itself', async () => {
    // The app refuses without reading: a client that waited for 100 gets the refusal instead.
    const port = await started(
      createGatewayServer(serverSettings(), (_req, res) => {
        res.writeHead(401, { 'Content-Type': 'application/json' });
        res.end('{"refused":true}');
      }),
    );
    const raw = await sendRaw(
      port,
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n',
    );
    assert.match(raw, /^HTTP\/1\.1 401 /);
    assert.ok(!raw.includes('100 Continue'), raw);
  });

  test('headers that do not arrive within server.headersTimeoutMs: 408, connection closed', async () => {
    const { app } = countingApp();
    const port = await started(
      createGatewayServer(serverSettings({ headersTimeoutMs: 200, requestTimeoutMs: 300 }), app),
    );
    const a = parseRaw(await sendRaw(port, 'GET / HTTP/1.1\r\nHost: x\r\n', 3000));
    assert.equal(a.status, 408);
    assert.deepEqual(JSON.parse(a.body).error, 'Request Timeout');
  });

  test('the server settings come from server.*', () => {
    const s = createGatewayServer(
      serverSettings({ headersTimeoutMs: 4000, requestTimeoutMs: 9000, keepAliveTimeoutMs: 1234 }),
      countingApp().app,
    );
    assert.equal(s.headersTimeout, 4000);
    assert.equal(s.requestTimeout, 9000);
    assert.equal(s.keepAliveTimeout, 1234);
  });
});

describe('createGatewayServer and createAdminServer over TLS', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ng-http-server-'));
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'key.pem')].concat([
      '-out',
      join(dir, 'cert.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
    ]),
    { stdio: 'ignore' },
  );
  const tls = { cert: readFileSync(join(dir, 'cert.pem')), key: readFileSync(join(dir, 'key.pem')) };

  /** Raw HTTPS: one request line and headers of our own, the answer as text. */
  function httpsGet(
    port: number,
    headers: Record<string, string>,
  ): Promise<{ status: number; hsts?: string }> {
    return new Promise((resolve, reject) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port, path: '/', headers, rejectUnauthorized: false, agent: false },
        (res) => {
          res.resume();
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              hsts: res.headers['strict-transport-security'] as string,
            }),
          );
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  for (const [name, make] of [
    ['gateway', () => createGatewayServer(serverSettings({ maxHeaderSize: 2048 }), countingApp().app, tls)],
    ['admin', () => createAdminServer(countingApp().app, tls)],
  ] as const) {
    test(`${name}: HTTPS serves the app; parser refusals carry HSTS`, async () => {
      const port = await started(make());
      assert.equal((await httpsGet(port, {})).status, 200);
      const refused = await httpsGet(port, { 'X-Big': 'a'.repeat(20_000) });
      assert.equal(refused.status, 431);
      assert.match(refused.hsts ?? '', /max-age=/);
    });
  }

  test('over TLS too, an answer in flight when the drain begins says Connection: close', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    let arrived: () => void = () => undefined;
    const inApp = new Promise<void>((r) => (arrived = r));
    const server = createGatewayServer(
      serverSettings(),
      (_req, res) => {
        arrived();
        void held.then(() => res.end('done'));
      },
      tls,
    );
    const port = await started(server);
    const agent = new HttpsAgent({ keepAlive: true, rejectUnauthorized: false });
    try {
      const answer = new Promise<string | undefined>((resolve, reject) => {
        const req = httpsRequest({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.headers.connection));
        });
        req.on('error', reject);
        req.end();
      });
      await inApp;
      const drained = drain(server, 5000);
      release();
      assert.equal(await answer, 'close');
      await drained;
    } finally {
      agent.destroy();
    }
  });
});

describe('createAdminServer', () => {
  test('plain HTTP: serves the app, answers parser errors in the spec shape without HSTS', async () => {
    const { app, seen } = countingApp();
    const server = createAdminServer(app);
    assert.equal(server.headersTimeout, 10_000);
    assert.equal(server.requestTimeout, 30_000);
    const port = await started(server);
    assert.equal((await send(port, '/admin/v1/companies')).status, 200);
    const a = parseRaw(await sendRaw(port, 'GET / HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'));
    assert.equal(a.status, 400);
    assert.equal(a.headers['strict-transport-security'], undefined);
    assert.deepEqual(seen, ['GET /admin/v1/companies']);
  });
});

describe('listen and drain', () => {
  test('listen rejects with the listen error on a busy port', async () => {
    const first = createAdminServer(countingApp().app);
    const port = await started(first);
    await assert.rejects(listen(createAdminServer(countingApp().app), port, '127.0.0.1'), {
      code: 'EADDRINUSE',
    });
  });

  test('drain lets an in-flight request finish, then closes; past the bound it cuts the rest', async () => {
    let arrived: (finish: () => void) => void = () => undefined;
    const inApp = new Promise<() => void>((r) => (arrived = r));
    const server = createAdminServer((_req, res) => arrived(() => res.end('done')));
    const port = await started(server);
    const inflight = send(port, '/');
    const finish = await inApp;
    const drained = drain(server, 60_000);
    finish();
    assert.equal((await inflight).body, 'done');
    await drained;
    assert.equal(server.listening, false);

    let stuckArrived: () => void = () => undefined;
    const stuckInApp = new Promise<void>((r) => (stuckArrived = r));
    const stuck = createAdminServer(() => stuckArrived());
    const stuckPort = await started(stuck);
    const cut = send(stuckPort, '/').then(
      () => 'answered',
      () => 'cut',
    );
    await stuckInApp;
    await drain(stuck, 50);
    assert.equal(await cut, 'cut');
  });

  test('while draining, both servers answer with Connection: close, also a keep-alive request on a connection opened before', async () => {
    for (const make of [
      (app: (req: IncomingMessage, res: ServerResponse) => void) => createAdminServer(app),
      (app: (req: IncomingMessage, res: ServerResponse) => void) =>
        createGatewayServer(serverSettings(), app),
    ]) {
      const server = make(countingApp().app);
      const port = await started(server);
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const get = () =>
        new Promise<{ connection: string | undefined; reused: boolean }>((resolve, reject) => {
          const req = httpRequest({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
            res.resume();
            res.on('end', () => resolve({ connection: res.headers.connection, reused: req.reusedSocket }));
          });
          req.on('error', reject);
          req.end();
        });
      try {
        assert.equal((await get()).connection, 'keep-alive');
        const drained = drain(server, 5000);
        assert.deepEqual(await get(), { connection: 'close', reused: true });
        await drained;
        assert.equal(server.listening, false);
      } finally {
        agent.destroy();
      }
    }
  });
});
