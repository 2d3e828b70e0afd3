// Child-process bookkeeping for the bench: every process we start is tracked here so that it is
// killed at the end, on an error, on SIGINT/SIGTERM and on a time-limit overrun. Nothing else is
// ever signalled: only the pids we spawned.
import { execFileSync, fork, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

const children = new Set();
let shuttingDown = false;
let onUnexpectedExit = (child, code, signal) => {
  process.stderr.write(`bench: ${child.benchName} exited unexpectedly (code ${code}, signal ${signal})\n`);
};

/** Called when a tracked child dies while the bench still needs it (a crashed target = a broken run). */
export function setUnexpectedExitHandler(fn) {
  onUnexpectedExit = fn;
}

function track(child, name) {
  child.benchName = name;
  let stderr = '';
  // Keep the tail of stderr for error messages; an unread pipe would block a chatty child.
  child.stderr?.on('data', (d) => {
    stderr = (stderr + d).slice(-8000);
  });
  child.stderrTail = () => stderr.trim();
  child.expectedExit = false;
  children.add(child);
  child.once('exit', (code, signal) => {
    children.delete(child);
    child.exitInfo = { code, signal };
    if (!shuttingDown && !child.expectedExit) onUnexpectedExit(child, code, signal);
  });
  return child;
}

/**
 * Starts a long-running process. stdout goes to /dev/null by default ('ignore'): the gateways'
 * access log is written, as in production, but nobody reads it.
 */
export function startProcess(name, cmd, args, { env = {}, cwd, stdout = 'ignore', cpus } = {}) {
  const [c, a] = pinned(cmd, args, cpus);
  const child = spawn(c, a, { cwd, env: childEnv(env), stdio: ['ignore', stdout, 'pipe'] });
  return track(child, name);
}

/**
 * `cmd args` run on the CPU list `cpus` (taskset syntax, e.g. '0'), or unchanged without one.
 * taskset execs the command, so the child's pid is the command's own pid (its /proc stat is the
 * command's CPU time).
 */
function pinned(cmd, args, cpus) {
  return cpus === undefined || cpus === null ? [cmd, args] : ['taskset', ['-c', String(cpus), cmd, ...args]];
}

/**
 * Runs a bounded command to completion (tracked, so a SIGINT or the time limit stops it too) and
 * resolves with its exit code, stdout and the tail of its stderr. Killed after `timeoutMs`.
 */
export function runTracked(name, cmd, args, { cpus, timeoutMs, env = {} } = {}) {
  const [c, a] = pinned(cmd, args, cpus);
  const child = spawn(c, a, { env: childEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  track(child, name);
  // Its exit is the point: never report it as a crashed target.
  child.expectedExit = true;
  let stdout = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => (stdout += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not finish within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr: child.stderrTail(), pid: child.pid });
    });
  });
}

/** Starts a Node script with an IPC channel (the load generator). */
export function forkProcess(name, script, args = [], { env = {} } = {}) {
  const child = fork(script, args, { env: childEnv(env), stdio: ['ignore', 'inherit', 'pipe', 'ipc'] });
  return track(child, name);
}

// Variables that would silently change a gateway's config (src/config/load.ts ENV_OVERRIDES) or a
// child's runtime are removed: each target gets exactly what the bench sets.
const SCRUBBED = [
  'PORT',
  'ADMIN_PORT',
  'ADMIN_TOKEN',
  'REDIS_URL',
  'UPSTREAM_URL',
  'UPSTREAM_TIMEOUT_MS',
  'BODY_LIMIT_BYTES',
  'LOG_LEVEL',
  'GATEWAY_CONFIG',
  'NODE_OPTIONS',
];

export function childEnv(extra) {
  const env = { ...process.env };
  for (const k of SCRUBBED) delete env[k];
  // Same mode for every target (Express reads it); a production deployment would set it.
  env.NODE_ENV = 'production';
  return { ...env, ...extra };
}

/** Runs a short command to completion (bounded), returning stdout; throws with stderr on failure. */
export function runOnce(cmd, args, { env = {}, timeoutMs = 20_000 } = {}) {
  try {
    return execFileSync(cmd, args, {
      env: childEnv(env),
      timeout: timeoutMs,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    throw new Error(`${cmd} ${args.join(' ')} failed: ${err.stderr || err.message}`);
  }
}

/** Stops one child: `signal` first, SIGKILL after `graceMs`. Resolves once it has exited. */
export async function stopProcess(child, signal = 'SIGTERM', graceMs = 3000) {
  if (!child || child.exitInfo || child.exitCode !== null || child.signalCode !== null) return;
  child.expectedExit = true;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    process.kill(child.pid, signal);
  } catch {
    return;
  }
  const timer = setTimeout(() => {
    try {
      process.kill(child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }, graceMs);
  await exited;
  clearTimeout(timer);
}

/** Stops every tracked child (newest first: load generator and targets before the upstream/Redis). */
export async function stopAll() {
  shuttingDown = true;
  await Promise.all([...children].reverse().map((c) => stopProcess(c, 'SIGTERM', 2000)));
}

/** Last resort, synchronous (usable in an 'exit' handler): SIGKILL whatever is still running. */
export function killAllSync() {
  shuttingDown = true;
  for (const c of children) {
    try {
      process.kill(c.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/**
 * Installs the cleanup hooks: SIGINT/SIGTERM stop everything and exit 130/143; an overall time limit
 * does the same with an error; process exit kills any survivor.
 */
export function installCleanup({ timeLimitMs, label = 'bench' }) {
  process.once('exit', killAllSync);
  const bail = (why, code) => {
    process.stderr.write(`\n${label}: ${why}; stopping all child processes\n`);
    stopAll().finally(() => process.exit(code));
  };
  process.once('SIGINT', () => bail('interrupted', 130));
  process.once('SIGTERM', () => bail('terminated', 143));
  if (timeLimitMs) {
    setTimeout(
      () => bail(`time limit of ${Math.round(timeLimitMs / 1000)} s reached`, 1),
      timeLimitMs,
    ).unref();
  }
}

const usedPorts = new Set();

/** A free TCP port on 127.0.0.1 (never the same one twice within this run). */
export async function freePort() {
  for (;;) {
    const port = await new Promise((resolve, reject) => {
      const s = createServer();
      s.unref();
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => {
        const { port: p } = s.address();
        s.close(() => resolve(p));
      });
    });
    if (!usedPorts.has(port)) {
      usedPorts.add(port);
      return port;
    }
  }
}

/** Resolves once 127.0.0.1:port accepts a connection; rejects if `child` dies or after `timeoutMs`. */
export async function waitForPort(port, child, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child?.exitInfo) {
      throw new Error(`${child.benchName} exited before listening on ${port}: ${child.stderrTail()}`);
    }
    const ok = await new Promise((resolve) => {
      const sock = connect(port, '127.0.0.1');
      sock.once('connect', () => {
        sock.destroy();
        resolve(true);
      });
      sock.once('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`${child?.benchName ?? 'process'} did not listen on ${port} within ${timeoutMs} ms`);
}

let clockTicks = null;
function ticksPerSecond() {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/**
 * CPU time (user + system) so far, in µs: of the whole process (all threads: GC helpers, libuv
 * pool) from /proc/<pid>/stat, or of one thread with `tid` (the main thread's tid is the pid).
 */
export function cpuMicros(pid, tid) {
  const stat = readFileSync(tid ? `/proc/${pid}/task/${tid}/stat` : `/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces or parentheses: split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1e6) / ticksPerSecond();
}

/**
 * Busy CPU time so far, in µs, from /proc/stat: of the whole machine (all cores), or of one core
 * with `core` (the `cpuN` line).
 */
export function machineBusyMicros(core) {
  const lines = readFileSync('/proc/stat', 'utf8').split('\n');
  const line = core === undefined ? lines[0] : lines.find((l) => l.startsWith(`cpu${core} `));
  if (!line) throw new Error(`/proc/stat has no line for cpu${core}`);
  // cpu user nice system idle iowait irq softirq steal ...: everything but idle and iowait is busy.
  const [user, nice, system, , , irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1e6) / ticksPerSecond();
}

/** Pids of every process the bench is running now (to tell our CPU use from anybody else's). */
export function trackedPids() {
  return [...children].filter((c) => !c.exitInfo).map((c) => c.pid);
}

/**
 * Waits (at most `maxWaitMs`) until processes that are not ours use less than `thresholdCores` of
 * the machine. The bench shares two cores with whatever else runs; a run started in the middle of
 * someone's test suite measures that suite as much as the target.
 */
export async function waitForQuiet({ maxWaitMs, thresholdCores = 0.25, sampleMs = 500 }) {
  const start = Date.now();
  for (;;) {
    const ours = trackedPids();
    const ours0 = ours.reduce((a, pid) => a + cpuMicros(pid), 0);
    const busy0 = machineBusyMicros();
    await sleep(sampleMs);
    const foreign = machineBusyMicros() - busy0 - (ours.reduce((a, pid) => a + cpuMicros(pid), 0) - ours0);
    const cores = Math.max(0, foreign / (sampleMs * 1000));
    const waitedMs = Date.now() - start;
    if (cores < thresholdCores) return { waitedMs, cores, quiet: true };
    if (waitedMs + sampleMs > maxWaitMs) return { waitedMs, cores, quiet: false };
  }
}

/** Resident memory of `pid` in bytes (VmRSS of /proc/<pid>/status); 0 once it is gone. */
export function rssBytes(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
