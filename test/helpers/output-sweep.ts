import assert from 'node:assert/strict';
import { Redis } from 'ioredis';
import { KEY_LIKE_PATTERN } from '../../src/auth/api-key.js';
import type { ConfigInput } from '../../src/config/schema.js';
import type { StartOptions } from '../../src/server.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from './gateway.js';
import { send, sendRaw, type sendFrom } from './http.js';
import { startRedis, type TestRedis } from './redis.js';
import { startUpstream, type RecordingUpstream } from './upstream.js';

/** One captured output: where it came from and its text. */
interface Output {
  where: string;
  text: string;
}

/**
 * The canary sweep (INVARIANTS.md, identity 1): the same starters and clients as the other helpers,
 * except that everything they start is watched for the whole test file, and `assertNoKeyLeaked()`
 * checks every key created or presented anywhere in the file against every output of every
 * instance:
 *
 * - every log line of every gateway (forced to level `trace`, so no line is left unwritten),
 * - every gateway's metrics and audit trail (read when it closes, or at the sweep if still open),
 * - every request every recording upstream received (kept even when a test clears `received`),
 * - every answer a client got through `send`/`sendFrom`/`sendRaw` (error bodies and headers),
 * - the contents of every Redis server (read before it is killed, restarted or stopped, and at the
 *   sweep) and every message published on it.
 *
 * Keys are collected from every create/rotate answer of every gateway's admin service (the admin
 * API goes through the same object) and from every key-shaped string a client sent in a request
 * line or header, so unknown and mistyped keys count too.
 */
export interface OutputSweep {
  startTestGateway(input: ConfigInput, opts?: StartOptions): Promise<TestGateway>;
  startUpstream(): Promise<RecordingUpstream>;
  startRedis(opts?: Parameters<typeof startRedis>[0]): Promise<TestRedis>;
  send: typeof send;
  sendFrom: typeof sendFrom;
  sendRaw: typeof sendRaw;
  /** Records an answer a client got by other means (a hand-made request). */
  recordAnswer(where: string, text: string): void;
  /** Adds a key to check (one the file made by other means). */
  addKey(key: string): void;
  /** How many keys and outputs the sweep holds so far (to show it is not vacuous). */
  size(): Promise<{ keys: number; outputs: number; gateways: number; upstreams: number; redis: number }>;
  /** Fails, naming the output, if any key (or its secret part) appears in any output. */
  assertNoKeyLeaked(): Promise<void>;
}

const KEY_LIKE_GLOBAL = new RegExp(KEY_LIKE_PATTERN.source, 'g');

/** The part of a key that must never show: everything after the 6 display characters, before the checksum. */
function secretPartOf(key: string): string {
  const m = /^nk_[a-z0-9]+_/.exec(key);
  return m ? key.slice(m[0].length + 6, key.length - 6) : key;
}

export function createOutputSweep(): OutputSweep {
  const keys = new Set<string>();
  const outputs: Output[] = [];
  /** Snapshots of instances still running, taken at the sweep. */
  const live = new Map<string, () => Promise<Output[]>>();
  const adminPorts = new Set<number>();
  let gateways = 0;
  let upstreams = 0;
  let redises = 0;

  const collectKeysFrom = (text: string) => {
    for (const m of text.matchAll(KEY_LIKE_GLOBAL)) keys.add(m[0]);
  };

  async function gatewayOutputs(name: string, t: TestGateway): Promise<Output[]> {
    const out: Output[] = [{ where: `${name} log`, text: t.logText() }];
    out.push({
      where: `${name} metrics`,
      text: t.adminPort
        ? await (
            await fetch(`http://127.0.0.1:${t.adminPort}/metrics`, {
              headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
            })
          ).text()
        : await t.gw.metrics.registry.metrics(),
    });
    try {
      out.push({
        where: `${name} audit`,
        text: JSON.stringify(await t.gw.store.readAudit({ limit: 1_000_000 })),
      });
    } catch (err) {
      // The store is gone (a killed Redis): its audit stream was dumped with the Redis contents.
      out.push({ where: `${name} audit unreadable`, text: String(err) });
    }
    return out;
  }

  async function sweptGateway(input: ConfigInput, opts: StartOptions = {}): Promise<TestGateway> {
    const name = `gateway ${++gateways}`;
    const t = await startTestGateway({ ...input, log: { ...input.log, level: 'trace' } }, opts);
    if (t.adminPort) adminPorts.add(t.adminPort);
    const service = t.gw.service;
    const createKey = service.createKey.bind(service);
    const rotateKey = service.rotateKey.bind(service);
    service.createKey = async (...args) => {
      const r = await createKey(...args);
      if (r.ok) keys.add(r.value.key);
      return r;
    };
    service.rotateKey = async (...args) => {
      const r = await rotateKey(...args);
      if (r.ok) keys.add(r.value.key);
      return r;
    };
    live.set(name, () => gatewayOutputs(name, t));
    let closing: Promise<void> | undefined;
    return {
      ...t,
      close() {
        closing ??= (async () => {
          live.delete(name);
          outputs.push(...(await gatewayOutputs(name, t)));
          await t.close();
        })();
        return closing;
      },
    };
  }

  async function sweptUpstream(): Promise<RecordingUpstream> {
    const name = `upstream ${++upstreams}`;
    const u = await startUpstream();
    const seen = { where: `${name} received`, text: '' };
    outputs.push(seen);
    // Tests clear `received` between cases: keep a copy of every request as it arrives.
    const push = u.received.push.bind(u.received);
    u.received.push = (...items) => {
      for (const r of items)
        seen.text +=
          JSON.stringify([r.method, r.url, r.rawHeaders, r.body.toString('latin1'), r.trailers]) + '\n';
      return push(...items);
    };
    return u;
  }

  async function dumpRedis(port: number): Promise<string> {
    const c = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      commandTimeout: 2000,
    });
    c.on('error', () => undefined);
    try {
      await c.connect();
      const lines: string[] = [];
      let cursor = '0';
      do {
        const [next, names] = await c.scan(cursor, 'COUNT', 1000);
        cursor = next;
        for (const k of names) {
          const type = await c.type(k);
          const value =
            type === 'string'
              ? await c.get(k)
              : type === 'hash'
                ? await c.hgetall(k)
                : type === 'list'
                  ? await c.lrange(k, 0, -1)
                  : type === 'set'
                    ? await c.smembers(k)
                    : type === 'zset'
                      ? await c.zrange(k, 0, -1, 'WITHSCORES')
                      : type === 'stream'
                        ? await c.xrange(k, '-', '+')
                        : `(${type})`;
          lines.push(JSON.stringify([k, type, value]));
        }
      } while (cursor !== '0');
      return lines.join('\n');
    } finally {
      c.disconnect();
    }
  }

  async function sweptRedis(opts?: Parameters<typeof startRedis>[0]): Promise<TestRedis> {
    const name = `redis ${++redises}`;
    const r = await startRedis(opts);
    let paused = false;
    let dumps = 0;
    const published = { where: `${name} pub/sub`, text: '' };
    outputs.push(published);
    const sub = new Redis({
      port: r.port,
      host: '127.0.0.1',
      maxRetriesPerRequest: 0,
      retryStrategy: () => 100,
    });
    sub.on('error', () => undefined);
    sub.on('pmessageBuffer', (_p: Buffer, channel: Buffer, msg: Buffer) => {
      published.text += `${channel.toString('latin1')} ${msg.toString('latin1')}\n`;
    });
    await sub.psubscribe('*');
    const dump = async () => {
      if (paused) r.resume();
      outputs.push({ where: `${name} contents (${++dumps})`, text: await dumpRedis(r.port) });
      if (paused) r.pause();
    };
    live.set(name, async () => [{ where: `${name} contents (at the sweep)`, text: await dumpRedis(r.port) }]);
    return {
      ...r,
      pause() {
        paused = true;
        r.pause();
      },
      resume() {
        paused = false;
        r.resume();
      },
      async kill() {
        await dump();
        live.delete(name);
        sub.disconnect();
        await r.kill();
      },
      async restart() {
        await dump();
        await r.restart();
        live.set(name, async () => [
          { where: `${name} contents (at the sweep)`, text: await dumpRedis(r.port) },
        ]);
      },
      async stop() {
        paused = false;
        r.resume();
        if (live.has(name)) await dump();
        live.delete(name);
        sub.disconnect();
        await r.stop();
      },
    };
  }

  const sweptSend: typeof send = async (port, path, opts = {}) => {
    const head = [
      path,
      ...(Array.isArray(opts.headers) ? opts.headers.flat() : Object.values(opts.headers ?? {})),
    ];
    collectKeysFrom(head.join('\n'));
    const reply = await send(port, path, opts);
    // Create and rotate answers of the admin API carry the new key by design.
    const createdKey = adminPorts.has(port) && opts.method === 'POST' && reply.status === 201;
    if (!createdKey)
      outputs.push({
        where: `answer to ${opts.method ?? 'GET'} ${path.slice(0, 60)}`,
        text: `${reply.status}\n${JSON.stringify(reply.headers)}\n${reply.body}`,
      });
    return reply;
  };

  const sweptSendRaw: typeof sendRaw = async (port, data, ms) => {
    const text = typeof data === 'string' ? data : data.toString('latin1');
    // The request head and any trailers (not the body: an upstream may legitimately get any body).
    collectKeysFrom(text.split('\r\n\r\n')[0]!);
    collectKeysFrom(text.split('\r\n0\r\n').slice(1).join('\n'));
    const res = await sendRaw(port, data, ms);
    outputs.push({ where: `raw answer to ${JSON.stringify(text.slice(0, 40))}`, text: res });
    return res;
  };

  return {
    startTestGateway: sweptGateway,
    startUpstream: sweptUpstream,
    startRedis: sweptRedis,
    send: sweptSend,
    sendFrom: (localAddress, port, path, headers = {}) => sweptSend(port, path, { headers, localAddress }),
    sendRaw: sweptSendRaw,
    recordAnswer(where, text) {
      outputs.push({ where, text });
    },
    addKey(key) {
      keys.add(key);
    },
    async size() {
      return { keys: keys.size, outputs: outputs.length + live.size, gateways, upstreams, redis: redises };
    },
    async assertNoKeyLeaked() {
      const all = [...outputs];
      for (const snapshot of live.values()) all.push(...(await snapshot()));
      const leaks: string[] = [];
      for (const key of keys) {
        const secret = secretPartOf(key);
        for (const o of all)
          if (o.text.includes(key) || o.text.includes(secret))
            leaks.push(`${key.slice(0, 14)}… in ${o.where}`);
      }
      assert.deepEqual(leaks, [], 'key material leaked');
    },
  };
}
