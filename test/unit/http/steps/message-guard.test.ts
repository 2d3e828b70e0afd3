import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, describe, test } from 'node:test';
import { createMessageGuard } from '../../../../src/http/steps/message-guard.js';
import { createRouteMatcher } from '../../../../src/proxy/routes.js';
import { send, sendRaw } from '../../../helpers/http.js';
import { serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

async function start() {
  const checked: string[] = [];
  const checkAndNoteKeyInUrl = (req: IncomingMessage) => {
    checked.push(req.url ?? '');
    return false;
  };
  const matchRoute = createRouteMatcher([
    { prefix: '/notify/v1' },
    { prefix: '/ro', methods: ['GET', 'OPTIONS'] },
  ]);
  const srv = await serveStep(createMessageGuard({ matchRoute, checkAndNoteKeyInUrl }));
  servers.push(srv);
  return { srv, checked };
}

const METHOD_JSON = {
  error: 'Method Not Allowed',
  details: 'This method is not allowed here; the Allow header lists the methods that are',
};

describe('message guard step', () => {
  test('an ordinary request goes on untouched (any method it does not refuse, one valid Host)', async () => {
    const { srv, checked } = await start();
    for (const method of ['GET', 'POST', 'PROPFIND', 'OPTIONS'])
      assert.equal((await send(srv.port, '/notify/v1/x?a=1', { method })).status, 200, method);
    assert.equal(srv.reached.length, 4);
    assert.deepEqual(checked, []);
  });

  test('TRACE and CONNECT → 405 with the route’s Allow (or the default list); the URL is checked for a key', async () => {
    const { srv, checked } = await start();
    const trace = await send(srv.port, '/notify/v1/x?api_key=1', { method: 'TRACE' });
    assert.equal(trace.status, 405);
    assert.deepEqual(trace.json, METHOD_JSON);
    assert.equal(trace.headers.allow, 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
    const ro = await send(srv.port, '/ro/x', { method: 'TRACE' });
    assert.equal(ro.headers.allow, 'GET, HEAD, OPTIONS');
    const none = await send(srv.port, '/nowhere', { method: 'TRACE' });
    assert.equal(none.headers.allow, 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
    // Node's http server hands CONNECT to its 'connect' event; a server of one's own may not.
    assert.equal(srv.reached.length, 0);
    assert.deepEqual(checked, ['/notify/v1/x?api_key=1', '/ro/x', '/nowhere']);
    assert.deepEqual(
      srv.finished.map((s) => s?.error),
      ['METHOD_NOT_ALLOWED', 'METHOD_NOT_ALLOWED', 'METHOD_NOT_ALLOWED'],
    );
  });

  test('two Host lines or an invalid Host → 400 and the connection closes; valid forms go on', async () => {
    const { srv } = await start();
    for (const host of [
      'Host: a\r\nHost: a',
      'Host: a b',
      'Host: a,b',
      'Host: u@a',
      'Host: ',
      'Host: a:1:2',
      'Host: a:x',
    ]) {
      const raw = await sendRaw(srv.port, `GET /notify/v1/x HTTP/1.1\r\n${host}\r\n\r\n`, 2000);
      assert.match(raw, /^HTTP\/1\.1 400 /, host);
      assert.match(raw, /\r\nConnection: close\r\n/i, host);
      assert.ok(raw.endsWith('{"error":"Bad Request","details":"Malformed request"}'), host);
    }
    for (const host of ['a', 'a.b.example:8080', '10.0.0.1:1', '[2001:db8::1]', '[::1]:443', 'under_score']) {
      const raw = await sendRaw(
        srv.port,
        `GET /x HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
        2000,
      );
      assert.match(raw, /^HTTP\/1\.1 200 /, host);
    }
    assert.equal(srv.reached.length, 6);
  });

  test('the Host check costs one pass over the header names, however many there are', async () => {
    const { srv } = await start();
    const many = Array.from({ length: 500 }, (_, i) => `X-H${i}: v`).join('\r\n');
    const raw = await sendRaw(
      srv.port,
      `GET /x HTTP/1.1\r\n${many}\r\nHost: a\r\nConnection: close\r\n\r\n`,
      2000,
    );
    assert.match(raw, /^HTTP\/1\.1 200 /);
    const dup = await sendRaw(srv.port, `GET /x HTTP/1.1\r\nHost: a\r\n${many}\r\nHOST: a\r\n\r\n`, 2000);
    assert.match(dup, /^HTTP\/1\.1 400 /, 'a second Host far down the list is still seen');
  });

  test('invalid options throw when the step is built', () => {
    assert.throws(
      () => createMessageGuard({ matchRoute: null as never, checkAndNoteKeyInUrl: () => false }),
      /matchRoute must be a function/,
    );
    assert.throws(
      () => createMessageGuard({ matchRoute: () => null, checkAndNoteKeyInUrl: 'x' as never }),
      /checkAndNoteKeyInUrl must be a function/,
    );
  });
});
