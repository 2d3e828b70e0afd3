// Graceful overload, open loop: one gateway worker (file store, access log on, core 0) with the
// overload guard, the upstream and autocannon with an overall request rate on core 1.
//
//   npm run build && node bench/overload.mjs [--json-out FILE]
//
// 1. Saturation: closed loop, 32 connections, BENCH_OVERLOAD_SECONDS: S = admitted req/s.
// 2. Half load: S/2 req/s, open loop: p99 of the admitted (2xx) answers.
// 3. Twice saturation: 2·S req/s over many connections: p99 of the admitted answers, how many
//    were refused (503 OVERLOADED), and the worker's RSS before, at its peak and after.
// Goals: admitted p99 at 2·S ≤ 3× the p99 at half load; RSS growth ≤ 32 MiB. The gateway runs
// with `overload.maxInFlight` BENCH_OVERLOAD_MAX_IN_FLIGHT (64) and the default event-loop bound.
// autocannon keeps one request per connection in flight, so the 2·S run opens enough connections
// (BENCH_OVERLOAD_CONNECTIONS, 400) that the rate, not the answers, paces it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Loader } from './lib/loader.mjs';
import { installCleanup, rssBytes, stopAll } from './lib/procs.mjs';
import { REQUEST_PATH, checkBuild, preflight, startGatewayFile, startUpstream } from './lib/targets.mjs';

const env = process.env;
const SECONDS = Number(env.BENCH_OVERLOAD_SECONDS ?? 8);
const MAX_IN_FLIGHT = Number(env.BENCH_OVERLOAD_MAX_IN_FLIGHT ?? 64);
const CONNECTIONS = Number(env.BENCH_OVERLOAD_CONNECTIONS ?? 400);
const GOALS = { p99Ratio: 3, rssGrowthMiB: 32 };
const SUT_CORE = 0;
const LOAD_CORE = 1;
const MiB = 2 ** 20;

/** Runs the three loads against a fresh gateway; the caller stops the processes (`stopAll`). */
export async function runOverload({ log = () => {} } = {}) {
  const tmpDir = mkdtempSync(join(tmpdir(), 'notify-gateway-overload-'));
  try {
    const upstream = await startUpstream({ cpus: LOAD_CORE });
    const gw = await startGatewayFile(upstream, tmpDir, {
      name: 'gateway-overload',
      cpus: SUT_CORE,
      config: { overload: { maxInFlight: MAX_IN_FLIGHT } },
    });
    const headers = { 'x-api-key': gw.key };
    await preflight(gw, { ...headers, 'content-type': 'application/json' });
    const loader = await Loader.start();
    // The load generator shares core 1 with the upstream, never the gateway's core.
    execFileSync('taskset', ['-pc', String(LOAD_CORE), String(loader.pid)], { stdio: 'ignore' });
    const load = (opts) =>
      loader.run({
        url: `http://127.0.0.1:${gw.port}${REQUEST_PATH}`,
        method: 'GET',
        headers,
        pipelining: 1,
        ...opts,
      });
    try {
      await load({ connections: 32, duration: 2 }); // warm-up
      const sat = await load({ connections: 32, duration: SECONDS });
      const saturation = sat.admitted / sat.durationS;
      log(`overload: saturation ${saturation.toFixed(0)} req/s (closed loop, 32 connections)`);
      const half = await load({
        connections: 64,
        duration: SECONDS,
        overallRate: Math.round(saturation / 2),
      });
      log(`overload: half load p99 ${half.admittedP99Ms.toFixed(2)} ms`);
      await sleep(500);
      const rssBefore = rssBytes(gw.child.pid);
      let rssPeak = rssBefore;
      const poll = setInterval(() => (rssPeak = Math.max(rssPeak, rssBytes(gw.child.pid))), 50);
      let twice;
      try {
        twice = await load({
          connections: CONNECTIONS,
          duration: SECONDS,
          overallRate: Math.round(2 * saturation),
        });
      } finally {
        clearInterval(poll);
      }
      await sleep(1000);
      const rssAfter = rssBytes(gw.child.pid);
      const refused = twice.statusCodeStats?.['503']?.count ?? 0;
      const other = twice.requests - twice.admitted - refused;
      log(
        `overload: 2× saturation: ${(twice.admitted / twice.durationS).toFixed(0)} admitted req/s, ` +
          `p99 ${twice.admittedP99Ms.toFixed(2)} ms, ${refused} refused 503, ${other} other`,
      );
      return {
        maxInFlight: MAX_IN_FLIGHT,
        seconds: SECONDS,
        saturationRps: saturation,
        half: {
          rate: Math.round(saturation / 2),
          p50Ms: half.admittedP50Ms,
          p99Ms: half.admittedP99Ms,
          errors: half.errors,
        },
        twice: {
          rate: Math.round(2 * saturation),
          connections: CONNECTIONS,
          sent: twice.requests,
          admittedRps: twice.admitted / twice.durationS,
          p50Ms: twice.admittedP50Ms,
          p99Ms: twice.admittedP99Ms,
          refused503: refused,
          other,
          errors: twice.errors,
          timeouts: twice.timeouts,
        },
        rssMiB: { before: rssBefore / MiB, peak: rssPeak / MiB, after: rssAfter / MiB },
        goals: GOALS,
        loadavg: loadavg(),
      };
    } finally {
      await loader.stop();
    }
  } finally {
    rmSync(tmpDir, { recursive: true, force: true });
  }
}

/** The figures as text, each goal MET or not. */
export function overloadReport(o) {
  const ratio = o.twice.p99Ms / o.half.p99Ms;
  const growth = o.rssMiB.peak - o.rssMiB.before;
  const verdict = (ok) => (ok ? 'MET' : 'not met');
  return (
    `\noverload (one worker, overload.maxInFlight ${o.maxInFlight}, open loop ${o.seconds} s each; load average ` +
    `${o.loadavg.map((x) => x.toFixed(2)).join(' ')} after):\n` +
    `  saturation (closed loop, 32 connections): ${o.saturationRps.toFixed(0)} req/s\n` +
    `  half load, ${o.half.rate} req/s: p50 ${o.half.p50Ms.toFixed(2)} ms, p99 ${o.half.p99Ms.toFixed(2)} ms\n` +
    `  2× saturation, ${o.twice.rate} req/s over ${o.twice.connections} connections: ` +
    `${o.twice.admittedRps.toFixed(0)} admitted req/s, p50 ${o.twice.p50Ms.toFixed(2)} ms, ` +
    `p99 ${o.twice.p99Ms.toFixed(2)} ms; ${o.twice.refused503} refused (503), ${o.twice.other} other, ` +
    `${o.twice.errors} socket errors\n` +
    `  admitted p99 ÷ half-load p99: ${ratio.toFixed(2)}× (goal ≤ ${o.goals.p99Ratio}: ${verdict(ratio <= o.goals.p99Ratio)})\n` +
    `  RSS ${o.rssMiB.before.toFixed(1)} MiB before, ${o.rssMiB.peak.toFixed(1)} MiB peak, ` +
    `${o.rssMiB.after.toFixed(1)} MiB after (growth goal ≤ ${o.goals.rssGrowthMiB} MiB: ${verdict(growth <= o.goals.rssGrowthMiB)})\n`
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  checkBuild();
  installCleanup({ timeLimitMs: 5 * 60_000, label: 'overload' });
  const jsonOut = process.argv.includes('--json-out')
    ? process.argv[process.argv.indexOf('--json-out') + 1]
    : null;
  try {
    const o = await runOverload({ log: (m) => process.stderr.write(`${m}\n`) });
    process.stdout.write(overloadReport(o));
    if (jsonOut) writeFileSync(jsonOut, JSON.stringify(o, null, 2) + '\n');
  } finally {
    await stopAll();
  }
}
