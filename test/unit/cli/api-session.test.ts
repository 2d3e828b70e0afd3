import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { openApiSession } from '../../../src/cli/api-session.js';
import { CliExit } from '../../../src/cli/io.js';
import { testIo } from '../../helpers/cli-run.js';

// The admin API client against a loopback server that records what it got and answers what the
// test says (the real admin API: test/integration/cli-admin-api.test.ts).

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

describe('openApiSession', () => {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];
  let answer: { status: number; body: string; headers?: Record<string, string> } = {
    status: 200,
    body: '[]',
  };
  before(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        res.writeHead(answer.status, { 'Content-Type': 'application/json', ...answer.headers });
        res.end(answer.body);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => server.close(() => r())));

  test('each call: the route under /admin/v1 (after a base path), ids encoded, the bearer token, JSON', async () => {
    const s = openApiSession({ url: `${base}/gw/`, token: 'tok-123' }, testIo());
    seen.length = 0;
    answer = { status: 201, body: '{"id":"a/b"}' };
    assert.deepEqual(await s.companies.createCompany({ id: 'x' }, 'ignored'), {
      ok: true,
      value: { id: 'a/b' },
    });
    await s.keys.revokeKey('k/1?x', 'ignored');
    await s.audit.readAudit({ limit: 5, companyId: 'acme' });
    await s.keys.createKey('acme', undefined, 'ignored');
    assert.deepEqual(
      seen.map((r) => `${r.method} ${r.url} ${r.body}`),
      [
        'POST /gw/admin/v1/companies {"id":"x"}',
        'DELETE /gw/admin/v1/keys/k%2F1%3Fx ',
        'GET /gw/admin/v1/audit?limit=5&companyId=acme ',
        'POST /gw/admin/v1/companies/acme/keys {}',
      ],
    );
    assert.equal(seen[0]?.headers.authorization, 'Bearer tok-123');
    assert.equal(seen[0]?.headers['content-type'], 'application/json');
    assert.equal(seen[1]?.headers['content-type'], undefined, 'no body, no content type');
    // Nothing the admin API takes for a browser.
    for (const r of seen) assert.equal(r.headers.origin, undefined);
    for (const r of seen) assert.equal(r.headers['sec-fetch-site'], undefined);
  });

  test('no token: no Authorization header (a tokenless loopback admin API)', async () => {
    seen.length = 0;
    answer = { status: 200, body: '[]' };
    await openApiSession({ url: base, token: null }, testIo()).companies.listCompanies();
    assert.equal(seen[0]?.headers.authorization, undefined);
  });

  test('an error body is kept with its status; an answer without one keeps the status, in words', async () => {
    const s = openApiSession({ url: base, token: 't' }, testIo());
    answer = { status: 409, body: '{"error":"Conflict","details":"cap reached"}' };
    assert.deepEqual(await s.keys.createKey('acme', {}), {
      ok: false,
      status: 409,
      error: 'Conflict',
      details: 'cap reached',
    });
    answer = { status: 502, body: '<html>bad gateway</html>' };
    const r = await s.companies.listCompanies();
    assert.ok(!r.ok);
    assert.equal(r.status, 502);
    assert.equal(r.details, `the admin API at ${base} answered 502 without an {error, details} body`);
  });

  test('a redirect is not followed (it would carry the token elsewhere): exit 1', async () => {
    seen.length = 0;
    answer = { status: 307, body: '', headers: { Location: 'http://127.0.0.2:9/steal' } };
    await assert.rejects(
      openApiSession({ url: base, token: 't' }, testIo()).companies.listCompanies(),
      (e: unknown) =>
        e instanceof CliExit &&
        e.exitCode === 1 &&
        e.message.startsWith(`cannot reach the admin API at ${base}:`),
    );
    assert.equal(seen.length, 1);
  });

  test('a token sent over plain HTTP beyond loopback is warned about; over loopback it is not', () => {
    const far = testIo();
    openApiSession({ url: 'http://admin.internal:8081', token: 't' }, far);
    assert.deepEqual(far.err, [
      'warning: the admin token goes to http://admin.internal:8081 over plain HTTP (admin.tls serves HTTPS)\n',
    ]);
    for (const url of [
      'http://127.0.0.1:8081',
      'http://localhost:8081',
      'http://[::1]:8081',
      'https://admin.internal',
    ]) {
      const io = testIo();
      openApiSession({ url, token: 't' }, io);
      assert.deepEqual(io.err, [], url);
    }
  });
});
