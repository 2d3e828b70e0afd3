import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request a receiver got: its headers and raw body, and what it answered. */
export interface Receipt {
  headers: IncomingHttpHeaders;
  /** The raw body as received (what the signature covers). */
  body: string;
  /** The answer given: a status, or `hang` (never answered). */
  answer: number | 'hang';
}

/** How the receiver answers one request: a status, or `hang` (hold the request, never answer). */
export type Answer = number | 'hang';

/** A real webhook receiver on 127.0.0.1. */
export interface Receiver {
  url: string;
  port: number;
  received: Receipt[];
  /** Answers to give, in order; once used up, `then` (200 by default) for every later request. */
  script(answers: Answer[], then?: Answer): void;
  /** Resolves once `n` requests arrived (rejects after `ms`). */
  waitFor(n: number, ms?: number): Promise<Receipt[]>;
  /** Receipts whose JSON body has `type`. */
  ofType(type: string): Receipt[];
  close(): Promise<void>;
}

/**
 * A webhook receiver that fails, hangs or succeeds as scripted and records every request in full,
 * so tests count deliveries and verify their signatures on the bytes that actually arrived.
 */
export async function startReceiver(): Promise<Receiver> {
  const received: Receipt[] = [];
  let answers: Answer[] = [];
  let then: Answer = 200;
  const sockets = new Set<Socket>();
  const waiters: { n: number; resolve: () => void }[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const answer = answers.length ? answers.shift()! : then;
      received.push({ headers: req.headers, body, answer });
      for (const w of waiters.filter((x) => received.length >= x.n)) w.resolve();
      if (answer === 'hang') return;
      res.writeHead(answer, { 'content-type': 'text/plain' }).end(answer < 300 ? 'ok' : 'no');
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    script(a, t = 200) {
      answers = [...a];
      then = t;
    },
    waitFor(n, ms = 20_000) {
      if (received.length >= n) return Promise.resolve(received);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`receiver got ${received.length} requests, waited for ${n}`)),
          ms,
        );
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve(received);
          },
        });
      });
    },
    ofType: (type) => received.filter((r) => (JSON.parse(r.body) as { type?: string }).type === type),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Polls `check` every 20 ms until it returns a value other than undefined/false (rejects after `ms`). */
export async function until<T>(
  check: () => Promise<T> | T,
  ms = 20_000,
  what = 'condition',
): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== null && v !== false) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
