// Cold start, as a new user meets it: wall time from spawning the process to
//   - `notify-gateway --help` exiting,
//   - `serve` (file store) answering `/readyz` 200,
//   - `serve` (Redis store and limiter, on a redis-server started beforehand) answering `/readyz` 200,
//   - one management command, `keys list <company>` (file store), exiting.
// The same command each time, BENCH_COLD_RUNS (5) runs each, interleaved; medians reported.
//
//   npm run build && node bench/cold-start.mjs [--json-out FILE]
//
// Goals: serve (file) ≤ 500 ms, serve (Redis) ≤ 1 s, CLI command ≤ 300 ms. Nothing is pinned
// (a start uses whatever cores there are, as a pod's does), so the load average is printed with
// the figures.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import {
  childEnv,
  freePort,
  installCleanup,
  startProcess,
  stopAll,
  stopProcess,
  waitForPort,
} from './lib/procs.mjs';
import { ROOT, checkBuild } from './lib/targets.mjs';

const RUNS = Number(process.env.BENCH_COLD_RUNS ?? 5);
const CLI = join(ROOT, 'dist/cli.js');
const GOALS = { help: 300, serveFile: 500, serveRedis: 1000, keysList: 300 };
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** ms from spawn to exit (exit code 0 required). */
function timeToExit(args, env = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, [CLI, ...args], {
      env: childEnv(env),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(performance.now() - t0);
      else reject(new Error(`notify-gateway ${args.join(' ')} exited ${code}: ${err.slice(-500)}`));
    });
  });
}

function readyz(port) {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', agent: false, timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.once('error', () => resolve(0));
    req.once('timeout', () => req.destroy());
    req.end();
  });
}

/** ms from spawn to the first `/readyz` 200 of `serve` (polled every 5 ms); then stops it. */
async function timeToReady(config, port, env = {}) {
  const t0 = performance.now();
  const child = startProcess(
    'serve',
    process.execPath,
    [CLI, 'serve', '--config', config, '--workers', '1'],
    {
      env,
    },
  );
  try {
    for (;;) {
      if (child.exitInfo) throw new Error(`serve exited: ${child.stderrTail()}`);
      if ((await readyz(port)) === 200) return performance.now() - t0;
      if (performance.now() - t0 > 30_000) throw new Error('serve not ready within 30 s');
      await sleep(5);
    }
  } finally {
    await stopProcess(child, 'SIGTERM', 5000);
  }
}

/** Runs every case RUNS times, interleaved, and returns the medians (ms). */
export async function runColdStart({ log = () => {} } = {}) {
  const tmp = mkdtempSync(join(tmpdir(), 'notify-gateway-cold-'));
  try {
    const keyFile = join(tmp, 'keys.yaml');
    writeFileSync(keyFile, stringify({ companies: [{ id: 'acme', tier: 'free', keys: [] }] }));
    const filePort = await freePort();
    const base = (port) => ({
      server: { host: '127.0.0.1', port },
      admin: { enabled: false },
      routes: [{ prefix: '/notify/v1', target: 'http://127.0.0.1:9' }],
    });
    const fileConfig = join(tmp, 'file.yaml');
    writeFileSync(
      fileConfig,
      stringify({ ...base(filePort), store: { type: 'file', file: { path: keyFile } } }),
    );
    const redisPort = await freePort();
    const redis = startProcess('redis-server', 'redis-server', [
      '--port',
      String(redisPort),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
    ]);
    await waitForPort(redisPort, redis);
    const gwRedisPort = await freePort();
    const redisConfig = join(tmp, 'redis.yaml');
    writeFileSync(redisConfig, stringify({ ...base(gwRedisPort), store: { type: 'redis' } }));
    const redisEnv = { REDIS_URL: `redis://127.0.0.1:${redisPort}` };
    const cases = {
      help: () => timeToExit(['--help']),
      serveFile: () => timeToReady(fileConfig, filePort),
      serveRedis: () => timeToReady(redisConfig, gwRedisPort, redisEnv),
      keysList: () => timeToExit(['--config', fileConfig, 'keys', 'list', 'acme']),
    };
    const runs = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
    for (let i = 0; i < RUNS; i++) {
      for (const [name, fn] of Object.entries(cases)) runs[name].push(await fn());
      log(
        `cold start run ${i + 1}/${RUNS}: ${Object.entries(runs)
          .map(([k, v]) => `${k} ${v.at(-1).toFixed(0)} ms`)
          .join(', ')}`,
      );
    }
    await stopProcess(redis);
    const medians = Object.fromEntries(Object.entries(runs).map(([k, v]) => [k, median(v)]));
    return { runs: RUNS, medians, all: runs, goals: GOALS, loadavg: loadavg() };
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

const LABELS = {
  help: '`notify-gateway --help`',
  serveFile: '`serve`, file store, to /readyz 200',
  serveRedis: '`serve`, Redis, to /readyz 200',
  keysList: '`keys list acme`, file store',
};

export function coldStartReport(c) {
  let out =
    `\ncold start (median of ${c.runs} runs each, interleaved; load average ` +
    `${c.loadavg.map((x) => x.toFixed(2)).join(' ')} after):\n`;
  for (const [k, ms] of Object.entries(c.medians)) {
    out += `  ${LABELS[k].padEnd(40)} ${ms.toFixed(0).padStart(5)} ms (goal ≤ ${c.goals[k]}: ${ms <= c.goals[k] ? 'MET' : 'not met'})\n`;
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  checkBuild();
  installCleanup({ timeLimitMs: 5 * 60_000, label: 'cold-start' });
  const jsonOut = process.argv.includes('--json-out')
    ? process.argv[process.argv.indexOf('--json-out') + 1]
    : null;
  try {
    const c = await runColdStart({ log: (m) => process.stderr.write(`${m}\n`) });
    process.stdout.write(coldStartReport(c));
    if (jsonOut) writeFileSync(jsonOut, JSON.stringify(c, null, 2) + '\n');
  } finally {
    await stopAll();
  }
}
