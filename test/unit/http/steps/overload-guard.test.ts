import assert from 'node:assert/strict';
import { request, type ServerResponse } from 'node:http';
import { after, describe, test } from 'node:test';
import type { RequestHandler } from 'express';
import { Counter, Registry } from 'prom-client';
import { createOverloadGuard, startLagSampler } from '../../../../src/http/steps/overload-guard.js';
import { eventually, send } from '../../../helpers/http.js';
import { serveStep, type StepServer } from '../../../helpers/step-server.js';

const servers: StepServer[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

function refusedCounter() {
  const registry = new Registry();
  return new Counter({ name: 'refused_total', help: 'x', labelNames: ['reason'], registers: [registry] });
}
async function countOf(c: Counter<'reason'>, reason: string): Promise<number> {
  return (await c.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

/** A step server behind the guard whose final handler holds every response until released. */
async function start(opts: { maxInFlight: number; maxEventLoopDelayMs?: number; delay?: () => number }) {
  const refused = refusedCounter();
  const guard = createOverloadGuard({
    maxInFlight: opts.maxInFlight,
    maxEventLoopDelayMs: opts.maxEventLoopDelayMs ?? 0,
    retryAfterSeconds: 3,
    refused,
    ...(opts.delay && { eventLoopDelay: opts.delay }),
  });
  const held: ServerResponse[] = [];
  const hold: RequestHandler = (_req, res) => void held.push(res);
  const srv = await serveStep(guard, { final: hold });
  servers.push(srv);
  return { srv, held, refused };
}

/** A request whose answer is not awaited (it is held); resolves with its status once answered. */
function sendHeld(port: number): { status: Promise<number>; abort(): void } {
  const req = request({ host: '127.0.0.1', port, path: '/x', agent: false });
  const status = new Promise<number>((resolve) => {
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
  });
  req.end();
  return { status, abort: () => req.destroy() };
}

describe('overload guard step', () => {
  test('past maxInFlight: 503 OVERLOADED with Retry-After, counted, not passed on; a finished request frees its slot', async () => {
    const { srv, held, refused } = await start({ maxInFlight: 2 });
    const a = sendHeld(srv.port);
    const b = sendHeld(srv.port);
    await eventually(async () => held.length === 2, 5000);
    const r = await send(srv.port, '/x');
    assert.equal(r.status, 503);
    assert.equal(r.headers['retry-after'], '3');
    assert.deepEqual(r.json, {
      error: 'Service Unavailable',
      details: 'The gateway is at capacity; retry after the delay in Retry-After',
    });
    assert.equal(held.length, 2, 'the refused request went no further');
    assert.equal(await countOf(refused, 'in_flight'), 1);
    assert.equal(srv.finished.at(-1)?.error, 'OVERLOADED');
    assert.equal(srv.finished.at(-1)?.denyReason, 'in_flight');
    held[0]!.end('done');
    assert.equal(await a.status, 200);
    const c = sendHeld(srv.port);
    await eventually(async () => held.length === 3, 5000);
    held[1]!.end();
    held[2]!.end();
    assert.equal(await b.status, 200);
    assert.equal(await c.status, 200);
  });

  test('a client that goes away frees its slot', async () => {
    const { srv, held } = await start({ maxInFlight: 1 });
    const a = sendHeld(srv.port);
    await eventually(async () => held.length === 1, 5000);
    assert.equal((await send(srv.port, '/x')).status, 503);
    a.abort();
    await eventually(async () => held[0]!.destroyed, 5000);
    const b = sendHeld(srv.port);
    await eventually(async () => held.length === 2, 5000);
    held[1]!.end();
    assert.equal(await b.status, 200);
  });

  test('event-loop delay over the bound refuses; at the bound admits', async () => {
    let delay = 0;
    const { srv, held, refused } = await start({
      maxInFlight: 0,
      maxEventLoopDelayMs: 100,
      delay: () => delay,
    });
    delay = 101;
    const r = await send(srv.port, '/x');
    assert.equal(r.status, 503);
    assert.equal(r.headers['retry-after'], '3');
    assert.equal(await countOf(refused, 'event_loop_delay'), 1);
    assert.equal(held.length, 0);
    delay = 100;
    const ok = sendHeld(srv.port);
    await eventually(async () => held.length === 1, 5000);
    held[0]!.end();
    assert.equal(await ok.status, 200);
  });

  test('0 turns each bound off', async () => {
    const { srv, held } = await start({ maxInFlight: 0, maxEventLoopDelayMs: 0, delay: () => 1e9 });
    const reqs = Array.from({ length: 5 }, () => sendHeld(srv.port));
    await eventually(async () => held.length === 5, 5000);
    for (const res of held) res.end();
    for (const r of reqs) assert.equal(await r.status, 200);
  });

  test('invalid options throw at creation', () => {
    const refused = refusedCounter();
    const base = { maxInFlight: 1, maxEventLoopDelayMs: 0, retryAfterSeconds: 1, refused };
    assert.throws(() => createOverloadGuard({ ...base, maxInFlight: -1 }), /maxInFlight/);
    assert.throws(() => createOverloadGuard({ ...base, maxEventLoopDelayMs: 1.5 }), /maxEventLoopDelayMs/);
    assert.throws(() => createOverloadGuard({ ...base, refused: {} as never }), /refused/);
  });
});

describe('startLagSampler', () => {
  const block = (ms: number) => {
    const until = performance.now() + ms;
    while (performance.now() < until); // the event loop waits
  };
  /** Blocks the loop in each of the next `turns` timer turns (the sampler's timer runs in between). */
  async function blockTurns(turns: number, ms: number) {
    for (let i = 0; i < turns; i++) {
      block(ms);
      await new Promise((r) => setTimeout(r, 0));
    }
  }

  test('an event loop late turn after turn shows as delay, then the delay falls back', async () => {
    const sampler = startLagSampler(10);
    try {
      await blockTurns(4, 120);
      assert.ok(sampler.delay() >= 100, `delay ${sampler.delay()}`);
      await eventually(async () => sampler.delay() < 100, 5000);
    } finally {
      sampler.stop();
    }
  });

  test('one pause is not overload', async () => {
    const sampler = startLagSampler(10);
    try {
      await new Promise((r) => setTimeout(r, 30));
      block(150);
      await new Promise((r) => setTimeout(r, 25));
      assert.ok(sampler.delay() < 100, `delay ${sampler.delay()}`);
    } finally {
      sampler.stop();
    }
  });
});
