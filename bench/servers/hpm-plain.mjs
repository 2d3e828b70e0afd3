// http-proxy-middleware with a keep-alive agent behind a plain node:http server (no Express): the
// proxy library the gateway forwards with, alone. The ceiling the gateway's own work is measured
// against (bench target `hpm-plain`).
import { Agent, createServer } from 'node:http';
import { createProxyMiddleware } from 'http-proxy-middleware';

const proxy = createProxyMiddleware({ target: process.env.TARGET, agent: new Agent({ keepAlive: true }) });
createServer((req, res) =>
  proxy(req, res, () => {
    res.statusCode = 404;
    res.end();
  }),
).listen(Number(process.env.PORT), '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
process.once('SIGINT', () => process.exit(0));
