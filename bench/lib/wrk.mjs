// The load generator of `npm run bench`: wrk (C, event loop per thread), pinned to its own core.
// A Node load generator (autocannon) costs more CPU per request than the proxies it measures and
// would be the bottleneck on a 2-core machine; wrk is not.
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import process from 'node:process';
import { runTracked } from './procs.mjs';

function hasWrk() {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (err) {
    // `wrk --version` exits 1 after printing its version: only a missing binary is ENOENT.
    return err.code !== 'ENOENT';
  }
}

/**
 * Makes sure `wrk` is on the PATH: installs the OS package (apt-get, as root or through sudo) when it
 * is missing. Throws with the command to run by hand when that is not possible.
 */
export function ensureWrk(log) {
  if (hasWrk()) return;
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const run = (args) =>
    execFileSync(asRoot ? args[0] : 'sudo', asRoot ? args.slice(1) : ['-n', ...args], {
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 180_000,
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
  log('wrk is missing: installing it (apt-get install -y wrk)');
  try {
    run(['apt-get', 'update', '-qq']);
    run(['apt-get', 'install', '-y', '-qq', 'wrk']);
  } catch (err) {
    throw new Error(`could not install wrk (${err.message}); run: sudo apt-get install -y wrk`);
  }
  if (!hasWrk()) throw new Error('wrk still missing after apt-get install; install it by hand');
}

const luaString = (s) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/**
 * Writes the wrk Lua script for one request shape into `dir` and returns its path. The script's
 * `done` prints one `WRKJSON {...}` line: requests, duration, errors by kind and latency percentiles
 * (µs) from wrk's own histogram.
 */
export function writeWrkScript(dir, name, { method, body, headers }) {
  const lines = [`wrk.method = ${luaString(method)}`];
  if (body) lines.push(`wrk.body = ${luaString(body)}`);
  for (const [k, v] of Object.entries(headers)) lines.push(`wrk.headers[${luaString(k)}] = ${luaString(v)}`);
  lines.push(
    'done = function(s, latency, requests)',
    '  local e = s.errors',
    '  io.write(string.format(\'WRKJSON {"requests":%d,"durationUs":%d,"connect":%d,"read":%d,' +
      '"write":%d,"status":%d,"timeout":%d,"p50Us":%d,"p90Us":%d,"p99Us":%d,"maxUs":%d}\\n\',',
    '    s.requests, s.duration, e.connect, e.read, e.write, e.status, e.timeout,',
    '    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))',
    'end',
  );
  const file = join(dir, `wrk-${name}.lua`);
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

/**
 * One wrk run: `connections` connections over one thread, `seconds` long, on CPU list `cpus`.
 * Resolves with requests, req/s, p50/p99 (ms), and `non2xx` (wrk counts statuses > 399) and socket
 * errors; bounded by the duration + 15 s.
 */
export async function runWrk({ url, script, connections, seconds, cpus }) {
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, url];
  const r = await runTracked('wrk', 'wrk', args, { cpus, timeoutMs: (seconds + 15) * 1000 });
  const line = r.stdout.split('\n').find((l) => l.startsWith('WRKJSON '));
  if (r.code !== 0 || !line) {
    throw new Error(`wrk failed (code ${r.code}, signal ${r.signal}): ${r.stderr || r.stdout.slice(-500)}`);
  }
  const w = JSON.parse(line.slice('WRKJSON '.length));
  return {
    requests: w.requests,
    durationS: w.durationUs / 1e6,
    rps: w.requests / (w.durationUs / 1e6),
    p50Ms: w.p50Us / 1000,
    p90Ms: w.p90Us / 1000,
    p99Ms: w.p99Us / 1000,
    maxMs: w.maxUs / 1000,
    non2xx: w.status,
    errors: w.connect + w.read + w.write,
    timeouts: w.timeout,
  };
}
