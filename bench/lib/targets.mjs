// Starting the upstream and the six targets, each in its own process on its own 127.0.0.1 port.
// `nodeArgs` lets bench/profile.mjs add --cpu-prof.
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { freePort, runOnce, startProcess, waitForPort } from './procs.mjs';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SERVERS = fileURLToPath(new URL('../servers/', import.meta.url));
const CLI = join(ROOT, 'dist/cli.js');

/** The path every request uses: one of the gateway's default routes, as a client would call it. */
export const REQUEST_PATH = '/notify/v1/otps';
export const REQUEST_BODY = JSON.stringify({ to: '+15550100', template: 'otp', code: '424242' });

/** Refuses to run without dist/; warns when src/ changed after the last build (stale numbers). */
export function checkBuild() {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run `npm run build` first');
  const built = statSync(CLI).mtimeMs;
  const newest = newestMtime(join(ROOT, 'src'));
  if (newest > built) {
    process.stderr.write(
      'bench: WARNING src/ changed after the last build; the gateway numbers are for the old dist/ ' +
        '(run `npm run build`)\n',
    );
    return false;
  }
  return true;
}

function newestMtime(dir) {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

export async function startUpstream({ cpus } = {}) {
  const port = await freePort();
  const child = startProcess('upstream', process.execPath, [join(SERVERS, 'upstream.mjs')], {
    env: { PORT: String(port) },
    cpus,
  });
  await waitForPort(port, child);
  return { name: 'upstream', child, port, url: `http://127.0.0.1:${port}` };
}

export async function startExpressHpm(upstream, { keepAlive, nodeArgs = [], cpus, name }) {
  const port = await freePort();
  name ??= keepAlive ? 'express-hpm-keepalive' : 'express-hpm-default';
  const child = startProcess(name, process.execPath, [...nodeArgs, join(SERVERS, 'express-hpm.mjs')], {
    env: { PORT: String(port), TARGET: upstream.url, KEEPALIVE: keepAlive ? '1' : '0' },
    cpus,
  });
  await waitForPort(port, child);
  return { name, child, port, gateway: false };
}

/** hpm-plain: http-proxy-middleware with a keep-alive agent on plain node:http, no Express. */
export async function startHpmPlain(upstream, { nodeArgs = [], cpus, env = {} } = {}) {
  const port = await freePort();
  const child = startProcess('hpm-plain', process.execPath, [...nodeArgs, join(SERVERS, 'hpm-plain.mjs')], {
    env: { PORT: String(port), TARGET: upstream.url, ...env },
    cpus,
  });
  await waitForPort(port, child);
  return { name: 'hpm-plain', child, port, gateway: false };
}

export async function startRawProxy(upstream, { nodeArgs = [], cpus } = {}) {
  const port = await freePort();
  const child = startProcess(
    'node-http-raw',
    process.execPath,
    [...nodeArgs, join(SERVERS, 'raw-proxy.mjs')],
    {
      env: { PORT: String(port), TARGET: upstream.url },
      cpus,
    },
  );
  await waitForPort(port, child);
  return { name: 'node-http-raw', child, port, gateway: false };
}

/**
 * A gateway config: one route to the upstream, one tier whose limit no run can reach (a 429 would
 * mean the bench measures refusals), admin API off, logging left at its defaults (info + access log).
 */
function gatewayConfig({ port, upstream, keyFile, routes, extra = {} }) {
  return {
    ...extra,
    server: { ...extra.server, host: '127.0.0.1', port, shutdownTimeoutMs: 2000 },
    admin: { enabled: false },
    routes: routes ?? [{ prefix: '/notify/v1', target: upstream.url }],
    store: { type: 'file', file: { path: keyFile ?? 'keys.yaml' } },
    rateLimit: { tiers: [benchTier()] },
  };
}

/**
 * The bench tier: one 60 s window, or with `BENCH_WINDOWS=3` the shape of the documented
 * three-window tier (1 s, 60 s, 1 day; README "Running one gateway for several services"), each
 * window too large to be reached, so every request is counted in three windows and never refused.
 */
function benchTier() {
  if (process.env.BENCH_WINDOWS !== '3') return { name: 'bench', points: 1_000_000_000, duration: 60 };
  const points = 1_000_000_000;
  return { name: 'bench', windows: [1, 60, 86_400].map((duration) => ({ points, duration })) };
}

async function keyTools() {
  // Through the package entry point, as a user of the library would.
  const { generateApiKey, hashApiKey } = await import(join(ROOT, 'dist/index.js'));
  return { generateApiKey, hashApiKey };
}

/**
 * gateway-file: the file store with one company and one key; `routes` replaces the one default
 * route, `config` adds top-level config sections (e.g. `overload`).
 */
export async function startGatewayFile(
  upstream,
  tmpDir,
  { nodeArgs = [], name = 'gateway-file', cpus, routes, config: extra, key: givenKey } = {},
) {
  const { generateApiKey, hashApiKey } = await keyTools();
  // One key for every gateway target of a run (the bench sends the same headers to all of them).
  const key = givenKey ?? (sharedKey ??= generateApiKey('live'));
  // A folder per gateway: each watches its own key file.
  const dir = join(tmpDir, name);
  mkdirSync(dir, { recursive: true });
  const keyFile = join(dir, 'keys.yaml');
  writeFileSync(
    keyFile,
    stringify({
      companies: [
        {
          id: 'bench',
          tier: 'bench',
          keys: [{ id: 'bench-key', hash: hashApiKey(key), prefix: key.slice(0, 14), label: 'bench' }],
        },
      ],
    }),
  );
  const port = await freePort();
  const config = join(dir, 'gateway-file.yaml');
  writeFileSync(config, stringify(gatewayConfig({ port, upstream, keyFile, routes, extra })));
  const child = startProcess(
    name,
    process.execPath,
    [...nodeArgs, CLI, 'serve', '--config', config, '--workers', '1'],
    { cwd: dir, cpus },
  );
  await waitForPort(port, child);
  return { name, child, port, key, gateway: true };
}

let sharedKey;

/**
 * gateway-file-2targets: gateway-file with the route over two upstreams (round-robin, the default
 * pool settings), to compare with gateway-file's one target: what a pool costs per request.
 */
export async function startGatewayFileTwoTargets(
  upstream,
  second,
  tmpDir,
  { nodeArgs = [], cpus, key } = {},
) {
  const targets = [{ url: upstream.url }, { url: second.url }];
  const routes = [{ prefix: '/notify/v1', targets }];
  return startGatewayFile(upstream, tmpDir, { nodeArgs, cpus, routes, key, name: 'gateway-file-2targets' });
}

/**
 * gateway-redis: our own redis-server (no persistence), company and key created with the CLI, the
 * gateway at one worker (`serve` would otherwise fork one per CPU with the Redis store).
 */
export async function startGatewayRedis(
  upstream,
  tmpDir,
  { nodeArgs = [], cpus, name = 'gateway-redis' } = {},
) {
  const redisPort = await freePort();
  const redis = startProcess(
    'redis-server',
    'redis-server',
    ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    // On the gateway's core: its CPU is part of what the gateway costs per request.
    { cwd: tmpDir, cpus },
  );
  await waitForPort(redisPort, redis);
  const redisUrl = `redis://127.0.0.1:${redisPort}`;
  const port = await freePort();
  const config = join(tmpDir, 'gateway-redis.yaml');
  writeFileSync(config, stringify(gatewayConfig({ port, upstream })));
  const env = { REDIS_URL: redisUrl };
  runOnce(process.execPath, [CLI, '--config', config, 'companies', 'create', 'bench', '--tier', 'bench'], {
    env,
  });
  const created = JSON.parse(
    runOnce(process.execPath, [CLI, '--config', config, 'keys', 'create', 'bench', '--json'], { env }),
  );
  if (typeof created.key !== 'string') throw new Error('`keys create --json` printed no key');
  const child = startProcess(
    name,
    process.execPath,
    [...nodeArgs, CLI, 'serve', '--config', config, '--workers', '1'],
    { env, cwd: tmpDir, cpus },
  );
  await waitForPort(port, child);
  return { name, child, port, key: created.key, gateway: true, redis };
}

/** One request through a target, checked: 2xx, the upstream's body, and for gateways the limiter headers. */
export async function preflight(target, headers) {
  const res = await new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: target.port,
        method: 'POST',
        path: REQUEST_PATH,
        headers,
        agent: false,
        timeout: 5000,
      },
      (r) => {
        let body = '';
        r.setEncoding('utf8');
        r.on('data', (d) => (body += d));
        r.on('end', () => resolve({ status: r.statusCode, headers: r.headers, body }));
      },
    );
    req.once('timeout', () => req.destroy(new Error('timeout')));
    req.once('error', reject);
    req.end(REQUEST_BODY);
  });
  const problems = [];
  if (res.status < 200 || res.status > 299) problems.push(`status ${res.status}: ${res.body.slice(0, 200)}`);
  else if (!res.body.includes('"status":"queued"'))
    problems.push(`unexpected body ${res.body.slice(0, 200)}`);
  if (target.gateway && res.headers['ratelimit-limit'] === undefined)
    problems.push('no RateLimit-Limit header: the request did not go through the gateway pipeline');
  if (problems.length) throw new Error(`${target.name} preflight failed: ${problems.join('; ')}`);
}
