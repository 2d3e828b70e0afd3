import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: Buffer;
  trailers: Record<string, string | undefined>;
}

export interface RecordingUpstream {
  port: number;
  url: string;
  received: Received[];
  /** Replace the answer; the default echoes a small JSON body with status 200. */
  handle(fn: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void): void;
  close(): Promise<void>;
}

/**
 * A real HTTP upstream on 127.0.0.1 that records every request it receives (headers exactly as
 * sent, body in full, trailers) so tests assert on what actually left the gateway.
 */
export async function startUpstream(): Promise<RecordingUpstream> {
  const received: Received[] = [];
  let handler: (req: IncomingMessage, res: ServerResponse, body: Buffer) => void = (_req, res) => {
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ ok: true }));
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body,
        trailers: req.trailers,
      });
      handler(req, res, body);
    });
    req.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    received,
    handle(fn) {
      handler = fn;
    },
    close: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
