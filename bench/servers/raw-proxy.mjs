// The Node ceiling: a raw node:http reverse proxy over a keep-alive agent, streaming both ways
// (http.request + pipe). It drops the hop-by-hop headers and nothing else — no framework, no checks.
import { Agent, createServer, request } from 'node:http';

const port = Number(process.env.PORT);
const target = new URL(process.env.TARGET);
const agent = new Agent({ keepAlive: true, maxSockets: 512 });

function dropHopByHop(headers) {
  delete headers.connection;
  delete headers['keep-alive'];
  return headers;
}

const server = createServer((req, res) => {
  const upstream = request(
    {
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: dropHopByHop(req.headers),
      agent,
    },
    (upRes) => {
      res.writeHead(upRes.statusCode, dropHopByHop(upRes.headers));
      upRes.pipe(res);
    },
  );
  upstream.once('error', () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(upstream);
});
server.listen(port, '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
process.once('SIGINT', () => process.exit(0));
