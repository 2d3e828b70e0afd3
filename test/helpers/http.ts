import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Socket } from 'node:net';

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  json: unknown;
}

/** Headers of a request: a record, or a list of [name, value] pairs (names may repeat or differ only in case). */
export type RequestHeaders = Record<string, string> | [string, string][];

/**
 * One HTTP request to 127.0.0.1 with full control over headers (a raw list gets `Host` unless it
 * has one). No keep-alive between calls. `localAddress`: the source address (see `sendFrom`).
 */
export function send(
  port: number,
  path: string,
  opts: {
    method?: string;
    headers?: RequestHeaders;
    body?: string | Buffer;
    localAddress?: string;
  } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    // A raw header list skips Node's automatic Host header: add it unless the test sent one.
    const headers = Array.isArray(opts.headers)
      ? [
          ...(opts.headers.some(([n]) => n.toLowerCase() === 'host') ? [] : ['Host', `127.0.0.1:${port}`]),
          ...opts.headers.flat(),
        ]
      : (opts.headers ?? {});
    const source = opts.localAddress ? { localAddress: opts.localAddress } : {};
    const req = httpRequest(
      { host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers, agent: false, ...source },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = JSON.parse(body);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json });
        });
      },
    );
    req.on('error', reject);
    if (opts.body !== undefined) req.write(opts.body);
    req.end();
  });
}

/**
 * A GET from the source address `localAddress`: 127.0.0.0/8 is all loopback, so each test can be a
 * client address of its own (per-address budgets, trusted proxies).
 *
 * @example
 * const r = await sendFrom('127.0.0.2', port, '/notify/v1/x', { 'X-API-Key': key });
 */
export function sendFrom(
  localAddress: string,
  port: number,
  path: string,
  headers: RequestHeaders = {},
): Promise<Reply> {
  return send(port, path, { headers, localAddress });
}

/**
 * Writes raw bytes on a TCP socket and collects everything until the server closes or `ms` pass
 * (for smuggling and parser tests where a client library would refuse to send the request).
 */
export function sendRaw(port: number, data: string | Buffer, ms = 1500): Promise<string> {
  return new Promise((resolve) => {
    const s = new Socket();
    const chunks: Buffer[] = [];
    const done = () => {
      clearTimeout(timer);
      s.destroy();
      resolve(Buffer.concat(chunks).toString('latin1'));
    };
    const timer = setTimeout(done, ms);
    s.on('data', (c) => chunks.push(c));
    s.on('error', done);
    s.on('close', done);
    s.connect(port, '127.0.0.1', () => s.write(data));
  });
}

/** Polls `fn` until it returns true or `ms` pass; resolves with the time it took (ms), rejects on time-out. */
export async function eventually(fn: () => Promise<boolean>, ms: number, stepMs = 10): Promise<number> {
  const start = Date.now();
  for (;;) {
    if (await fn()) return Date.now() - start;
    if (Date.now() - start > ms) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
