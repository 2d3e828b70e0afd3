import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import express, { type RequestHandler } from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GatewayError } from '../../../../src/errors.js';
import { createErrorHandler } from '../../../../src/http/steps/error-handler.js';
import { send } from '../../../helpers/http.js';
import { captureLogger, serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

/** A step that fails with `err`, followed by the error handler under test (so the helper's own handler never runs). */
async function start(err: unknown, opts: { afterHeaders?: boolean } = {}) {
  const log = captureLogger();
  const handler = createErrorHandler({ logger: log.logger });
  const failing: RequestHandler = (_req, res, next) => {
    if (opts.afterHeaders) {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('partial');
    }
    next(err);
  };
  const srv = await serveStep(failing, { errorHandler: handler });
  servers.push(srv);
  return { srv, log };
}

describe('error handler step', () => {
  test('a GatewayError answers its own code; 5xx are logged at warn with a masked cause', async () => {
    const cause = new Error(`connect ECONNREFUSED for ${'a'.repeat(64)}`);
    const { srv, log } = await start(new GatewayError('STORE_UNAVAILABLE', undefined, { cause }));
    const r = await send(srv.port, '/a');
    assert.equal(r.status, 503);
    assert.deepEqual(r.json, {
      error: 'Service Unavailable',
      details: 'Key store is unavailable; retry shortly',
    });
    assert.equal(srv.finished[0]?.error, 'STORE_UNAVAILABLE');
    const line = log.lines()[0]!;
    assert.equal(line.level, 'warn');
    assert.equal(line.code, 'STORE_UNAVAILABLE');
    assert.equal(line.requestId, 'test-req');
    assert.equal(line.cause, 'connect ECONNREFUSED for [hash]');
  });

  test('an unknown error: generic 500, logged with a masked message, never echoed', async () => {
    const { srv, log } = await start(new TypeError('boom near nk_live_abcdef123'));
    const r = await send(srv.port, '/a');
    assert.equal(r.status, 500);
    assert.deepEqual(r.json, { error: 'Internal Server Error', details: 'Unexpected error' });
    assert.doesNotMatch(r.body, /boom|nk_live/);
    const line = log.lines()[0]!;
    assert.equal(line.level, 'error');
    assert.equal((line.err as { message: string }).message, 'boom near [key]');
  });

  test('a parser-style 4xx error answers 400 Bad Request', async () => {
    const { srv } = await start(Object.assign(new Error('bad json'), { status: 400 }));
    const r = await send(srv.port, '/a');
    assert.equal(r.status, 400);
    assert.deepEqual(r.json, { error: 'Bad Request', details: 'Malformed request' });
    assert.equal(r.headers.connection, 'close');
  });

  test('after headers were sent, the response is cut instead of completed', async () => {
    const { srv } = await start(new Error('late'), { afterHeaders: true });
    await assert.rejects(send(srv.port, '/a'));
  });

  test('works without request state (an error before the request context step)', async () => {
    const { logger } = captureLogger();
    const handler = createErrorHandler({ logger });
    const app = express();
    app.use(((_req, _res, next) => next(new GatewayError('UPSTREAM_TIMEOUT'))) as RequestHandler);
    app.use(handler);
    const server: Server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const r = await send((server.address() as AddressInfo).port, '/a');
      assert.equal(r.status, 504);
      assert.deepEqual(r.json, {
        error: 'Gateway Timeout',
        details: 'Upstream service did not answer in time',
      });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  test('invalid options throw when the step is built', () => {
    assert.throws(() => createErrorHandler({ logger: {} as never }), /logger.error must be a function/);
  });
});
