// Connections: one gateway worker (file store, access log on, core 0) holds BENCH_IDLE_CONNECTIONS
// (10,000) idle keep-alive client connections, each after one proxied request; its RSS before and
// after gives the memory per idle connection. Then, with those still open, autocannon runs
// BENCH_ACTIVE_CONNECTIONS (1,000) active connections for BENCH_CONNECTIONS_SECONDS (5): every
// answer must be a 2xx. Clients and the upstream run on core 1.
//
//   npm run build && node bench/connections.mjs [--json-out FILE]
//
// Goal: the 10,000 idle connections cost ≤ 100 MB of RSS. The same idle connections are first held
// by http-proxy-middleware alone on node:http (hpm-plain, same timeouts): Node's own cost per
// connection, so the gateway's share shows next to it. The script raises its open-file limit
// (`ulimit -n`) by running itself again under bash when the limit is too low for the connections.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Loader } from './lib/loader.mjs';
import { installCleanup, rssBytes, runTracked, stopAll, stopProcess } from './lib/procs.mjs';
import {
  REQUEST_PATH,
  checkBuild,
  preflight,
  startGatewayFile,
  startHpmPlain,
  startUpstream,
} from './lib/targets.mjs';

const env = process.env;
const IDLE = Number(env.BENCH_IDLE_CONNECTIONS ?? 10_000);
const ACTIVE = Number(env.BENCH_ACTIVE_CONNECTIONS ?? 1000);
const SECONDS = Number(env.BENCH_CONNECTIONS_SECONDS ?? 5);
const GOAL_MB = 100;
const SUT_CORE = 0;
const LOAD_CORE = 1;
const SELF = fileURLToPath(import.meta.url);
const MB = 1e6;

/** The client side: opens IDLE connections, one keep-alive request on each, then holds them. */
async function holdIdle() {
  const { PORT, KEY } = env;
  const head = `GET ${REQUEST_PATH} HTTP/1.1\r\nHost: 127.0.0.1:${PORT}\r\nX-API-Key: ${KEY}\r\n\r\n`;
  const sockets = [];
  const statuses = {};
  const one = () =>
    new Promise((resolve) => {
      const s = connect(Number(PORT), '127.0.0.1');
      sockets.push(s);
      s.setEncoding('latin1');
      s.once('connect', () => s.write(head));
      s.once('data', (d) => {
        const status = d.slice(9, 12);
        statuses[status] = (statuses[status] ?? 0) + 1;
        resolve();
      });
      s.once('error', (err) => {
        statuses[err.code] = (statuses[err.code] ?? 0) + 1;
        resolve();
      });
    });
  for (let i = 0; i < IDLE; i += 200) await Promise.all(Array.from({ length: Math.min(200, IDLE - i) }, one));
  const open = sockets.filter((s) => !s.destroyed).length;
  process.send({ statuses, open });
  // Held until the parent stops this process.
  await new Promise(() => {});
}

/** Opens IDLE idle connections to `target` from a holder process; resolves with what they cost. */
async function holdIdleOn(target, key, log) {
  await sleep(1000);
  const rssBase = rssBytes(target.child.pid);
  log(`connections: opening ${IDLE} idle keep-alive connections to ${target.name}`);
  const holder = spawn('taskset', ['-c', String(LOAD_CORE), process.execPath, SELF, '--hold'], {
    env: { ...process.env, PORT: String(target.port), KEY: key },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const held = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('idle connections not opened within 120 s')), 120_000);
    holder.once('message', (m) => (clearTimeout(timer), resolve(m)));
    holder.once('exit', (code) => reject(new Error(`connection holder exited ${code}`)));
  }).catch((err) => {
    holder.kill('SIGKILL');
    throw err;
  });
  await sleep(2000);
  const rssIdle = rssBytes(target.child.pid);
  log(
    `connections: ${target.name}: ${held.open} open, answers ${JSON.stringify(held.statuses)}; RSS +${((rssIdle - rssBase) / MB).toFixed(1)} MB`,
  );
  return { held, rssBase, rssIdle, holder };
}

/** Node's own cost: the same idle connections held by hpm-plain; its RSS growth in bytes. */
async function baselineGrowth(upstream, log) {
  const hpm = await startHpmPlain(upstream, { cpus: SUT_CORE, env: { KEEP_ALIVE_TIMEOUT_MS: '600000' } });
  try {
    await preflight(hpm, { 'content-type': 'application/json' });
    const { rssBase, rssIdle, holder } = await holdIdleOn(hpm, '-', log);
    holder.kill('SIGKILL');
    return rssIdle - rssBase;
  } finally {
    await stopProcess(hpm.child);
  }
}

/** Runs the measurement in this process (its open-file limit must allow the connections). */
async function measure(log) {
  const tmpDir = mkdtempSync(join(tmpdir(), 'notify-gateway-conns-'));
  try {
    const upstream = await startUpstream({ cpus: LOAD_CORE });
    const hpmGrowth = await baselineGrowth(upstream, log);
    const gw = await startGatewayFile(upstream, tmpDir, {
      name: 'gateway-connections',
      cpus: SUT_CORE,
      // Idle connections stay open for the whole run (Node closes an idle keep-alive connection
      // after headersTimeout too, so both are raised; headersTimeout may not exceed requestTimeout),
      // and the overload guard stays out of the way: this measures connections, not refusals.
      config: {
        server: { keepAliveTimeoutMs: 600_000, headersTimeoutMs: 300_000 },
        overload: { maxInFlight: 0, maxEventLoopDelayMs: 0 },
      },
    });
    const headers = { 'x-api-key': gw.key };
    await preflight(gw, { ...headers, 'content-type': 'application/json' });
    const { held, rssBase, rssIdle, holder } = await holdIdleOn(gw, gw.key, log);
    try {
      const loader = await Loader.start();
      try {
        const r = await loader.run({
          url: `http://127.0.0.1:${gw.port}${REQUEST_PATH}`,
          method: 'GET',
          headers,
          connections: ACTIVE,
          pipelining: 1,
          duration: SECONDS,
        });
        const rssActive = rssBytes(gw.child.pid);
        return {
          idle: IDLE,
          idleOpen: held.open,
          idleAnswers: held.statuses,
          rssMB: { base: rssBase / MB, idle: rssIdle / MB, active: rssActive / MB },
          perIdleKB: (rssIdle - rssBase) / IDLE / 1000,
          hpmPlainMB: hpmGrowth / MB,
          active: {
            connections: ACTIVE,
            seconds: SECONDS,
            rps: r.rps,
            p99Ms: r.p99Ms,
            non2xx: r.non2xx,
            errors: r.errors,
            timeouts: r.timeouts,
            statuses: r.statusCodeStats,
          },
          goalMB: GOAL_MB,
          loadavg: loadavg(),
        };
      } finally {
        await loader.stop();
      }
    } finally {
      holder.kill('SIGKILL');
    }
  } finally {
    rmSync(tmpDir, { recursive: true, force: true });
  }
}

/**
 * For `npm run bench`: runs this script in a child under `ulimit -n 65536` (kept as it is where it
 * cannot be raised) and returns its figures.
 */
export async function runConnections({ log = () => {} } = {}) {
  const tmp = mkdtempSync(join(tmpdir(), 'notify-gateway-conns-out-'));
  try {
    const out = join(tmp, 'connections.json');
    log(`connections: ${IDLE} idle, then ${ACTIVE} active (bench/connections.mjs)`);
    const r = await runTracked(
      'connections',
      'bash',
      ['-c', `ulimit -n 65536 2>/dev/null; exec "${process.execPath}" "${SELF}" --json-out "${out}"`],
      { timeoutMs: 240_000 },
    );
    if (r.code !== 0) throw new Error(`bench/connections.mjs failed: ${r.stderr}`);
    return JSON.parse(readFileSync(out, 'utf8'));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

export function connectionsReport(c) {
  const growth = c.rssMB.idle - c.rssMB.base;
  const a = c.active;
  return (
    `\nconnections (one worker; load average ${c.loadavg.map((x) => x.toFixed(2)).join(' ')} after):\n` +
    `  ${c.idleOpen} of ${c.idle} idle keep-alive connections open: RSS ${c.rssMB.base.toFixed(1)} → ` +
    `${c.rssMB.idle.toFixed(1)} MB, +${growth.toFixed(1)} MB (${c.perIdleKB.toFixed(1)} kB each; goal ≤ ${c.goalMB} MB: ` +
    `${growth <= c.goalMB ? 'MET' : 'not met'}); hpm-plain, the same connections: +${c.hpmPlainMB.toFixed(1)} MB ` +
    `(gateway ${(growth / c.hpmPlainMB).toFixed(2)}×)\n` +
    `  then ${a.connections} active connections for ${a.seconds} s: ${a.rps.toFixed(0)} req/s, p99 ${a.p99Ms?.toFixed(2)} ms, ` +
    `${a.non2xx} non-2xx, ${a.errors} errors, ${a.timeouts} timeouts (${a.non2xx + a.errors + a.timeouts === 0 ? 'all served' : 'NOT all served'}); ` +
    `RSS ${c.rssMB.active.toFixed(1)} MB; statuses ${JSON.stringify(a.statuses)}\n`
  );
}

if (process.argv[2] === '--hold') {
  await holdIdle();
} else if (process.argv[1] === SELF) {
  checkBuild();
  installCleanup({ timeLimitMs: 4 * 60_000, label: 'connections' });
  const jsonOut = process.argv.includes('--json-out')
    ? process.argv[process.argv.indexOf('--json-out') + 1]
    : null;
  try {
    const c = await measure((m) => process.stderr.write(`${m}\n`));
    process.stdout.write(connectionsReport(c));
    if (jsonOut) writeFileSync(jsonOut, JSON.stringify(c, null, 2) + '\n');
  } finally {
    await stopAll();
  }
}
