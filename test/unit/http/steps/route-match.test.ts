import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, describe, test } from 'node:test';
import { createRouteMatch } from '../../../../src/http/steps/route-match.js';
import { createRouteMatcher } from '../../../../src/proxy/routes.js';
import { send } from '../../../helpers/http.js';
import { serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

async function start() {
  const checked: string[] = [];
  const checkAndNoteKeyInUrl = (req: IncomingMessage) => {
    checked.push(req.url ?? '');
    return true;
  };
  const matchRoute = createRouteMatcher([
    { prefix: '/notify/v1' },
    { prefix: '/notify/v1/admin' },
    { prefix: '/ro', methods: ['GET'] },
  ]);
  const srv = await serveStep(createRouteMatch({ matchRoute, checkAndNoteKeyInUrl }));
  servers.push(srv);
  return { srv, checked };
}

describe('route match step', () => {
  test('records the longest matching prefix (ignoring the query) and goes on', async () => {
    const { srv, checked } = await start();
    assert.equal((await send(srv.port, '/notify/v1/otps?to=/notify/v1/admin')).status, 200);
    assert.equal((await send(srv.port, '/notify/v1/admin/x')).status, 200);
    assert.equal((await send(srv.port, '/notify/v1')).status, 200);
    assert.deepEqual(
      srv.reached.map((r) => [r.url, r.gw?.route]),
      [
        ['/notify/v1/otps?to=/notify/v1/admin', '/notify/v1'],
        ['/notify/v1/admin/x', '/notify/v1/admin'],
        ['/notify/v1', '/notify/v1'],
      ],
    );
    assert.deepEqual(checked, []);
  });

  test('no route: 404, route stays "-", and the URL is checked for a key', async () => {
    const { srv, checked } = await start();
    for (const path of ['/notify/v10', '/other?api_key=1', '/']) {
      const r = await send(srv.port, path);
      assert.equal(r.status, 404, path);
      assert.deepEqual(r.json, { error: 'Not Found', details: 'No route matches this path' });
    }
    assert.equal(srv.reached.length, 0);
    assert.deepEqual(checked, ['/notify/v10', '/other?api_key=1', '/']);
    assert.deepEqual(
      srv.finished.map((s) => [s?.route, s?.error]),
      [
        ['-', 'NOT_FOUND'],
        ['-', 'NOT_FOUND'],
        ['-', 'NOT_FOUND'],
      ],
    );
  });

  test('a method the route does not forward: 405 with Allow, the route recorded, the URL checked for a key', async () => {
    const { srv, checked } = await start();
    const post = await send(srv.port, '/ro/x?token=1', { method: 'POST', body: '{}' });
    assert.equal(post.status, 405);
    assert.deepEqual(post.json, {
      error: 'Method Not Allowed',
      details: 'This method is not allowed here; the Allow header lists the methods that are',
    });
    assert.equal(post.headers.allow, 'GET, HEAD');
    const prop = await send(srv.port, '/notify/v1/x', { method: 'PROPFIND' });
    assert.equal(prop.status, 405, 'a route without a list: the default methods only');
    assert.equal(prop.headers.allow, 'GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS');
    assert.equal((await send(srv.port, '/ro/x', { method: 'HEAD' })).status, 200, 'GET implies HEAD');
    assert.equal((await send(srv.port, '/notify/v1/x', { method: 'DELETE' })).status, 200);
    assert.deepEqual(
      srv.reached.map((r) => r.method),
      ['HEAD', 'DELETE'],
    );
    assert.deepEqual(checked, ['/ro/x?token=1', '/notify/v1/x']);
    assert.deepEqual(
      srv.finished.slice(0, 2).map((s) => [s?.route, s?.error]),
      [
        ['/ro', 'METHOD_NOT_ALLOWED'],
        ['/notify/v1', 'METHOD_NOT_ALLOWED'],
      ],
    );
  });

  test('invalid options throw when the step is built', () => {
    assert.throws(
      () => createRouteMatch({ matchRoute: [] as never, checkAndNoteKeyInUrl: () => false }),
      /matchRoute must be a function/,
    );
  });
});
