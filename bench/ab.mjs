// CPU per request of gateway builds side by side, for A/B of an optimisation on a busy machine:
//
//   node bench/ab.mjs ROUNDS SECONDS TARGET...
//
// TARGET: `bare` (Express 5 + http-proxy-middleware, keep-alive agent: the bench's floor),
// `hpm-plain` (the same http-proxy-middleware behind a plain node:http server, no Express), `gw`
// (this checkout's dist/) or `gw@/abs/path/to/dist` (another build, e.g. a copy of dist/ made
// before a change). Every gateway runs `serve --workers 1` with the Redis store, Redis limiter and
// access log on, all on one redis-server. SUTs and redis-server on core 0, wrk and the upstream
// on core 1. Rounds interleave the targets (reversed every other round); each run is a warm-up of
// SECONDS, then SECONDS measured: CPU µs/req = Δ(utime+stime) of the SUT (+ redis-server for
// gateways) ÷ requests. Prints the median per scenario and target and its ratio to `bare`.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { stringify } from 'yaml';
import {
  cpuMicros,
  freePort,
  installCleanup,
  runOnce,
  startProcess,
  stopAll,
  waitForPort,
} from './lib/procs.mjs';
import { REQUEST_BODY, REQUEST_PATH, ROOT, startExpressHpm, startUpstream } from './lib/targets.mjs';
import { ensureWrk, runWrk, writeWrkScript } from './lib/wrk.mjs';

installCleanup({ timeLimitMs: 9.5 * 60_000, label: 'ab' });
const [rounds, seconds, ...names] = process.argv.slice(2);
if (!(Number(rounds) > 0 && Number(seconds) > 0 && names.length)) {
  process.stderr.write('usage: node bench/ab.mjs ROUNDS SECONDS TARGET...\n');
  process.exit(2);
}
ensureWrk((m) => process.stderr.write(`${m}\n`));
const tmp = mkdtempSync(join(tmpdir(), 'notify-gateway-ab-'));
const up = await startUpstream({ cpus: 1 });
const redisPort = await freePort();
const redis = startProcess(
  'redis-server',
  'redis-server',
  ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
  { cwd: tmp, cpus: 0 },
);
await waitForPort(redisPort, redis);
const env = { REDIS_URL: `redis://127.0.0.1:${redisPort}` };
const config = (port) => ({
  server: { host: '127.0.0.1', port, shutdownTimeoutMs: 2000 },
  admin: { enabled: false },
  routes: [{ prefix: '/notify/v1', target: up.url }],
  rateLimit: { tiers: [{ name: 'bench', points: 1_000_000_000, duration: 60 }] },
});
const CLI = join(ROOT, 'dist/cli.js');
const setup = join(tmp, 'setup.yaml');
writeFileSync(setup, stringify(config(1)));
runOnce(process.execPath, [CLI, '--config', setup, 'companies', 'create', 'bench', '--tier', 'bench'], {
  env,
});
const { key } = JSON.parse(
  runOnce(process.execPath, [CLI, '--config', setup, 'keys', 'create', 'bench', '--json'], { env }),
);

async function start(name, i) {
  if (name === 'bare') return { ...(await startExpressHpm(up, { keepAlive: true, cpus: 0 })), name };
  const port = await freePort();
  if (name === 'hpm-plain') {
    const child = startProcess(name, process.execPath, [join(ROOT, 'bench/servers/hpm-plain.mjs')], {
      env: { PORT: String(port), TARGET: up.url },
      cpus: 0,
    });
    await waitForPort(port, child);
    return { name, child, port };
  }
  const dist = name.startsWith('gw@') ? name.slice(3) : name === 'gw' ? join(ROOT, 'dist') : null;
  if (!dist) throw new Error(`unknown target ${name}`);
  const file = join(tmp, `gw-${i}.yaml`);
  writeFileSync(file, stringify(config(port)));
  const child = startProcess(
    name,
    process.execPath,
    [join(dist, 'cli.js'), 'serve', '--config', file, '--workers', '1'],
    { env, cwd: tmp, cpus: 0 },
  );
  await waitForPort(port, child);
  return { name, child, port, redis };
}

const targets = [];
for (const [i, n] of names.entries()) targets.push(await start(n, i));
const headers = { 'x-api-key': key };
const scripts = {
  GET: writeWrkScript(tmp, 'get', { method: 'GET', headers }),
  POST: writeWrkScript(tmp, 'post', {
    method: 'POST',
    body: REQUEST_BODY,
    headers: { ...headers, 'Content-Type': 'application/json' },
  }),
};
const results = {};
for (let r = 0; r < Number(rounds); r++) {
  for (const scenario of ['GET', 'POST']) {
    for (const t of r % 2 ? [...targets].reverse() : targets) {
      const wrk = () =>
        runWrk({
          url: `http://127.0.0.1:${t.port}${REQUEST_PATH}`,
          script: scripts[scenario],
          connections: 32,
          seconds: Number(seconds),
          cpus: 1,
        });
      await wrk();
      const pids = [t.child.pid, ...(t.redis ? [t.redis.pid] : [])];
      const before = pids.map((p) => cpuMicros(p));
      const w = await wrk();
      if (w.non2xx || w.errors || w.timeouts) throw new Error(`${t.name} ${scenario}: failures in the run`);
      const us = pids.reduce((a, p, i) => a + (cpuMicros(p) - before[i]), 0) / w.requests;
      (results[`${scenario} ${t.name}`] ??= []).push(us);
      process.stderr.write(`${scenario} ${t.name} ${w.rps.toFixed(0)} req/s ${us.toFixed(0)} µs/req\n`);
    }
  }
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
for (const [k, v] of Object.entries(results)) {
  const bare = results[`${k.split(' ')[0]} bare`];
  const ratio = bare ? `  ${(median(v) / median(bare)).toFixed(2)}× bare` : '';
  console.log(`${k}: ${median(v).toFixed(0)} µs/req [${v.map((x) => x.toFixed(0)).join(', ')}]${ratio}`);
}
await stopAll();
process.exit(0);
