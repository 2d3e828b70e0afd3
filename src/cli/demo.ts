import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Command } from 'commander';
import { EXIT_OK, exitWith, fail, type CliContext } from './io.js';
import { parsePort } from './options.js';

/** `demo` (gateway, example backend, demo keys) and `example-backend` (the backend alone). */
export function registerDemoCommands(program: Command, ctx: CliContext): void {
  program
    .command('demo')
    .description('run the gateway and an example notification backend on the in-memory store, with demo keys')
    .action(() => runDemo(ctx));
  // docker-compose, the Kubernetes examples and local trials run the backend on its own.
  program
    .command('example-backend')
    .description('run only the example notification backend (GET /notify/v1/health, POST /notify/v1/otps)')
    .option('-p, --port <port>', 'port', '9090')
    .option('--host <host>', 'address to bind', '0.0.0.0')
    .action((o: { port: string; host: string }) => runExampleBackend(ctx, o));
}

/**
 * Starts the demo on `PORT`/`ADMIN_PORT`/`DASHBOARD_PORT` (8080/8081/8082), prints its curl commands
 * and the dashboard's URL and member, then every dashboard mail; stops on a signal.
 */
async function runDemo(ctx: CliContext): Promise<void> {
  const { env } = ctx.io;
  const port = env.PORT ? parsePort(env.PORT) : 8080;
  const adminPort = env.ADMIN_PORT ? parsePort(env.ADMIN_PORT) : 8081;
  const dashboardPort = env.DASHBOARD_PORT ? parsePort(env.DASHBOARD_PORT) : 8082;
  const { runDemo: startDemo } = await import('../demo/run-demo.js');
  let demo;
  try {
    demo = await startDemo({
      port,
      adminPort,
      dashboardPort,
      print: (text) => ctx.io.stdout(text),
      logLevel: env.LOG_LEVEL ?? 'warn',
    });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    fail(
      e.code === 'EADDRINUSE'
        ? `port in use (${e.message}); set PORT / ADMIN_PORT / DASHBOARD_PORT to free ports`
        : e.message,
    );
  }
  ctx.io.stdout(demo.instructions);
  const stop = () => void demo.close().then(() => ctx.io.exit(EXIT_OK));
  ctx.io.signals.once('SIGINT', stop);
  ctx.io.signals.once('SIGTERM', stop);
}

async function runExampleBackend(ctx: CliContext, o: { port: string; host: string }): Promise<void> {
  const port = parsePort(o.port);
  const [{ createServer }, { createExampleBackend }] = await Promise.all([
    import('node:http'),
    import('../demo/backend.js'),
  ]);
  const server: Server = createServer(createExampleBackend());
  server.on('error', (err) => exitWith(ctx.io, err.message));
  server.listen(port, o.host, () => {
    ctx.io.stdout(`example backend listening on ${o.host}:${(server.address() as AddressInfo).port}\n`);
  });
  const stop = () => server.close(() => ctx.io.exit(EXIT_OK));
  ctx.io.signals.once('SIGTERM', stop);
  ctx.io.signals.once('SIGINT', stop);
}
