import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createNotFound } from '../../../../src/http/steps/not-found.js';
import { send } from '../../../helpers/http.js';
import { serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

describe('not found step', () => {
  test('answers 404 in the spec shape and records the code', async () => {
    const srv = await serveStep(createNotFound());
    servers.push(srv);
    const r = await send(srv.port, '/anything?x=1', { method: 'PUT' });
    assert.equal(r.status, 404);
    assert.deepEqual(r.json, { error: 'Not Found', details: 'No route matches this path' });
    assert.equal(r.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(r.headers['cache-control'], 'no-store');
    assert.equal(srv.reached.length, 0);
    assert.equal(srv.finished[0]?.error, 'NOT_FOUND');
  });
});
