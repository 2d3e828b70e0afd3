import assert from 'node:assert/strict';
import { request, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type GatewayHandle } from '../../src/server.js';
import { MemoryKeyStore } from '../../src/store/memory-store.js';
import { adminApi } from '../helpers/admin.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';

// The console's switch and the admin API's browser rule, over real HTTP. The browser flows are in
// test/browser/console.test.ts.

/**
 * POST /admin/v1/companies with browser-like headers, over node:http (fetch would not send our
 * `Host`, which the rebinding cases need).
 */
function browserPost(port: number, id: string, headers: Record<string, string>, token: string | null) {
  const body = JSON.stringify({ id, tier: 'free' });
  return new Promise<{ status: number; body: Record<string, string>; headers: IncomingHttpHeaders }>(
    (resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/admin/v1/companies',
          headers: {
            'Content-Type': 'application/json',
            'Content-Length': Buffer.byteLength(body),
            ...(token ? { Authorization: `Bearer ${token}` } : {}),
            ...headers,
          },
        },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: JSON.parse(text) as Record<string, string>,
              headers: res.headers,
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    },
  );
}

describe('admin.console off (the default)', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({ store: { type: 'memory' } }, { store: new MemoryKeyStore() });
  });
  after(() => t.close());

  test('no /console/, and every Origin is refused as before', async () => {
    const page = await adminApi(t.adminPort)('GET', '/console/');
    assert.equal(page.status, 404);
    assert.equal(page.headers.get('content-security-policy')?.includes("connect-src 'self'"), false);
    const own = `http://127.0.0.1:${t.adminPort}`;
    const r = await browserPost(
      t.adminPort,
      'off-co',
      { Origin: own, 'Sec-Fetch-Site': 'same-origin' },
      ADMIN_TOKEN,
    );
    assert.equal(r.status, 403);
    assert.equal(r.body.details, 'The admin API does not serve browser requests');
    assert.equal(r.headers['cache-control'], 'no-store');
  });
});

describe('admin.console on, with a token', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway(
      { admin: { console: true }, store: { type: 'memory' } },
      { store: new MemoryKeyStore() },
    );
  });
  after(() => t.close());

  test('the console page needs no token; the API still does', async () => {
    const page = await fetch(`http://127.0.0.1:${t.adminPort}/console/`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    assert.equal((await fetch(`http://127.0.0.1:${t.adminPort}/admin/v1/companies`)).status, 401);
  });

  test('a same-origin write from the admin origin passes; any other combination is 403', async () => {
    const own = `http://127.0.0.1:${t.adminPort}`;
    const ok = await browserPost(
      t.adminPort,
      'console-co',
      { Origin: own, 'Sec-Fetch-Site': 'same-origin' },
      ADMIN_TOKEN,
    );
    assert.equal(ok.status, 201);
    assert.equal(ok.headers['cache-control'], 'no-store');
    const refused: Record<string, string>[] = [
      { Origin: own }, // no Sec-Fetch-Site: not a browser we can trust to have set it
      { Origin: own, 'Sec-Fetch-Site': 'same-site' },
      { Origin: own, 'Sec-Fetch-Site': 'cross-site' },
      { Origin: `http://localhost:${t.adminPort}`, 'Sec-Fetch-Site': 'same-origin' },
      { Origin: 'http://127.0.0.1:1', 'Sec-Fetch-Site': 'same-origin' },
      // DNS rebinding: Host and Origin agree, and the browser says same-origin.
      {
        Host: `rebind.example:${t.adminPort}`,
        Origin: `http://rebind.example:${t.adminPort}`,
        'Sec-Fetch-Site': 'same-origin',
      },
      { Origin: 'null', 'Sec-Fetch-Site': 'same-origin' },
    ];
    for (const h of refused) {
      const r = await browserPost(t.adminPort, 'refused-co', h, ADMIN_TOKEN);
      assert.equal(r.status, 403, JSON.stringify(h));
      assert.deepEqual(r.body, {
        error: 'Forbidden',
        details: 'The admin API does not serve browser requests',
      });
    }
    assert.equal((await adminApi(t.adminPort)('GET', '/admin/v1/companies/refused-co')).status, 404);
    const plain = await fetch(`http://127.0.0.1:${t.adminPort}/admin/v1/companies`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${ADMIN_TOKEN}`,
        Origin: own,
        'Sec-Fetch-Site': 'same-origin',
        'Content-Type': 'text/plain',
      },
      body: '{"id":"plain-co"}',
    });
    assert.equal(plain.status, 415, 'JSON only, also for the console');
  });
});

describe('admin.console on, tokenless loopback (the demo)', () => {
  let gw: GatewayHandle;
  before(async () => {
    const cfg = validateConfig({
      server: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0, console: true },
      store: { type: 'memory' },
      log: { level: 'warn' },
    });
    assert.ok(cfg.ok);
    gw = await startGateway(cfg.config, { store: new MemoryKeyStore(), processMetrics: false });
  });
  after(() => gw.close());

  test('the loopback origins with the admin port may write; a rebinding name may not', async () => {
    const port = gw.adminPort!;
    for (const [i, origin] of [`http://127.0.0.1:${port}`, `http://localhost:${port}`].entries()) {
      const host = new URL(origin).host;
      const r = await browserPost(
        port,
        `loop-${i}`,
        { Host: host, Origin: origin, 'Sec-Fetch-Site': 'same-origin' },
        null,
      );
      assert.equal(r.status, 201, origin);
    }
    const rebind = await browserPost(
      port,
      'rebind-co',
      {
        Host: `rebind.example:${port}`,
        Origin: `http://rebind.example:${port}`,
        'Sec-Fetch-Site': 'same-origin',
      },
      null,
    );
    assert.equal(rebind.status, 403);
    const otherPort = await browserPost(
      port,
      'other-port',
      { Origin: `http://127.0.0.1:${port + 1}`, 'Sec-Fetch-Site': 'same-origin' },
      null,
    );
    assert.equal(otherPort.status, 403);
    assert.deepEqual(
      (await adminApi(port, null)('GET', '/admin/v1/companies')).list.map((c) => c.id).sort(),
      ['loop-0', 'loop-1'],
    );
  });
});
