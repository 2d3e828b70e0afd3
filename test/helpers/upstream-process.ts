import { spawn, type ChildProcess } from 'node:child_process';

/** One request as an upstream process saw it, reported over IPC as soon as its body ended. */
export interface Arrival {
  method: string;
  url: string;
  /** The `X-Test-Id` header: one id per client request, to find duplicates. */
  id: string;
  body: string;
}

/** How the process answers: status and a delay before the answer. */
export interface Behaviour {
  status?: number;
  delayMs?: number;
  retryAfter?: string;
}

/**
 * A real upstream in a process of its own, which the tests kill (SIGKILL), restart on the same
 * port, pause (SIGSTOP) and slow down. Every request is reported to the test process before it is
 * answered, so a killed process's arrivals are still counted.
 */
export interface UpstreamProcess {
  port: number;
  url: string;
  arrivals: Arrival[];
  set(b: Behaviour): Promise<void>;
  kill(): Promise<void>;
  restart(): Promise<void>;
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

const SCRIPT = `
const http = require('node:http');
let b = { status: 200, delayMs: 0 };
process.on('message', (m) => { b = { status: 200, delayMs: 0, ...m }; process.send({ ack: true }); });
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    process.send({ method: req.method, url: req.url, id: String(req.headers['x-test-id'] || ''), body: Buffer.concat(chunks).toString() });
    const answer = () => {
      const h = { 'content-type': 'application/json' };
      if (b.retryAfter) h['retry-after'] = b.retryAfter;
      res.writeHead(b.status, h).end(JSON.stringify({ port: server.address().port }));
    };
    if (b.delayMs > 0) setTimeout(answer, b.delayMs); else answer();
  });
});
server.keepAliveTimeout = 60000;
server.listen(Number(process.argv[1]), '127.0.0.1', () => process.send({ port: server.address().port }));
`;

/** Starts an upstream process on `port` (0: any free port). */
export async function startUpstreamProcess(port = 0): Promise<UpstreamProcess> {
  const arrivals: Arrival[] = [];
  let child: ChildProcess;
  let behaviour: Behaviour = {};
  const spawnOn = (p: number) =>
    new Promise<number>((resolve, reject) => {
      child = spawn(process.execPath, ['-e', SCRIPT, String(p)], {
        stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      });
      child.on('message', (m: Record<string, unknown>) => {
        if (typeof m.port === 'number' && m.method === undefined) resolve(m.port);
        else if (typeof m.method === 'string') arrivals.push(m as unknown as Arrival);
      });
      child.once('error', reject);
      child.once('exit', () => reject(new Error('upstream process exited before listening')));
    });
  const actual = await spawnOn(port);
  const exited = () =>
    new Promise<void>((r) =>
      child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r()),
    );
  const set = (b: Behaviour) =>
    new Promise<void>((resolve) => {
      behaviour = b;
      const onAck = (m: Record<string, unknown>) => {
        if (m.ack !== true) return;
        child.off('message', onAck);
        resolve();
      };
      child.on('message', onAck);
      child.send(b);
    });
  return {
    port: actual,
    url: `http://127.0.0.1:${actual}`,
    arrivals,
    set,
    async kill() {
      child.kill('SIGKILL');
      await exited();
    },
    async restart() {
      await spawnOn(actual);
      if (Object.keys(behaviour).length > 0) await set(behaviour);
    },
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    async close() {
      child.kill('SIGCONT');
      child.kill('SIGKILL');
      await exited();
    },
  };
}
