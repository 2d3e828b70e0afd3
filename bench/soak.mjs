// Soak: about 60 s of steady load on the gateway (Redis store), with Redis restarted midway.
// Prints errors by kind, p99 before/during/after the restart, and the gateway's RSS before/after.
//
//   npm run build && node bench/soak.mjs            (SOAK_SECONDS=60 by default)
//
// Everything runs on 127.0.0.1, every child is killed at the end, and the load is bounded in time.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createServer as netServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';

const ROOT = new URL('..', import.meta.url).pathname;
const CLI = join(ROOT, 'dist/cli.js');
const TOTAL = Number(process.env.SOAK_SECONDS ?? 60);
const children = [];
const cleanup = () => children.forEach((c) => c.exitCode === null && c.kill('SIGKILL'));
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));

const freePort = () =>
  new Promise((resolve) => {
    const s = netServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const rssOf = (pid) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

async function waitFor(fn, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn().catch(() => false)) return;
    await sleep(50);
  }
  throw new Error(`timed out waiting for ${what}`);
}

// Redis with an append-only file, so a restart keeps the keys (as a production Redis would).
const dir = mkdtempSync(join(tmpdir(), 'ng-soak-'));
const redisPort = await freePort();
let redis;
const startRedis = async () => {
  redis = spawn(
    'redis-server',
    [
      '--port',
      String(redisPort),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
    ],
    { stdio: 'ignore' },
  );
  children.push(redis);
  await waitFor(
    async () =>
      execFileSync('redis-cli', ['-p', String(redisPort), 'ping'], { stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .includes('PONG'),
    5000,
    'redis',
  );
};
await startRedis();

const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.end('{"ok":true}'));
});
await new Promise((r) => upstream.listen(0, '127.0.0.1', r));

const port = await freePort();
const env = {
  ...process.env,
  REDIS_URL: `redis://127.0.0.1:${redisPort}`,
  PORT: String(port),
  UPSTREAM_URL: `http://127.0.0.1:${upstream.address().port}`,
  LOG_LEVEL: 'warn',
};
writeFileSync(
  join(dir, 'gateway.yaml'),
  'admin: { enabled: false }\nrateLimit:\n  tiers: [{ name: soak, points: 100000000, duration: 60 }]\n',
);
const cfg = ['--config', join(dir, 'gateway.yaml')];
execFileSync(process.execPath, [CLI, ...cfg, 'companies', 'create', 'soak', '--tier', 'soak'], { env });
const key = JSON.parse(
  execFileSync(process.execPath, [CLI, ...cfg, 'keys', 'create', 'soak', '--json'], { env }).toString(),
).key;
const gateway = spawn(process.execPath, [CLI, ...cfg, 'serve', '--workers', '1'], {
  env,
  stdio: ['ignore', 'ignore', 'inherit'],
});
children.push(gateway);
await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok, 10_000, 'gateway');

const phases = { before: [], during: [], after: [] };
const statuses = {};
const errors = {};
let phase = 'before';
const rssBefore = (await sleep(500), rssOf(gateway.pid));

const run = autocannon({
  url: `http://127.0.0.1:${port}/notify/v1/soak`,
  connections: 20,
  duration: TOTAL,
  headers: { 'x-api-key': key },
  timeout: 5,
});
run.on('response', (_client, status, _bytes, ms) => {
  statuses[status] = (statuses[status] ?? 0) + 1;
  phases[phase].push(ms);
});
run.on('reqError', (err) => {
  errors[err.code ?? err.message] = (errors[err.code ?? err.message] ?? 0) + 1;
});

const third = (TOTAL * 1000) / 3;
await sleep(third);
phase = 'during';
redis.kill('SIGKILL');
const downAt = Date.now();
await sleep(Math.min(3000, third / 2)); // Redis is away for a few seconds under load
await startRedis();
const backAt = Date.now();
await sleep(third - (Date.now() - downAt));
phase = 'after';
await new Promise((r) => run.on('done', r));
await sleep(500);
const rssAfter = rssOf(gateway.pid);

const pct = (xs, p) => {
  if (!xs.length) return 'n/a';
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))].toFixed(1);
};
console.log(
  `\nsoak: ${TOTAL} s, 20 connections, Redis down ${((backAt - downAt) / 1000).toFixed(1)} s in the middle third`,
);
console.log('phase    requests   p50 ms   p99 ms   max ms');
for (const [name, xs] of Object.entries(phases)) {
  console.log(
    `${name.padEnd(8)} ${String(xs.length).padStart(8)} ${pct(xs, 50).padStart(8)} ${pct(xs, 99).padStart(8)} ${pct(xs, 100).padStart(8)}`,
  );
}
console.log('statuses:', JSON.stringify(statuses));
console.log('client errors:', JSON.stringify(errors));
console.log(`gateway RSS: ${rssBefore.toFixed(1)} MiB before, ${rssAfter.toFixed(1)} MiB after`);
const bad = Object.keys(statuses).filter((s) => !['200', '503'].includes(s));
upstream.close();
cleanup();
if (bad.length || Object.keys(errors).length) {
  console.log(
    `UNEXPECTED: statuses ${bad.join(',') || '-'} / errors ${Object.keys(errors).join(',') || '-'}`,
  );
  process.exit(1);
}
process.exit(0);
