// http-proxy-middleware with a keep-alive agent behind a plain node:http server (no Express): the
// proxy library the gateway forwards with, alone. The ceiling the gateway's own work is measured
// against (bench target `hpm-plain`).
import { Agent, createServer } from 'node:http';
import { createProxyMiddleware } from 'http-proxy-middleware';

const proxy = createProxyMiddleware({ target: process.env.TARGET, agent: new Agent({ keepAlive: true }) });
const server = createServer((req, res) =>
  proxy(req, res, () => {
    res.statusCode = 404;
    res.end();
  }),
);
// bench/connections.mjs holds idle keep-alive connections for the whole run, as for the gateway.
if (process.env.KEEP_ALIVE_TIMEOUT_MS) {
  server.keepAliveTimeout = Number(process.env.KEEP_ALIVE_TIMEOUT_MS);
  server.headersTimeout = server.requestTimeout = Number(process.env.KEEP_ALIVE_TIMEOUT_MS) + 1000;
}
server.listen(Number(process.env.PORT), '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
process.once('SIGINT', () => process.exit(0));
