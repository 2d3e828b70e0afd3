import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, describe, test } from 'node:test';
import type { RequestHandler } from 'express';
import { createMethodOverrideBody } from '../../../../src/http/steps/method-override-body.js';
import type { RequestState } from '../../../../src/request-state.js';
import type { Scope } from '../../../../src/store/types.js';
import { send } from '../../../helpers/http.js';
import { serveStep, testCompany, testKey, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

const ROUTES = [
  { prefix: '/open', methods: undefined },
  { prefix: '/media', methods: ['GET', 'POST'] },
];
const FORM = 'application/x-www-form-urlencoded';

/** What the handler after the step read: the body it was handed (`req.gw.body`, else the request). */
interface Seen {
  body: string;
  fromStep: boolean;
  length: string | undefined;
  failed?: string;
}

/** After the step: reads the body as the route proxy would, and answers what it read. */
const readBody: RequestHandler = (req, res) => {
  const source = req.gw.body ?? req;
  const chunks: Buffer[] = [];
  source.on('data', (c: Buffer) => chunks.push(c));
  source.on('error', (e: Error) => {
    if (!res.headersSent) res.status(502).json({ failed: e.message, error: req.gw.error });
  });
  source.on('end', () => {
    const seen: Seen = {
      body: Buffer.concat(chunks).toString('latin1'),
      fromStep: req.gw.body !== undefined,
      length: req.headers['content-length'],
    };
    res.json(seen);
  });
};

async function start(
  over: {
    route?: string;
    companyScopes?: Scope[] | null;
    keyScopes?: Scope[] | null;
    hold?: number;
    names?: string[];
  } = {},
) {
  const state: Partial<RequestState> = {
    route: over.route ?? '/media',
    company: { ...testCompany(), scopes: over.companyScopes ?? null },
    key: { ...testKey(), scopes: over.keyScopes ?? null },
  };
  const step = createMethodOverrideBody({
    names: over.names ?? ['_method', 'x-http-method-override'],
    routes: ROUTES,
    bodyScanLimitBytes: over.hold ?? 1024,
    bodyLimitBytes: 0,
  });
  const srv = await serveStep(step, { state, final: readBody });
  servers.push(srv);
  return srv;
}

const post = (srv: StepServer, path: string, body: string, type = FORM) =>
  send(srv.port, path, {
    method: 'POST',
    headers: { 'Content-Type': type, 'Content-Length': String(body.length) },
    body,
  });

describe('method-override body step: only where an override could widen what is allowed', () => {
  test('a route that allows every method, no scopes: the body streams untouched, _method and all', async () => {
    const srv = await start({ route: '/open' });
    const r = await post(srv, '/open/x', '_method=DELETE');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json, { body: '_method=DELETE', fromStep: false, length: '14' });
  });

  test('a route that lists methods: an override is 400, nothing handed on', async () => {
    const srv = await start();
    const r = await post(srv, '/media/x', 'a=1&_method=DELETE');
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, {
      error: 'Bad Request',
      details: 'Method overrides in a request body are not accepted',
    });
  });

  test('a key or company scope that lists methods applies it on an open route; one without methods does not', async () => {
    const cases: [{ companyScopes?: Scope[]; keyScopes?: Scope[] }, boolean][] = [
      [{ keyScopes: [{ route: '/open', methods: ['POST'] }] }, true],
      [{ companyScopes: [{ route: '/open', methods: ['GET', 'POST'] }] }, true],
      [{ companyScopes: [{ route: '/open' }] }, false],
      [{ keyScopes: [{ route: '/open', paths: ['/open/x'] }] }, false],
    ];
    for (const [over, applies] of cases) {
      const srv = await start({ route: '/open', ...over });
      const r = await post(srv, '/open/x', '_method=PUT');
      assert.equal(r.status, applies ? 400 : 200, JSON.stringify(over));
    }
  });

  test('a body within the hold limit is checked whole, then handed on with its length', async () => {
    const srv = await start();
    const chunked = await send(srv.port, '/media/x', {
      method: 'POST',
      headers: { 'Content-Type': FORM, 'Transfer-Encoding': 'chunked' },
      body: 'a=1&b=2',
    });
    assert.deepEqual(chunked.json, { body: 'a=1&b=2', fromStep: true, length: '7' });
  });

  test('past the hold limit the body flows on, still checked: an override later fails the stream', async () => {
    const srv = await start({ hold: 64 });
    const clean = 'a=' + 'x'.repeat(5000) + '&b=2';
    const ok = await post(srv, '/media/x', clean);
    const seen = ok.json as Seen;
    assert.ok(seen.body === clean && seen.fromStep, 'the whole body, through the step');
    assert.equal(seen.length, String(clean.length));
    const late = await post(srv, '/media/x', 'a=' + 'x'.repeat(5000) + '&_method=DELETE');
    assert.equal(late.status, 502, 'the handler after the step saw its body fail');
    assert.deepEqual(late.json, { failed: 'METHOD_OVERRIDE_IN_BODY', error: 'METHOD_OVERRIDE_IN_BODY' });
  });

  test('other media types stream unread; compressed or non-ASCII forms are 415', async () => {
    const srv = await start();
    const plain = await post(srv, '/media/x', '_method=DELETE', 'text/plain');
    assert.deepEqual(plain.json, { body: '_method=DELETE', fromStep: false, length: '14' });
    const gz = await send(srv.port, '/media/x', {
      method: 'POST',
      headers: { 'Content-Type': FORM, 'Content-Encoding': 'gzip' },
      body: 'x',
    });
    assert.equal(gz.status, 415);
    const json = await post(srv, '/media/x', '{"_method":"PUT"}', 'application/json');
    assert.equal(json.status, 400);
  });

  test('no names configured (methodOverride.inBody: allow): nothing is read', async () => {
    const srv = await start({ names: [] });
    const r = await post(srv, '/media/x', '_method=DELETE');
    assert.deepEqual(r.json, { body: '_method=DELETE', fromStep: false, length: '14' });
  });

  test('Expect: 100-continue: the step sends the 100 itself before it reads', async () => {
    const srv = await start();
    const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: srv.port,
          path: '/media/x',
          method: 'POST',
          agent: false,
          headers: { Expect: '100-continue', 'Content-Type': FORM, 'Content-Length': '3' },
        },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      const timer = setTimeout(() => reject(new Error('no 100 Continue within 5 s')), 5000);
      req.once('continue', () => {
        clearTimeout(timer);
        req.end('a=1');
      });
      req.flushHeaders();
    });
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body), { body: 'a=1', fromStep: true, length: '3' });
  });

  test('invalid options throw when the step is built', () => {
    assert.throws(
      () => createMethodOverrideBody({ names: [], routes: [], bodyScanLimitBytes: -1, bodyLimitBytes: 0 }),
      /bodyScanLimitBytes/,
    );
  });
});
