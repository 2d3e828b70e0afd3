// CPU profile of one target under the bench's load, gateway-file by default:
//
//   node bench/profile.mjs [target]   (BENCH_PROFILE_SECONDS=10, BENCH_CONNECTIONS=50)
//
// target: gateway-file (default), gateway-redis, node-http-raw, hpm-plain, express-hpm-keepalive,
// express-hpm-default — the others are there to compare against the gateway's profile.
// Starts the upstream and the target under `node --cpu-prof` (for gateway-file:
// `node --cpu-prof dist/cli.js serve`, file store, one key, access log on), warms it up, loads it
// for ~10 s with autocannon from another process, stops it with SIGINT so Node writes the
// .cpuprofile, then sums self time per function (callFrame functionName + url + line) and per
// package. Only samples taken during the measured load count: the profile's timestamps and
// process.hrtime share the monotonic clock, so startup and shutdown are cut out.
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import process from 'node:process';
import { Loader } from './lib/loader.mjs';
import {
  cpuMicros,
  installCleanup,
  machineBusyMicros,
  setUnexpectedExitHandler,
  stopAll,
  stopProcess,
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
  startHpmPlain,
  startRawProxy,
  startUpstream,
} from './lib/targets.mjs';

const SECONDS = Number(process.env.BENCH_PROFILE_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const TOP = Number(process.env.BENCH_PROFILE_TOP ?? 15);
// Loads while other processes disturb the profile (each waits up to BENCH_QUIET_WAIT s first).
const TRIES = Number(process.env.BENCH_PROFILE_TRIES ?? 3);
const QUIET_WAIT_MS = Number(process.env.BENCH_QUIET_WAIT ?? 60) * 1000;
const TARGET = process.argv[2] ?? 'gateway-file';
const PROF = (dir) => ['--cpu-prof', `--cpu-prof-dir=${dir}`];
const STARTERS = {
  'gateway-file': (up, tmp, prof) => startGatewayFile(up, tmp, { nodeArgs: PROF(prof) }),
  'gateway-redis': (up, tmp, prof) => startGatewayRedis(up, tmp, { nodeArgs: PROF(prof) }),
  'node-http-raw': (up, _tmp, prof) => startRawProxy(up, { nodeArgs: PROF(prof) }),
  'hpm-plain': (up, _tmp, prof) => startHpmPlain(up, { nodeArgs: PROF(prof) }),
  'express-hpm-keepalive': (up, _tmp, prof) => startExpressHpm(up, { keepAlive: true, nodeArgs: PROF(prof) }),
  'express-hpm-default': (up, _tmp, prof) => startExpressHpm(up, { keepAlive: false, nodeArgs: PROF(prof) }),
};
if (!STARTERS[TARGET]) {
  process.stderr.write(`unknown target ${TARGET}; one of ${Object.keys(STARTERS).join(', ')}\n`);
  process.exit(2);
}

installCleanup({ timeLimitMs: (3 * SECONDS + 240) * 1000, label: 'profile' });
let failing = false;
async function fail(err) {
  if (failing) return;
  failing = true;
  process.stderr.write(`\nprofile FAILED: ${err?.message ?? err}\n`);
  await stopAll();
  process.exit(1);
}
setUnexpectedExitHandler((child, code, signal) => {
  void fail(new Error(`${child.benchName} exited (code ${code}, signal ${signal}): ${child.stderrTail()}`));
});

async function main() {
  checkBuild();
  const tmpDir = mkdtempSync(join(tmpdir(), 'notify-gateway-profile-'));
  process.once('exit', () => rmSync(tmpDir, { recursive: true, force: true }));
  const profDir = join(tmpDir, 'prof');
  mkdirSync(profDir);

  const upstream = await startUpstream();
  const gw = await STARTERS[TARGET](upstream, tmpDir, profDir);
  const headers = { 'content-type': 'application/json', 'x-api-key': gw.key ?? 'nk_live_none' };
  await preflight(gw, headers);
  const loader = await Loader.start();
  const opts = (duration) => ({
    url: `http://127.0.0.1:${gw.port}${REQUEST_PATH}`,
    method: 'POST',
    headers,
    body: REQUEST_BODY,
    connections: CONNECTIONS,
    pipelining: 1,
    duration,
  });
  process.stderr.write(`profile: warm-up 2 s, then ${SECONDS} s of load on ${TARGET}\n`);
  await loader.run(opts(2));
  const pid = gw.child.pid;
  // Other jobs on the shared cores show up as preempted time in the samples: wait them out, and
  // load again (only the last window's samples are kept) when they interfered anyway.
  let m;
  for (let attempt = 1; attempt <= TRIES; attempt++) {
    const q = await waitForQuiet({ maxWaitMs: QUIET_WAIT_MS });
    if (!q.quiet) process.stderr.write(`profile: other processes still use ${q.cores.toFixed(2)} cores\n`);
    const ours = trackedPids();
    const oursBefore = ours.reduce((a, p) => a + cpuMicros(p), 0);
    const busyBefore = machineBusyMicros();
    const cpuBefore = cpuMicros(pid);
    const mainBefore = cpuMicros(pid, pid);
    const from = process.hrtime.bigint() / 1000n;
    const r = await loader.run(opts(SECONDS));
    const to = process.hrtime.bigint() / 1000n;
    if (r.non2xx || r.errors) throw new Error(`target answered ${r.non2xx} non-2xx, ${r.errors} errors`);
    const foreign =
      machineBusyMicros() - busyBefore - (ours.reduce((a, p) => a + cpuMicros(p), 0) - oursBefore);
    const otherCores = Math.max(0, foreign / Number(to - from));
    m = {
      r,
      from,
      to,
      otherCores,
      cpuUs: cpuMicros(pid) - cpuBefore,
      mainCpuUs: cpuMicros(pid, pid) - mainBefore,
    };
    if (otherCores <= 0.25) break;
    process.stderr.write(`profile: other processes used ${otherCores.toFixed(2)} cores during the load\n`);
  }
  const { r, from, to, cpuUs, mainCpuUs } = m;
  await loader.stop();

  // SIGINT: the gateway's own graceful stop, then process.exit, which is when the profile is written.
  await stopProcess(gw.child, 'SIGINT', 15_000);
  if (gw.child.exitInfo?.signal === 'SIGKILL') throw new Error('the gateway had to be killed; no profile');
  const file = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error('no .cpuprofile written');
  const profile = JSON.parse(readFileSync(join(profDir, file), 'utf8'));
  await stopAll();

  const summary = summarise(profile, Number(from), Number(to));
  summary.target = TARGET;
  summary.load = { seconds: SECONDS, connections: CONNECTIONS, rps: r.rps, requests: r.requests };
  summary.cpuUs = cpuUs;
  summary.mainCpuUs = mainCpuUs;
  summary.otherCores = m.otherCores;
  process.stdout.write(render(summary));

  const resultsDir = join(ROOT, 'bench/results');
  mkdirSync(resultsDir, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const keep = join(resultsDir, `${TARGET}-${stamp}.cpuprofile`);
  copyFileSync(join(profDir, file), keep);
  writeFileSync(join(resultsDir, `profile-${stamp}.json`), JSON.stringify(summary, null, 2) + '\n');
  process.stdout.write(`\nprofile: ${relative(ROOT, keep)} (open in Chrome DevTools > Performance)\n`);
}

/** Where a function lives, short: `src/http/app.ts`-like for ours, `pkg/file` for dependencies. */
function shortUrl(url) {
  if (!url) return '';
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('/node_modules/');
  if (nm !== -1) return path.slice(nm + '/node_modules/'.length);
  if (path.startsWith(ROOT)) return path.slice(ROOT.length);
  return path;
}

function packageOf(url, name) {
  if (!url) return name.startsWith('(') ? name : '(native / V8 builtins)';
  if (url.startsWith('node:')) return 'node: core';
  const path = url.replace(/^file:\/\//, '');
  const nm = path.lastIndexOf('/node_modules/');
  if (nm !== -1) {
    const parts = path.slice(nm + '/node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (path.startsWith(join(ROOT, 'dist'))) return 'notify-gateway (dist/)';
  return path;
}

function summarise(profile, fromUs, toUs) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const frame = (n) => {
    const { functionName, url, lineNumber } = n.callFrame;
    return `${functionName || '(anonymous)'}${url ? ` ${shortUrl(url)}:${lineNumber + 1}` : ''}`;
  };
  // Who calls a hot function: its immediate caller, then the first two frames outside Node's core
  // (core frames are the same for every proxy; the package or gateway code above them is not).
  const callerStack = (id) => {
    const out = [];
    let outside = 0;
    for (let p = parent.get(id); p !== undefined && outside < 2; p = parent.get(p)) {
      const n = byId.get(p);
      const url = n.callFrame.url;
      if (n.callFrame.functionName === '(root)') break;
      const core = !url || url.startsWith('node:');
      if (out.length === 0 || !core) out.push(frame(n));
      else if (out[out.length - 1] !== '…') out.push('…');
      if (!core) outside++;
    }
    return out.join(' < ');
  };
  // Node core folded into its caller: each sample is charged to the nearest frame outside Node's core
  // (gateway code or a package), i.e. the user-land code that caused the work.
  const folded = new Map();
  const foldedPkg = new Map();
  const nearestOutsideCore = (id) => {
    for (let p = id; p !== undefined; p = parent.get(p)) {
      const n = byId.get(p);
      const url = n.callFrame.url;
      if (url && !url.startsWith('node:')) return n;
    }
    return null;
  };
  // Sample i is taken at startTime + sum(timeDeltas[0..i]); its self time is the gap to the next one.
  const inWindow = fromUs >= profile.startTime - 5e6 && toUs <= profile.endTime + 5e6;
  const self = new Map();
  const byPkg = new Map();
  let t = profile.startTime;
  let total = 0;
  let idle = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    const dt = profile.timeDeltas[i + 1] ?? 0;
    if (inWindow && (t < fromUs || t > toUs)) continue;
    const node = byId.get(profile.samples[i]);
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    if (name === '(idle)') {
      idle += dt;
      continue;
    }
    total += dt;
    const key = `${name}\u0000${url}\u0000${lineNumber}`;
    const e = self.get(key) ?? { name, url: shortUrl(url), line: lineNumber + 1, us: 0, callers: new Map() };
    e.us += dt;
    const stack = callerStack(node.id);
    e.callers.set(stack, (e.callers.get(stack) ?? 0) + dt);
    const ownerNode = nearestOutsideCore(node.id);
    const owner = ownerNode ? frame(ownerNode) : `[Node core only] ${frame(node)}`;
    folded.set(owner, (folded.get(owner) ?? 0) + dt);
    const ownerPkg = ownerNode
      ? packageOf(ownerNode.callFrame.url, '')
      : name.startsWith('(')
        ? name
        : '[Node core only: event loop, sockets, HTTP parser]';
    foldedPkg.set(ownerPkg, (foldedPkg.get(ownerPkg) ?? 0) + dt);
    self.set(key, e);
    const pkg = packageOf(url, name);
    byPkg.set(pkg, (byPkg.get(pkg) ?? 0) + dt);
  }
  const top = [...self.values()].sort((a, b) => b.us - a.us);
  return {
    windowUs: inWindow ? toUs - fromUs : profile.endTime - profile.startTime,
    windowed: inWindow,
    busyUs: total,
    idleUs: idle,
    top: top.slice(0, 50).map((e) => ({
      ...e,
      pct: (100 * e.us) / total,
      callers: [...e.callers.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5)
        .map(([stack, us]) => ({ stack, pct: (100 * us) / e.us })),
    })),
    folded: [...folded.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 30)
      .map(([fn, us]) => ({ fn, us, pct: (100 * us) / total })),
    foldedPackages: [...foldedPkg.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([pkg, us]) => ({ pkg, us, pct: (100 * us) / total })),
    packages: [...byPkg.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([pkg, us]) => ({ pkg, us, pct: (100 * us) / total })),
  };
}

function render(s) {
  const ms = (us) => (us / 1000).toFixed(0);
  const perReq = (us) => (us / s.load.requests).toFixed(1);
  let out =
    `\n${s.target} CPU profile: ${s.load.seconds} s at ${s.load.connections} connections, ` +
    `${s.load.rps.toFixed(0)} req/s, ${s.load.requests} requests\n` +
    `main thread: sampled busy ${ms(s.busyUs)} ms (${perReq(s.busyUs)} µs/req), idle ${ms(s.idleUs)} ms, ` +
    `CPU ${ms(s.mainCpuUs)} ms (${perReq(s.mainCpuUs)} µs/req); whole process CPU (GC helpers, libuv pool) ` +
    `${ms(s.cpuUs)} ms (${perReq(s.cpuUs)} µs/req)` +
    `${s.windowed ? '' : ' (whole process: could not cut to the load window)'}\n` +
    // V8 samples on a wall-clock timer: time the main thread spends runnable but preempted (the cores
    // are shared with the load generator and the upstream) is charged to the function it was in.
    `(~${ms(Math.max(0, s.busyUs - s.mainCpuUs))} ms of the samples are time the main thread was preempted, ` +
    `not running: V8 samples on a wall-clock timer and the cores are shared; those land mostly in writev)\n` +
    `other processes on the machine used ${s.otherCores.toFixed(2)} cores during the load` +
    `${s.otherCores > 0.25 ? ' — DISTURBED, re-run on a quiet machine' : ''}\n\n`;
  out += `top ${TOP} functions by self time (% of sampled busy time)\n`;
  out +=
    '|  # | self ms | µs/req |     % | function | where |\n|---:|--------:|-------:|------:|----------|-------|\n';
  s.top.slice(0, TOP).forEach((e, i) => {
    const where = e.url ? `${e.url}:${e.line}` : '';
    out += `| ${String(i + 1).padStart(2)} | ${ms(e.us).padStart(7)} | ${perReq(e.us).padStart(6)} | ${e.pct.toFixed(1).padStart(5)} | ${e.name} | ${where} |\n`;
  });
  out += "\nwhere the top 3 are called from (share of each one's self time; caller < its caller < ...)\n";
  for (const e of s.top.slice(0, 3)) {
    out += `  ${e.name}\n`;
    for (const c of e.callers.slice(0, 3)) {
      const stack = c.stack.endsWith(' < …') ? `${c.stack.slice(0, -4)} < (only Node core above)` : c.stack;
      out += `    ${c.pct.toFixed(0).padStart(3)}%  ${stack || '(top level)'}\n`;
    }
  }
  out += `\nNode core folded into its nearest caller outside Node core (gateway code or a package), top ${TOP}\n`;
  out += '| ms | µs/req | % | charged to |\n|---:|---:|---:|---|\n';
  for (const f of s.folded.slice(0, TOP))
    out += `| ${ms(f.us)} | ${perReq(f.us)} | ${f.pct.toFixed(1)} | ${f.fn} |\n`;
  out += '\nself time by package (% of sampled busy time)\n';
  out += '| package | self ms | µs/req | % |\n|---------|--------:|-------:|--:|\n';
  for (const p of s.packages.slice(0, 15))
    out += `| ${p.pkg} | ${ms(p.us)} | ${perReq(p.us)} | ${p.pct.toFixed(1)} |\n`;
  out += '\nby package, with the Node core work each one triggers (core folded into the caller)\n';
  out += '| package | ms | µs/req | % |\n|---------|---:|-------:|--:|\n';
  for (const p of s.foldedPackages.slice(0, 15))
    out += `| ${p.pkg} | ${ms(p.us)} | ${perReq(p.us)} | ${p.pct.toFixed(1)} |\n`;
  return out;
}

main().catch(fail);
