import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { AUDIT_EVENTS } from '../../../src/admin/audit-query.js';
import {
  CONSOLE_CSP,
  CONSOLE_DIR,
  createConsoleHandler,
  isConsoleOrigin,
} from '../../../src/admin/console.js';

describe('isConsoleOrigin', () => {
  const withToken = { origin: null, host: '127.0.0.1', tokenless: false };
  const tokenless = { origin: null, host: '127.0.0.1', tokenless: true };

  test('needs Sec-Fetch-Site: same-origin as well as an allow-listed origin', () => {
    assert.equal(isConsoleOrigin('http://127.0.0.1:8081', 'same-origin', 8081, withToken), true);
    for (const site of ['same-site', 'cross-site', 'none', undefined]) {
      assert.equal(isConsoleOrigin('http://127.0.0.1:8081', site, 8081, withToken), false, String(site));
    }
  });

  test('with a token: the admin host and port only (or the configured origin)', () => {
    assert.equal(isConsoleOrigin('http://localhost:8081', 'same-origin', 8081, withToken), false);
    assert.equal(isConsoleOrigin('http://127.0.0.1:9999', 'same-origin', 8081, withToken), false);
    assert.equal(isConsoleOrigin('https://127.0.0.1:8081', 'same-origin', 8081, withToken), false);
    const proxied = { origin: 'https://admin.example.com', host: '0.0.0.0', tokenless: false };
    assert.equal(isConsoleOrigin('https://admin.example.com', 'same-origin', 8081, proxied), true);
    assert.equal(isConsoleOrigin('http://0.0.0.0:8081', 'same-origin', 8081, proxied), false);
    const wildcard = { origin: null, host: '0.0.0.0', tokenless: false };
    assert.equal(isConsoleOrigin('http://0.0.0.0:8081', 'same-origin', 8081, wildcard), false);
  });

  test('tokenless: the loopback origins with the admin port', () => {
    for (const o of [
      'http://127.0.0.1:8081',
      'http://localhost:8081',
      'http://[::1]:8081',
      'HTTP://LOCALHOST:8081',
    ]) {
      assert.equal(isConsoleOrigin(o, 'same-origin', 8081, tokenless), true, o);
    }
    assert.equal(isConsoleOrigin('http://localhost:8080', 'same-origin', 8081, tokenless), false);
    assert.equal(isConsoleOrigin('http://localhost', 'same-origin', 80, tokenless), true);
  });

  test('a Host-matching origin is not enough (DNS rebinding)', () => {
    assert.equal(isConsoleOrigin('http://rebind.example:8081', 'same-origin', 8081, tokenless), false);
    assert.equal(isConsoleOrigin('http://127.0.0.1.nip.io:8081', 'same-origin', 8081, withToken), false);
  });
});

describe('createConsoleHandler', () => {
  async function serve(dir: string) {
    const handler = createConsoleHandler({ tiers: ['free', 'gold'] }, dir);
    const server = createServer((req, res) =>
      handler(req, res, () => {
        res.statusCode = 418;
        res.end('next');
      }),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { base, close: () => new Promise<void>((r) => server.close(() => r())) };
  }

  test('without a token the first screen of index.html is the companies one (data-mode)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'console-'));
    writeFileSync(join(dir, 'index.html'), '<body data-mode="token">x</body>');
    const body = async (tokenless: boolean) => {
      const handler = createConsoleHandler({ tiers: ['free'], tokenless }, dir);
      const server = createServer((req, res) => handler(req, res, () => res.end('next')));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      try {
        const port = (server.address() as AddressInfo).port;
        const r = await fetch(`http://127.0.0.1:${port}/console/`);
        assert.equal(Number(r.headers.get('content-length')), (await r.clone().arrayBuffer()).byteLength);
        return r.text();
      } finally {
        server.close();
      }
    };
    assert.equal(await body(false), '<body data-mode="token">x</body>');
    assert.equal(await body(true), '<body data-mode="tokenless">x</body>');
  });

  test('serves the files read at start, with the CSP; nothing else', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'console-'));
    mkdirSync(join(dir, 'js'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><title>x</title>');
    writeFileSync(join(dir, 'js', 'app.js'), 'export {};');
    writeFileSync(join(dir, 'notes.txt'), 'not served');
    const s = await serve(dir);
    try {
      const index = await fetch(`${s.base}/console/`);
      assert.equal(index.status, 200);
      assert.equal(index.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(index.headers.get('content-security-policy'), CONSOLE_CSP);
      assert.equal(await index.text(), '<!doctype html><title>x</title>');
      const js = await fetch(`${s.base}/console/js/app.js`);
      assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
      assert.deepEqual(await (await fetch(`${s.base}/console/settings.json`)).json(), {
        tiers: ['free', 'gold'],
        tierWindows: {},
        auditEvents: [...AUDIT_EVENTS],
        tokenless: false,
      });
      for (const p of [
        '/console/notes.txt',
        '/console/js/..%2F..%2Fpackage.json',
        '/console/..%2Fpackage.json',
        '/console/nope.js',
      ]) {
        const r = await fetch(`${s.base}${p}`);
        assert.equal(r.status, 404, p);
        assert.equal(r.headers.get('content-security-policy'), CONSOLE_CSP);
        await r.arrayBuffer();
      }
      const redirect = await fetch(`${s.base}/console`, { redirect: 'manual' });
      assert.equal(redirect.status, 301);
      assert.equal(redirect.headers.get('location'), '/console/');
      const post = await fetch(`${s.base}/console/`, { method: 'POST', body: 'x' });
      assert.equal(post.status, 405);
      assert.equal((await fetch(`${s.base}/admin/v1/companies`)).status, 418, 'other paths go on');
    } finally {
      await s.close();
    }
  });

  test('the shipped console has its index.html and no inline script', async () => {
    const s = await serve(CONSOLE_DIR);
    try {
      const html = await (await fetch(`${s.base}/console/`)).text();
      assert.match(html, /<script type="module" src="js\/app\.js"><\/script>/);
      assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>|\bon[a-z]+=|style=/i);
    } finally {
      await s.close();
    }
  });

  test('refuses to start without index.html', () => {
    assert.throws(
      () => createConsoleHandler({ tiers: [] }, mkdtempSync(join(tmpdir(), 'empty-'))),
      /index\.html/,
    );
  });
});
