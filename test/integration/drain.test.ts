import assert from 'node:assert/strict';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { createCompanyAndKey } from '../helpers/admin.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/http.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// A drain must let keep-alive clients go without a reset: every answer written once it has begun
// says `Connection: close` (proxied ones and the gateway's own), answers in flight included, and
// a connection idle when it begins stays open for the request that may already be on its way.

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  reusedSocket: boolean;
}

/** One request on `agent` (keep-alive): the answer, or the error's code. */
function ask(
  port: number,
  agent: Agent,
  path: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent, headers }, (res) => {
      res.resume();
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, reusedSocket: req.reusedSocket }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

function errorCode(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
}

describe('drain with keep-alive clients', () => {
  let upstream: RecordingUpstream;
  before(async () => {
    upstream = await startUpstream();
  });
  after(() => upstream.close());

  async function gateway(server: Record<string, unknown> = {}): Promise<{ t: TestGateway; key: string }> {
    const t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      server: { shutdownTimeoutMs: 20_000, ...server },
      log: { level: 'silent' },
    });
    const k = await createCompanyAndKey(t.gw.service, 'acme', { tier: 'enterprise' });
    return { t, key: k.key };
  }

  test('clients that never stop sending: no reset over many drains, and every answer sent during a drain says Connection: close', async () => {
    upstream.handle((_req, res) => setTimeout(() => res.end('{}'), Math.floor(Math.random() * 4)));
    const deadline = Date.now() + 30_000;
    const failures: string[] = [];
    let drains = 0;
    let answersDuringDrain = 0;
    let refused = 0;
    // Bounded: 12 drains, or fewer when the machine is slow.
    for (let run = 0; run < 12 && Date.now() < deadline; run++) {
      const { t, key } = await gateway();
      let draining = false;
      const clients = Array.from({ length: 6 }, async (_, i) => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        // Half get proxied answers; half the gateway's own (404: no route; no key, so no
        // failed-authentication budget in play).
        const proxied = i % 2 === 0;
        const path = proxied ? '/notify/v1/otps' : '/nowhere';
        try {
          for (;;) {
            const sentDuringDrain = draining;
            let a: Answer;
            try {
              a = await ask(t.port, agent, path, { 'X-API-Key': key });
            } catch (err) {
              // Once the listener is closed a new connection is refused; that is the end of it.
              if (errorCode(err) === 'ECONNREFUSED' && draining) return void refused++;
              return void failures.push(`run ${run}, client ${i}: ${errorCode(err)}`);
            }
            if (a.status !== (proxied ? 200 : 404)) failures.push(`run ${run}: status ${a.status}`);
            if (sentDuringDrain) {
              answersDuringDrain++;
              if (a.headers.connection !== 'close')
                failures.push(
                  `run ${run}: an answer during the drain says Connection: ${a.headers.connection}`,
                );
            }
          }
        } finally {
          agent.destroy();
        }
      });
      // Let the clients get going, then drain while they send.
      await eventually(async () => upstream.received.length > 50 * (run + 1), 5000);
      const closing = t.close();
      draining = true;
      await closing;
      drains++;
      await Promise.all(clients);
    }
    assert.deepEqual(failures, []);
    assert.ok(drains >= 3, `at least 3 drains ran (${drains})`);
    assert.ok(answersDuringDrain > 0, 'answers were sent during the drains');
    assert.equal(refused, drains * 6, 'each client ends with a refused new connection, never a reset');
  });

  test('answers in flight when the drain begins say Connection: close: proxied, and the gateway timeout', async () => {
    const held: (() => void)[] = [];
    // `/slow` is answered when the test says; `/never` not at all (the gateway answers 504 itself).
    upstream.handle((req, res) => {
      if (req.url?.endsWith('/slow')) held.push(() => res.end('{"slow":true}'));
    });
    const t = await startTestGateway({
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      upstream: { timeoutMs: 1500 },
      server: { shutdownTimeoutMs: 20_000 },
      log: { level: 'silent' },
    });
    const { key } = await createCompanyAndKey(t.gw.service, 'acme', { tier: 'enterprise' });
    const agents = [
      new Agent({ keepAlive: true, maxSockets: 1 }),
      new Agent({ keepAlive: true, maxSockets: 1 }),
    ];
    try {
      const before = upstream.received.length;
      const slow = ask(t.port, agents[0]!, '/notify/v1/slow', { 'X-API-Key': key });
      const never = ask(t.port, agents[1]!, '/notify/v1/never', { 'X-API-Key': key });
      await eventually(async () => upstream.received.length === before + 2, 2000);
      const closing = t.close();
      held[0]!();
      const proxied = await slow;
      assert.equal(proxied.status, 200);
      assert.equal(proxied.headers.connection, 'close');
      const own = await never;
      assert.equal(own.status, 504);
      assert.equal(own.headers.connection, 'close');
      await closing;
    } finally {
      for (const a of agents) a.destroy();
    }
  });

  test('a connection idle when the drain begins still carries the next request, answered with Connection: close', async () => {
    upstream.handle((_req, res) => res.end('{}'));
    const { t, key } = await gateway({ keepAliveTimeoutMs: 4000 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await ask(t.port, agent, '/notify/v1/a', { 'X-API-Key': key });
      assert.equal(first.headers.connection, 'keep-alive');
      const closing = t.close();
      // The request a client sends on its pooled connection just as the drain begins.
      await new Promise((r) => setImmediate(r));
      const next = await ask(t.port, agent, '/notify/v1/b', { 'X-API-Key': key });
      assert.equal(next.reusedSocket, true, 'sent on the connection that was idle');
      assert.equal(next.status, 200);
      assert.equal(next.headers.connection, 'close');
      await closing;
    } finally {
      agent.destroy();
    }
  });

  test('a connection left idle ends the drain at its keep-alive timeout, not at shutdownTimeoutMs', async () => {
    upstream.handle((_req, res) => res.end('{}'));
    const { t, key } = await gateway({ keepAliveTimeoutMs: 200, shutdownTimeoutMs: 60_000 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await ask(t.port, agent, '/notify/v1/a', { 'X-API-Key': key });
      assert.equal(first.headers.connection, 'keep-alive');
      const socketClosed = new Promise<void>((resolve) => {
        const sockets = Object.values(agent.freeSockets).flat();
        assert.equal(sockets.length, 1, 'the connection is kept, idle');
        sockets[0]!.once('close', () => resolve());
      });
      const began = Date.now();
      await t.close();
      await socketClosed;
      // The bound is the keep-alive timeout (plus Node's own second), far below the 60 s cut.
      assert.ok(Date.now() - began < 30_000, `drained in ${Date.now() - began} ms`);
    } finally {
      agent.destroy();
    }
  });
});
