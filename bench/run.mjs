// `npm run bench`: throughput, latency and CPU per request of the gateway against the bare stack
// (Express 5 + http-proxy-middleware with a keep-alive agent), http-proxy-middleware alone on
// node:http, and the raw node:http proxy, GET and a
// small JSON POST, then the key-cache memory figure (bench/memory.mjs) and the upload figures
// (bench/upload.mjs). See bench/README.md.
//
// Placement: the system under test (the proxy, and redis-server for the gateway) runs pinned to core
// 0 (`taskset -c 0`); wrk and the upstream to core 1. CPU per request is the SUT's own utime+stime
// (/proc/<pid>/stat) ÷ completed requests, redis-server included for the gateway.
//
// Environment: BENCH_ROUNDS (3), BENCH_SECONDS (5, measured run), BENCH_WARMUP (2, discarded),
// BENCH_CONNECTIONS (32), BENCH_TARGETS (comma list, default express-hpm-keepalive,hpm-plain,node-http-raw,
// gateway-redis; also express-hpm-default, gateway-file, gateway-file-2targets), BENCH_SCENARIOS (GET,POST), BENCH_MEMORY (1; 0 skips the memory figure),
// BENCH_UPLOAD (1; 0 skips the upload figures), BENCH_OVERLOAD (1; 0 skips bench/overload.mjs),
// BENCH_COLD_START (1; 0 skips bench/cold-start.mjs), BENCH_CONNECTIONS_IDLE (1; 0 skips
// bench/connections.mjs),
// BENCH_QUIET_WAIT (60: seconds, in total, the bench may wait for other processes to leave core 0
// before measured runs; 0 never waits).
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  cpuMicros,
  installCleanup,
  machineBusyMicros,
  setUnexpectedExitHandler,
  stopAll,
} from './lib/procs.mjs';
import {
  REQUEST_BODY,
  REQUEST_PATH,
  ROOT,
  checkBuild,
  preflight,
  startExpressHpm,
  startGatewayFile,
  startGatewayFileTwoTargets,
  startGatewayRedis,
  startHpmPlain,
  startRawProxy,
  startUpstream,
} from './lib/targets.mjs';
import { ensureWrk, runWrk, writeWrkScript } from './lib/wrk.mjs';
import { coldStartReport, runColdStart } from './cold-start.mjs';
import { connectionsReport, runConnections } from './connections.mjs';
import { overloadReport, runOverload } from './overload.mjs';
import { runUpload, uploadReport } from './upload.mjs';

const env = process.env;
const intEnv = (name, def, min = 1) => {
  const v = env[name] === undefined || env[name] === '' ? def : Number(env[name]);
  if (!Number.isInteger(v) || v < min) throw new Error(`${name} must be a whole number >= ${min}`);
  return v;
};
const ROUNDS = intEnv('BENCH_ROUNDS', 3);
const SECONDS = intEnv('BENCH_SECONDS', 5);
const WARMUP = intEnv('BENCH_WARMUP', 2, 0);
const CONNECTIONS = intEnv('BENCH_CONNECTIONS', 32);
const WITH_MEMORY = env.BENCH_MEMORY !== '0';
const WITH_UPLOAD = env.BENCH_UPLOAD !== '0';
const WITH_OVERLOAD = env.BENCH_OVERLOAD !== '0';
const WITH_COLD_START = env.BENCH_COLD_START !== '0';
const WITH_CONNECTIONS = env.BENCH_CONNECTIONS_IDLE !== '0';
const QUIET_WAIT_S = intEnv('BENCH_QUIET_WAIT', 60, 0);
// The system under test and the load side, one core each.
const SUT_CORE = 0;
const LOAD_CORE = 1;
// A quarter of core 0 taken by processes other than the SUT during a measured run is flagged as
// disturbed.
const DISTURBED_CORES = 0.25;

/** The two baselines every ratio is taken against: the bare stack, and its proxy library alone. */
const BARE = 'express-hpm-keepalive';
const HPM = 'hpm-plain';
const ALL_TARGETS = [
  'express-hpm-keepalive',
  'hpm-plain',
  'node-http-raw',
  'gateway-redis',
  'express-hpm-default',
  'gateway-file',
  'gateway-file-2targets',
];
const DEFAULT_TARGETS = ['express-hpm-keepalive', 'hpm-plain', 'node-http-raw', 'gateway-redis'];
const SELECTED = env.BENCH_TARGETS ? env.BENCH_TARGETS.split(',').map((s) => s.trim()) : DEFAULT_TARGETS;
for (const t of SELECTED)
  if (!ALL_TARGETS.includes(t)) throw new Error(`unknown target in BENCH_TARGETS: ${t}`);
const SCENARIOS = (env.BENCH_SCENARIOS || 'GET,POST').split(',').map((s) => s.trim().toUpperCase());
for (const s of SCENARIOS) if (s !== 'GET' && s !== 'POST') throw new Error(`unknown scenario: ${s}`);

// The whole run must stay under 14 minutes: refuse settings that cannot, and enforce it with a
// watchdog that stops everything.
const TIME_LIMIT_MS = 14 * 60_000;
const estimateS =
  ROUNDS * SELECTED.length * SCENARIOS.length * (WARMUP + SECONDS + 1) +
  QUIET_WAIT_S +
  30 +
  (WITH_MEMORY ? 30 : 0) +
  (WITH_UPLOAD ? 90 : 0) +
  (WITH_OVERLOAD ? 45 : 0) +
  (WITH_COLD_START ? 40 : 0) +
  (WITH_CONNECTIONS ? 60 : 0);
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

/** CPU that processes other than `pids` took on core 0 while `fn` ran, in cores. */
async function foreignOnSutCore(pids, fn) {
  const own0 = pids.reduce((a, pid) => a + cpuMicros(pid), 0);
  const busy0 = machineBusyMicros(SUT_CORE);
  const t0 = process.hrtime.bigint();
  const result = await fn();
  const wallUs = Number(process.hrtime.bigint() - t0) / 1e3;
  const foreign =
    machineBusyMicros(SUT_CORE) - busy0 - (pids.reduce((a, pid) => a + cpuMicros(pid), 0) - own0);
  return { result, cores: Math.max(0, foreign / wallUs) };
}

/** Waits (at most `maxWaitMs`) until others use < DISTURBED_CORES of core 0 over half a second. */
async function waitForQuietCore(pids, maxWaitMs) {
  const start = Date.now();
  for (;;) {
    const { cores } = await foreignOnSutCore(pids, () => sleep(500));
    const waitedMs = Date.now() - start;
    if (cores < DISTURBED_CORES) return { waitedMs, cores, quiet: true };
    if (waitedMs + 500 > maxWaitMs) return { waitedMs, cores, quiet: false };
  }
}

async function startTargets(upstream, tmpDir) {
  const cpus = SUT_CORE;
  // One key for every gateway (the same headers go to every target): the Redis gateway's key, made
  // by the CLI, is written into the file gateways' key files, so it starts first.
  let key;
  const starters = {
    'express-hpm-default': () => startExpressHpm(upstream, { keepAlive: false, cpus }),
    'express-hpm-keepalive': () => startExpressHpm(upstream, { keepAlive: true, cpus }),
    'hpm-plain': () => startHpmPlain(upstream, { cpus }),
    'node-http-raw': () => startRawProxy(upstream, { cpus }),
    'gateway-file': () => startGatewayFile(upstream, tmpDir, { cpus, key }),
    'gateway-redis': () => startGatewayRedis(upstream, tmpDir, { cpus }),
    // The second upstream of the two-target route, on the load core like the first.
    'gateway-file-2targets': async () =>
      startGatewayFileTwoTargets(upstream, await startUpstream({ cpus: LOAD_CORE }), tmpDir, { cpus, key }),
  };
  const started = new Map();
  for (const name of [...SELECTED].sort((a, b) => (b === 'gateway-redis') - (a === 'gateway-redis'))) {
    const t = await starters[name]();
    key ??= t.key;
    started.set(name, t);
  }
  return SELECTED.map((name) => started.get(name));
}

async function main() {
  const fresh = checkBuild();
  ensureWrk(log);
  const loadBefore = loadavg();
  log(`load average ${loadBefore.map((x) => x.toFixed(2)).join(' ')}`);
  const tmpDir = mkdtempSync(join(tmpdir(), 'notify-gateway-bench-'));
  process.once('exit', () => rmSync(tmpDir, { recursive: true, force: true }));

  log(`starting upstream (core ${LOAD_CORE}) and ${SELECTED.length} targets (core ${SUT_CORE})`);
  const upstream = await startUpstream({ cpus: LOAD_CORE });
  const targets = await startTargets(upstream, tmpDir);
  const key = targets.find((x) => x.key)?.key ?? 'nk_live_none';
  // Sent to every target (the plain proxies pass it on, harmlessly), so requests are the same size.
  const headers = { 'x-api-key': key };
  for (const t of targets) await preflight(t, { ...headers, 'content-type': 'application/json' });
  log('all targets answered 2xx through to the upstream');
  const scripts = {
    GET: writeWrkScript(tmpDir, 'get', { method: 'GET', headers }),
    POST: writeWrkScript(tmpDir, 'post', {
      method: 'POST',
      body: REQUEST_BODY,
      headers: { ...headers, 'Content-Type': 'application/json' },
    }),
  };
  const wrk = (t, scenario, seconds) =>
    runWrk({
      url: `http://127.0.0.1:${t.port}${REQUEST_PATH}`,
      script: scripts[scenario],
      connections: CONNECTIONS,
      seconds,
      cpus: LOAD_CORE,
    });
  const checkClean = (t, scenario, r, phase) => {
    const failed = r.non2xx + r.errors + r.timeouts;
    // A baseline (not the gateway) may lose a rare request to http-proxy-middleware's keep-alive
    // race with the upstream closing an idle socket: at most 1 in 1,000, reported, not fatal.
    if (!t.gateway && r.requests > 0 && failed > 0 && failed * 1000 <= r.requests) {
      log(`${t.name} ${scenario} ${phase}: ${failed} of ${r.requests} requests failed (baseline; kept)`);
      return;
    }
    if (failed || r.requests === 0) {
      throw new Error(
        `${t.name} ${scenario} ${phase}: ${r.non2xx} statuses >= 400, ${r.errors} socket errors, ` +
          `${r.timeouts} timeouts of ${r.requests}. ` +
          (t.gateway
            ? 'A gateway refusing requests means the bench setup is wrong (key, tier, route).'
            : 'The target or the upstream is failing.'),
      );
    }
  };

  // One measured run: the SUT's CPU (gateway + redis-server) from /proc around it.
  const measure = async (t, scenario) => {
    const sut = [t.child.pid, ...(t.redis ? [t.redis.pid] : [])];
    const before = sut.map((pid) => cpuMicros(pid));
    const { result: r, cores } = await foreignOnSutCore(sut, () => wrk(t, scenario, SECONDS));
    const cpu = sut.map((pid, i) => (cpuMicros(pid) - before[i]) / Math.max(1, r.requests));
    return {
      ...r,
      cpuUsPerReq: cpu.reduce((a, b) => a + b, 0),
      cpuProxyUsPerReq: cpu[0],
      cpuRedisUsPerReq: t.redis ? cpu[1] : null,
      otherCores: cores,
    };
  };

  const runs = [];
  let quietBudgetMs = QUIET_WAIT_S * 1000;
  let step = 0;
  for (let round = 0; round < ROUNDS; round++) {
    for (const scenario of SCENARIOS) {
      // Interleaved, and rotated each time, so no target always runs first or after the same one.
      const order = targets.map((_, i) => targets[(i + step) % targets.length]);
      step++;
      for (const t of order) {
        const sut = [t.child.pid, ...(t.redis ? [t.redis.pid] : [])];
        if (QUIET_WAIT_S && quietBudgetMs > 0) {
          const q = await waitForQuietCore(sut, quietBudgetMs);
          quietBudgetMs -= q.waitedMs;
          if (q.waitedMs > 1000 || !q.quiet)
            log(
              `waited ${(q.waitedMs / 1000).toFixed(1)} s for core ${SUT_CORE} to go quiet` +
                (q.quiet ? '' : ` (still ${q.cores.toFixed(2)} cores busy; running anyway)`),
            );
        }
        if (WARMUP > 0) checkClean(t, scenario, await wrk(t, scenario, WARMUP), 'warm-up');
        const r = await measure(t, scenario);
        checkClean(t, scenario, r, `round ${round + 1}`);
        log(
          `round ${round + 1}/${ROUNDS} ${scenario.padEnd(4)} ${t.name.padEnd(22)} ${fmt(r.rps, 0).padStart(6)} req/s  ` +
            `p50 ${fmt(r.p50Ms, 2)} ms  p99 ${fmt(r.p99Ms, 2)} ms  ${fmt(r.cpuUsPerReq, 0)} µs/req` +
            (r.otherCores > DISTURBED_CORES
              ? `  (others used ${fmt(r.otherCores, 2)} of core ${SUT_CORE})`
              : ''),
        );
        runs.push({ round: round + 1, scenario, target: t.name, ...r });
      }
    }
  }

  const summary = [];
  for (const scenario of SCENARIOS) {
    for (const t of targets) {
      const rs = runs.filter((r) => r.target === t.name && r.scenario === scenario);
      const med = (k) => median(rs.map((r) => r[k]));
      summary.push({
        scenario,
        target: t.name,
        rps: med('rps'),
        rpsMin: Math.min(...rs.map((r) => r.rps)),
        rpsMax: Math.max(...rs.map((r) => r.rps)),
        p50Ms: med('p50Ms'),
        p99Ms: med('p99Ms'),
        cpuUsPerReq: med('cpuUsPerReq'),
        cpuRedisUsPerReq: t.redis ? med('cpuRedisUsPerReq') : null,
        maxOtherCores: Math.max(...rs.map((r) => r.otherCores)),
        rounds: rs.length,
      });
    }
  }
  log('stopping targets');
  await stopAll();

  let memory = null;
  if (WITH_MEMORY) {
    log('memory: 100k cached keys (bench/memory.mjs)');
    memory = await runMemory(tmpDir);
  }
  let upload = null;
  if (WITH_UPLOAD) {
    log('uploads: 16 concurrent 16 MiB bodies per kind (bench/upload.mjs)');
    upload = await runUpload({ log });
    await stopAll();
  }

  let overload = null;
  if (WITH_OVERLOAD) {
    log('overload: open loop at half and twice saturation (bench/overload.mjs)');
    overload = await runOverload({ log });
    await stopAll();
  }

  let coldStart = null;
  if (WITH_COLD_START) {
    log('cold start: --help, serve to /readyz (file, Redis), keys list (bench/cold-start.mjs)');
    coldStart = await runColdStart({ log });
    await stopAll();
  }

  let connections = null;
  if (WITH_CONNECTIONS) {
    connections = await runConnections({ log });
    await stopAll();
  }

  const meta = {
    date: new Date().toISOString(),
    git: gitDescribe(),
    distFresh: fresh,
    loadavgBefore: loadBefore,
    loadavgAfter: loadavg(),
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    memGiB: Math.round(totalmem() / 2 ** 30),
    rounds: ROUNDS,
    seconds: SECONDS,
    warmup: WARMUP,
    connections: CONNECTIONS,
    request: `${REQUEST_PATH} with X-API-Key; POST: ${REQUEST_BODY.length} B JSON body`,
    totalSeconds: Math.round((Date.now() - started) / 1000),
  };
  const text =
    report(meta, summary, memory) +
    (upload ? uploadReport(upload) : '') +
    (overload ? overloadReport(overload) : '') +
    (coldStart ? coldStartReport(coldStart) : '') +
    (connections ? connectionsReport(connections) : '') +
    `\ntotal run time: ${meta.totalSeconds} s\n`;
  process.stdout.write(text);
  const resultsDir = join(ROOT, 'bench/results');
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `bench-${meta.date.replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      { meta, summary, runs, memory, upload, overload, coldStart, connections, table: text },
      null,
      2,
    ) + '\n',
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
    '| ' + cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ') + ' |';
  const sep =
    '|' + widths.map((w, i) => (i < 2 ? '-'.repeat(w + 2) : '-'.repeat(w + 1) + ':')).join('|') + '|';
  return [line(header), sep, ...rows.map(line)].join('\n') + '\n';
}

/**
 * Goals of the gateway (gateway-redis, access log on) per scenario: against the bare stack
 * (Express 5 + http-proxy-middleware), and against http-proxy-middleware alone on node:http.
 */
const GOALS = {
  [BARE]: { rps: 0.9, cpu: 1.15, p99: 1.5 },
  [HPM]: { rps: 0.8, cpu: 1.25 },
};

function goalChecks(gw, b, goal) {
  const check = (name, r, want, le) =>
    `${name} ${r.toFixed(2)}× (goal ${le ? '≤' : '≥'} ${want}: ${(le ? r <= want : r >= want) ? 'MET' : 'not met'})`;
  const parts = [
    check('req/s', gw.rps / b.rps, goal.rps, false),
    check('CPU/req', gw.cpuUsPerReq / b.cpuUsPerReq, goal.cpu, true),
  ];
  if (goal.p99) parts.push(check('p99', gw.p99Ms / b.p99Ms, goal.p99, true));
  return parts.join('; ');
}

function report(meta, summary, memory) {
  const baseOf = (s, name) => summary.find((x) => x.scenario === s.scenario && x.target === name);
  const ratio = (a, b) => (b ? `${(a / b).toFixed(2)}×` : '-');
  const la = (l) => l.map((x) => x.toFixed(2)).join(' ');
  let out = `\nnotify-gateway bench — ${meta.date} — ${meta.git}\n`;
  out +=
    `${meta.cores} cores (${meta.cpu}), Node ${meta.node}; load average ${la(meta.loadavgBefore)} before, ` +
    `${la(meta.loadavgAfter)} after.\n` +
    `SUT (+ redis-server) pinned to core ${SUT_CORE}, wrk (1 thread) + upstream to core ${LOAD_CORE}. ` +
    `${meta.request}; ${meta.connections} connections; ` +
    `median of ${meta.rounds} interleaved rounds × ${meta.seconds} s (after ${meta.warmup} s warm-up each).\n` +
    `bare = ${BARE} (Express 5 + http-proxy-middleware); hpm = ${HPM} (http-proxy-middleware alone on node:http).\n\n`;
  out += table(
    [
      'scenario',
      'target',
      'req/s',
      'req/s min–max',
      'p50 ms',
      'p99 ms',
      'CPU µs/req',
      'req/s ÷ bare',
      'CPU ÷ bare',
      'p99 ÷ bare',
      'req/s ÷ hpm',
      'CPU ÷ hpm',
    ],
    summary.map((s) => {
      const b = baseOf(s, BARE);
      const h = baseOf(s, HPM);
      return [
        s.scenario,
        s.target,
        fmt(s.rps, 0),
        `${fmt(s.rpsMin, 0)}–${fmt(s.rpsMax, 0)}`,
        fmt(s.p50Ms, 2),
        fmt(s.p99Ms, 2),
        fmt(s.cpuUsPerReq, 0) + (s.cpuRedisUsPerReq !== null ? ` (redis ${fmt(s.cpuRedisUsPerReq, 0)})` : ''),
        ratio(s.rps, b?.rps),
        ratio(s.cpuUsPerReq, b?.cpuUsPerReq),
        ratio(s.p99Ms, b?.p99Ms),
        ratio(s.rps, h?.rps),
        ratio(s.cpuUsPerReq, h?.cpuUsPerReq),
      ];
    }),
  );
  const disturbed = summary.filter((s) => s.maxOtherCores > DISTURBED_CORES);
  if (disturbed.length) {
    out +=
      `\nWARNING: other processes used up to ${fmt(Math.max(...disturbed.map((s) => s.maxOtherCores)), 2)} ` +
      `of core ${SUT_CORE} during measured runs (${[...new Set(disturbed.map((s) => `${s.scenario} ${s.target}`))].join(', ')}): ` +
      `wall-clock figures are disturbed; CPU µs/req is the steadier figure. Re-run on a quiet machine.\n`;
  }
  for (const gw of summary.filter((s) => s.target === 'gateway-redis')) {
    for (const [name, goal] of Object.entries(GOALS)) {
      const b = baseOf(gw, name);
      if (b) out += `\ngoals ${gw.scenario} (gateway-redis ÷ ${name}): ${goalChecks(gw, b, goal)}`;
    }
  }
  out += '\n';
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
  return out;
}

main().catch(fail);
