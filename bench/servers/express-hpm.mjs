// Bare Express 5 + http-proxy-middleware, written the way a user would. KEEPALIVE=1 adds a keep-alive
// agent: without one, http-proxy opens a new upstream connection per request (`agent: false` and
// `Connection: close`), which is the "default" baseline.
import { Agent } from 'node:http';
import express from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';

const port = Number(process.env.PORT);
const target = process.env.TARGET;
const options = { target };
if (process.env.KEEPALIVE === '1') options.agent = new Agent({ keepAlive: true });

const app = express();
app.use(createProxyMiddleware(options));
app.listen(port, '127.0.0.1');
process.once('SIGTERM', () => process.exit(0));
process.once('SIGINT', () => process.exit(0));
