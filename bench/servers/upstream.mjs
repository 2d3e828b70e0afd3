// The one upstream every target proxies to: a raw node:http server answering a small JSON body.
// Kept as cheap as possible so the targets, not the upstream, are what the numbers describe.
import { Buffer } from 'node:buffer';
import { createServer } from 'node:http';

const port = Number(process.env.PORT);
const body = Buffer.from(JSON.stringify({ id: 'msg_0123456789abcdef', status: 'queued' }));
const headers = { 'content-type': 'application/json', 'content-length': String(body.length) };

const server = createServer((req, res) => {
  // Read and discard any request body: answering before it is consumed would stall keep-alive reuse.
  req.resume();
  req.once('end', () => {
    res.writeHead(200, headers);
    res.end(body);
  });
});
// Longer than any proxy's idle reuse, so a proxy never reuses a socket the upstream is closing
// (that race would surface as a stray 502 in a run).
server.keepAliveTimeout = 120_000;
server.headersTimeout = 121_000;
server.listen(port, '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
process.once('SIGINT', () => process.exit(0));
