// `npm run bench`: throughput, latency and CPU per request of the gateway against plain proxies,
// then the key-cache memory figure (bench/memory.mjs). See bench/README.md for what and why.
//
// Environment: BENCH_ROUNDS (3), BENCH_SECONDS (5, measured run), BENCH_WARMUP (2, discarded),
// BENCH_CONNECTIONS (50), BENCH_PIPELINING (1), BENCH_TARGETS (comma list, default all),
// BENCH_MEMORY (1; 0 skips the memory figure), BENCH_QUIET_WAIT (150: seconds, in total, the bench may
// wait for other processes on the machine to go quiet before measured runs; 0 never waits).
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { Loader } from './lib/loader.mjs';
import {
  cpuMicros,
  installCleanup,
  machineBusyMicros,
  setUnexpectedExitHandler,
  stopAll,
  trackedPids,
  waitForQuiet,
} from './lib/procs.mjs';
import {
  REQUEST_BODY,
  REQUEST_PATH,
  ROOT,
  checkBuild,
  preflight,
  startExpressHpm,
  startGatewayFile,
  startGatewayRedis,
  startRawProxy,
  startUpstream,
} from './lib/targets.mjs';

const env = process.env;
const intEnv = (name, def, min = 1) => {
  const v = env[name] === undefined || env[name] === '' ? def : Number(env[name]);
  if (!Number.isInteger(v) || v < min) throw new Error(`${name} must be a whole number >= ${min}`);
  return v;
};
const ROUNDS = intEnv('BENCH_ROUNDS', 3);
const SECONDS = intEnv('BENCH_SECONDS', 5);
const WARMUP = intEnv('BENCH_WARMUP', 2, 0);
const CONNECTIONS = intEnv('BENCH_CONNECTIONS', 50);
const PIPELINING = intEnv('BENCH_PIPELINING', 1);
const WITH_MEMORY = env.BENCH_MEMORY !== '0';
const QUIET_WAIT_S = intEnv('BENCH_QUIET_WAIT', 150, 0);
// A quarter of a core taken by other processes during a measured run is flagged as disturbed (the
// loopback traffic's own kernel time stays well below that).
const DISTURBED_CORES = 0.25;
// Disturbed runs measured again, per bench (each costs a warm-up and a run).
const MAX_RETRIES = 8;
const MAX_RETRIES_PER_RUN = 2;

const ALL_TARGETS = [
  'express-hpm-default',
  'express-hpm-keepalive',
  'node-http-raw',
  'gateway-file',
  'gateway-redis',
];
const SELECTED = env.BENCH_TARGETS ? env.BENCH_TARGETS.split(',').map((s) => s.trim()) : ALL_TARGETS;
for (const t of SELECTED)
  if (!ALL_TARGETS.includes(t)) throw new Error(`unknown target in BENCH_TARGETS: ${t}`);

// The whole run must stay under 10 minutes: refuse settings that cannot, and enforce it with a
// watchdog that stops everything.
const TIME_LIMIT_MS = 9.5 * 60_000;
const estimateS =
  (ROUNDS * SELECTED.length + MAX_RETRIES) * (WARMUP + SECONDS + 1.5) +
  QUIET_WAIT_S +
  25 +
  (WITH_MEMORY ? 30 : 0);
if (estimateS * 1000 > TIME_LIMIT_MS) {
  throw new Error(`about ${estimateS} s of runs requested; the limit is ${TIME_LIMIT_MS / 1000} s`);
}

const started = Date.now();
const log = (msg) =>
  process.stderr.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}\n`);
let failing = false;
async function fail(err) {
  if (failing) return;
  failing = true;
  process.stderr.write(`\nbench FAILED: ${err?.message ?? err}\n`);
  await stopAll();
  process.exit(1);
}

installCleanup({ timeLimitMs: TIME_LIMIT_MS });
setUnexpectedExitHandler((child, code, signal) => {
  void fail(new Error(`${child.benchName} exited (code ${code}, signal ${signal}): ${child.stderrTail()}`));
});

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

async function main() {
  const fresh = checkBuild();
  // Other jobs on the machine share the two cores with the bench: measure them before starting.
  const busy0 = machineBusyMicros();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const backgroundCores = (machineBusyMicros() - busy0) / 1e6;
  log(`background load before starting: ${backgroundCores.toFixed(2)} cores busy`);
  const tmpDir = mkdtempSync(join(tmpdir(), 'notify-gateway-bench-'));
  process.once('exit', () => rmSync(tmpDir, { recursive: true, force: true }));

  log(`starting upstream and ${SELECTED.length} targets`);
  const upstream = await startUpstream();
  const starters = {
    'express-hpm-default': () => startExpressHpm(upstream, { keepAlive: false }),
    'express-hpm-keepalive': () => startExpressHpm(upstream, { keepAlive: true }),
    'node-http-raw': () => startRawProxy(upstream),
    'gateway-file': () => startGatewayFile(upstream, tmpDir),
    'gateway-redis': () => startGatewayRedis(upstream, tmpDir),
  };
  const targets = [];
  for (const name of SELECTED) targets.push(await starters[name]());
  const loader = await Loader.start();

  const headersFor = (t) => ({
    'content-type': 'application/json',
    // Sent to every target (the plain proxies pass it on, harmlessly), so requests are the same size.
    'x-api-key': t.key ?? targets.find((x) => x.key)?.key ?? 'nk_live_none',
  });
  for (const t of targets) await preflight(t, headersFor(t));
  log('all targets answered 2xx through to the upstream');

  const runOpts = (t, duration) => ({
    url: `http://127.0.0.1:${t.port}${REQUEST_PATH}`,
    method: 'POST',
    headers: headersFor(t),
    body: REQUEST_BODY,
    connections: CONNECTIONS,
    pipelining: PIPELINING,
    duration,
  });
  const checkClean = (t, r, phase) => {
    if (r.non2xx || r.errors || r.timeouts || r.requests === 0) {
      throw new Error(
        `${t.name} ${phase}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts of ${r.requests} ` +
          `(status codes ${JSON.stringify(r.statusCodeStats)}). ` +
          (t.gateway
            ? 'A gateway refusing requests means the bench setup is wrong (key, tier, route).'
            : 'The target or the upstream is failing.'),
      );
    }
  };

  // The load generator's own JIT warm-up, against the upstream directly, so the first target measured
  // does not pay for it.
  await loader.run(runOpts(upstream, 2));

  // One measured run: target CPU from /proc around it, plus the CPU that processes not ours took.
  const measure = async (t) => {
    const pids = { target: t.child.pid, upstream: upstream.child.pid, loader: loader.pid };
    if (t.redis) pids.redis = t.redis.pid;
    const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMicros(pid)]));
    const ours = trackedPids();
    const oursBefore = ours.reduce((a, pid) => a + cpuMicros(pid), 0);
    const busyBefore = machineBusyMicros();
    const t0 = process.hrtime.bigint();
    const r = await loader.run(runOpts(t, SECONDS));
    const wallUs = Number(process.hrtime.bigint() - t0) / 1e3;
    // The cores are shared: CPU that other jobs used during the run is what disturbs the figures.
    const foreign =
      machineBusyMicros() - busyBefore - (ours.reduce((a, pid) => a + cpuMicros(pid), 0) - oursBefore);
    const cpuUsPerReq = Object.fromEntries(
      Object.entries(pids).map(([k, pid]) => [k, (cpuMicros(pid) - before[k]) / Math.max(1, r.requests)]),
    );
    return { ...r, cpuUsPerReq, otherCores: Math.max(0, foreign / wallUs) };
  };

  const runs = [];
  const discarded = [];
  let quietBudgetMs = QUIET_WAIT_S * 1000;
  let retriesLeft = MAX_RETRIES;
  for (let round = 0; round < ROUNDS; round++) {
    // Interleaved, and rotated each round, so no target always runs first or after the same one.
    const order = targets.map((_, i) => targets[(i + round) % targets.length]);
    for (const t of order) {
      for (let attempt = 1; ; attempt++) {
        const q = QUIET_WAIT_S
          ? await waitForQuiet({ maxWaitMs: Math.max(500, quietBudgetMs) })
          : { waitedMs: 0, quiet: true };
        quietBudgetMs -= q.waitedMs;
        if (q.waitedMs > 1000 || !q.quiet) {
          log(
            `waited ${(q.waitedMs / 1000).toFixed(1)} s for other processes to go quiet` +
              (q.quiet ? '' : ` (still ${q.cores.toFixed(2)} cores busy; running anyway)`),
          );
        }
        if (WARMUP > 0) checkClean(t, await loader.run(runOpts(t, WARMUP)), 'warm-up');
        const r = await measure(t);
        checkClean(t, r, `round ${round + 1}`);
        const disturbed = r.otherCores > DISTURBED_CORES;
        log(
          `round ${round + 1}/${ROUNDS} ${t.name.padEnd(22)} ${fmt(r.rps, 0).padStart(7)} req/s  ` +
            `p50 ${fmt(r.p50Ms, 2)} ms  p99 ${fmt(r.p99Ms, 2)} ms  ${fmt(r.cpuUsPerReq.target, 0)} µs/req` +
            (disturbed ? `  (other processes used ${fmt(r.otherCores, 2)} cores)` : ''),
        );
        const entry = { round: round + 1, target: t.name, ...r };
        // A disturbed run is measured again, a few times per bench at most (the time limit holds).
        if (disturbed && retriesLeft > 0 && attempt <= MAX_RETRIES_PER_RUN) {
          retriesLeft--;
          discarded.push(entry);
          log('  disturbed: measuring it again');
          continue;
        }
        runs.push(entry);
        break;
      }
    }
  }
  await loader.stop();

  const summary = targets.map((t) => {
    const rs = runs.filter((r) => r.target === t.name);
    const extra = {};
    for (const k of Object.keys(rs[0].cpuUsPerReq)) extra[k] = median(rs.map((r) => r.cpuUsPerReq[k]));
    return {
      target: t.name,
      rps: median(rs.map((r) => r.rps)),
      rpsMin: Math.min(...rs.map((r) => r.rps)),
      rpsMax: Math.max(...rs.map((r) => r.rps)),
      p50Ms: median(rs.map((r) => r.p50Ms)),
      p99Ms: median(rs.map((r) => r.p99Ms)),
      non2xx: rs.reduce((a, r) => a + r.non2xx, 0),
      cpuUsPerReq: extra,
      maxOtherCores: Math.max(...rs.map((r) => r.otherCores)),
      rounds: rs.length,
    };
  });
  log('stopping targets');
  await stopAll();

  let memory = null;
  if (WITH_MEMORY) {
    log('memory: 100k cached keys (bench/memory.mjs)');
    memory = await runMemory(tmpDir);
  }

  const meta = {
    date: new Date().toISOString(),
    git: gitDescribe(),
    distFresh: fresh,
    backgroundCores,
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    memGiB: Math.round(totalmem() / 2 ** 30),
    rounds: ROUNDS,
    seconds: SECONDS,
    warmup: WARMUP,
    connections: CONNECTIONS,
    pipelining: PIPELINING,
    request: `POST ${REQUEST_PATH}, ${REQUEST_BODY.length} B JSON body, X-API-Key header`,
    remeasured: discarded.length,
    totalSeconds: Math.round((Date.now() - started) / 1000),
  };
  const text = report(meta, summary, memory);
  process.stdout.write(text);
  const resultsDir = join(ROOT, 'bench/results');
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `bench-${meta.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify({ meta, summary, runs, discarded, memory, table: text }, null, 2) + '\n',
  );
  process.stdout.write(`\nraw results: ${file.slice(ROOT.length)}\n`);
}

function runMemory(tmpDir) {
  const out = join(tmpDir, 'memory.json');
  const script = fileURLToPath(new URL('./memory.mjs', import.meta.url));
  return new Promise((resolve, reject) => {
    // Its own process: a clean heap, and --expose-gc for exact before/after figures.
    const child = spawn(process.execPath, ['--expose-gc', script, '--json-out', out], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`bench/memory.mjs exited with ${code}`));
      resolve(JSON.parse(readFileSync(out, 'utf8')));
    });
  });
}

function gitDescribe() {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
    }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    return head + (dirty.trim() ? ' (src/ modified)' : '');
  } catch {
    return 'unknown';
  }
}

function fmt(v, digits) {
  return v === null || v === undefined || Number.isNaN(v) ? '-' : v.toFixed(digits);
}

function table(header, rows) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells) =>
    '| ' + cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ') + ' |';
  const sep =
    '|' + widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|';
  return [line(header), sep, ...rows.map(line)].join('\n') + '\n';
}

function report(meta, summary, memory) {
  const by = Object.fromEntries(summary.map((s) => [s.target, s]));
  const ratio = (s, base) => (by[base] ? `${(s.rps / by[base].rps).toFixed(2)}×` : '-');
  let out = `\nnotify-gateway bench — ${meta.date} — ${meta.git}\n`;
  out +=
    `${meta.cores} cores (${meta.cpu}), Node ${meta.node}; load generator (autocannon) shares the cores.\n` +
    `${meta.request}; ${meta.connections} connections, pipelining ${meta.pipelining}; ` +
    `median of ${meta.rounds} rounds × ${meta.seconds} s (after ${meta.warmup} s warm-up each).\n\n`;
  out += table(
    [
      'target',
      'req/s',
      'req/s min–max',
      'p50 ms',
      'p99 ms',
      'non-2xx',
      'CPU µs/req',
      'upstream µs/req',
      '÷ hpm-default',
      '÷ hpm-keepalive',
      '÷ node-raw',
    ],
    summary.map((s) => [
      s.target,
      fmt(s.rps, 0),
      `${fmt(s.rpsMin, 0)}–${fmt(s.rpsMax, 0)}`,
      fmt(s.p50Ms, 2),
      fmt(s.p99Ms, 2),
      String(s.non2xx),
      fmt(s.cpuUsPerReq.target, 0) +
        (s.cpuUsPerReq.redis !== undefined ? ` (+${fmt(s.cpuUsPerReq.redis, 0)} redis)` : ''),
      fmt(s.cpuUsPerReq.upstream, 0),
      ratio(s, 'express-hpm-default'),
      ratio(s, 'express-hpm-keepalive'),
      ratio(s, 'node-http-raw'),
    ]),
  );
  if (meta.remeasured) {
    out += `\n${meta.remeasured} run(s) disturbed by other processes were measured again (raw JSON: "discarded").\n`;
  }
  const disturbed = summary.filter((s) => s.maxOtherCores > DISTURBED_CORES);
  if (disturbed.length) {
    out +=
      `\nWARNING: other processes on the machine used CPU during measured runs (up to ` +
      `${fmt(Math.max(...disturbed.map((s) => s.maxOtherCores)), 2)} cores; ${disturbed.map((s) => s.target).join(', ')}): ` +
      `figures are disturbed, re-run on a quiet machine.\n`;
  }
  const gw = by['gateway-redis'];
  if (gw) {
    const goal = (base, want) => {
      if (!by[base]) return `${base} not run`;
      const r = gw.rps / by[base].rps;
      return `${r.toFixed(2)}× ${base} (goal ≥ ${want.toFixed(2)}×: ${r >= want ? 'MET' : 'not met'})`;
    };
    out += `\ngoals (gateway-redis, one worker): ${goal('express-hpm-default', 1)}; ${goal('node-http-raw', 0.75)}\n`;
  }
  if (memory) {
    const m = memory;
    out +=
      `\nmemory (KeyVerifier over MemoryKeyStore, ${m.keys.toLocaleString('en')} keys of one company, all cached):\n` +
      `  store alone:          ${fmt(m.store.heapPerKeyB, 0)} B heap/key, ${fmt(m.store.rssPerKeyB, 0)} B RSS/key\n` +
      `  verifier cache:       ${fmt(m.cache.heapPerKeyB, 0)} B heap/key, ${fmt(m.cache.rssPerKeyB, 0)} B RSS/key` +
      ` (of which empty-cache preallocation ${fmt(m.cacheEmpty.heapPerKeyB, 0)} B/key)\n` +
      `  total RSS with ${m.keys.toLocaleString('en')} cached keys: ${fmt(m.final.rssMiB, 1)} MiB ` +
      `(heap used ${fmt(m.final.heapUsedMiB, 1)} MiB; bare process ${fmt(m.baseline.rssMiB, 1)} MiB)\n`;
  }
  out += `\ntotal run time: ${meta.totalSeconds} s\n`;
  return out;
}

main().catch(fail);
