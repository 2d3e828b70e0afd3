import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, describe, test } from 'node:test';
import { createBodyLimit } from '../../../../src/http/steps/body-limit.js';
import { send } from '../../../helpers/http.js';
import { serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

async function start(bodyLimitBytes: number) {
  const srv = await serveStep(createBodyLimit({ bodyLimitBytes }));
  servers.push(srv);
  return srv;
}

/** A chunked POST (no Content-Length): the step cannot know its size. */
function sendChunked(port: number, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/a', method: 'POST', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.write(body);
    req.end();
  });
}

describe('body limit step', () => {
  test('a declared length over the limit: 413 and the connection closed, nothing goes on', async () => {
    const srv = await start(10);
    const r = await send(srv.port, '/a', {
      method: 'POST',
      headers: { 'Content-Length': '11' },
      body: 'x'.repeat(11),
    });
    assert.equal(r.status, 413);
    assert.deepEqual(r.json, { error: 'Payload Too Large', details: 'Request body exceeds the size limit' });
    assert.equal(r.headers.connection, 'close');
    assert.equal(srv.reached.length, 0);
    assert.equal(srv.finished[0]?.error, 'PAYLOAD_TOO_LARGE');
  });

  test('at the limit, without a body and chunked: the request goes on', async () => {
    const srv = await start(10);
    const atLimit = { 'Content-Length': '10' };
    assert.equal(
      (await send(srv.port, '/a', { method: 'POST', headers: atLimit, body: 'x'.repeat(10) })).status,
      200,
    );
    assert.equal((await send(srv.port, '/a')).status, 200);
    assert.equal(await sendChunked(srv.port, 'x'.repeat(100)), 200);
    assert.equal(srv.reached.length, 3);
  });

  test('0 means no limit', async () => {
    const srv = await start(0);
    const big = { 'Content-Length': '100000' };
    assert.equal(
      (await send(srv.port, '/a', { method: 'POST', headers: big, body: 'x'.repeat(100_000) })).status,
      200,
    );
  });

  test('invalid options throw when the step is built', () => {
    for (const bad of [-1, 1.5, Number.NaN, '10' as never])
      assert.throws(() => createBodyLimit({ bodyLimitBytes: bad }), /bodyLimitBytes must be an integer >= 0/);
  });
});
