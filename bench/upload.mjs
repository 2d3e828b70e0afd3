// Uploads through one gateway worker: 16 concurrent 16 MiB bodies of each kind, the worker's RSS
// growth and the wall time of the batch, against the same bytes sent as application/octet-stream
// (which no check reads). Run by `npm run bench` (BENCH_UPLOAD=0 skips it), or alone after
// `npm run build`:
//
//   node bench/upload.mjs [--json-out FILE]
//
// Cases: multipart/form-data on a route that lists `methods` (the method-override body step reads
// it as it streams), JSON on a route that allows every method (the step does not apply: it
// streams), and JSON on the restricted route (read as it streams), each against octet-stream on
// the same route. Goals: RSS growth ≤ 64 MiB and time ≤ 1.5× octet-stream. The gateway runs on
// core 0; the upstream (it discards bodies) and the client on core 1. Environment:
// BENCH_UPLOAD_CONCURRENCY (16), BENCH_UPLOAD_MIB (16), BENCH_UPLOAD_ROUNDS (3, interleaved; the
// median is reported).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { installCleanup, runTracked, stopAll } from './lib/procs.mjs';
import { checkBuild, startGatewayFile, startUpstream } from './lib/targets.mjs';

const env = process.env;
const CONCURRENCY = Number(env.BENCH_UPLOAD_CONCURRENCY ?? 16);
const MIB = Number(env.BENCH_UPLOAD_MIB ?? 16);
const ROUNDS = Number(env.BENCH_UPLOAD_ROUNDS ?? 3);
const GOALS = { rssMiB: 64, timeRatio: 1.5 };
const SUT_CORE = 0;
const LOAD_CORE = 1;
const BOUNDARY = 'bench-upload-boundary';
const CHUNK = 64 * 1024;

/** Each case: where it goes, what it sends, and the octet-stream case it is compared with. */
const CASES = [
  { name: 'octet-stream, restricted route', path: '/notify/v1/uploads', kind: 'octet' },
  { name: 'multipart, restricted route (read)', path: '/notify/v1/uploads', kind: 'multipart', vs: 0 },
  { name: 'octet-stream, open route', path: '/open/v1/uploads', kind: 'octet' },
  { name: 'JSON, open route (streams)', path: '/open/v1/uploads', kind: 'json', vs: 2 },
  { name: 'JSON, restricted route (read)', path: '/notify/v1/uploads', kind: 'json', vs: 0 },
];

const CONTENT_TYPE = {
  octet: 'application/octet-stream',
  multipart: `multipart/form-data; boundary=${BOUNDARY}`,
  json: 'application/json',
};

/** The client: CONCURRENCY uploads at once, each streamed in 64 KiB writes; prints the wall time. */
async function client() {
  const { PORT, UPLOAD_PATH, KIND, KEY } = env;
  const size = MIB * 2 ** 20;
  // Printable filler for JSON (a string value), random bytes otherwise; reused for every write.
  const filler =
    KIND === 'json' ? Buffer.from(randomBytes(CHUNK).toString('base64').slice(0, CHUNK)) : randomBytes(CHUNK);
  const [head, tail] =
    KIND === 'multipart'
      ? [
          `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="x.bin"\r\n` +
            'Content-Type: application/octet-stream\r\n\r\n',
          `\r\n--${BOUNDARY}--\r\n`,
        ]
      : KIND === 'json'
        ? ['{"name":"x.bin","data":"', '"}']
        : ['', ''];
  const upload = () =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: Number(PORT),
          method: 'POST',
          path: UPLOAD_PATH,
          agent: false,
          headers: { 'x-api-key': KEY, 'content-type': CONTENT_TYPE[KIND], 'content-length': size },
        },
        (res) => {
          res.resume();
          res.once('end', () => resolve(res.statusCode));
        },
      );
      req.once('error', reject);
      let left = size - head.length - tail.length;
      req.write(head);
      const pump = () => {
        while (left > 0) {
          const n = Math.min(CHUNK, left);
          left -= n;
          if (!req.write(n === CHUNK ? filler : filler.subarray(0, n))) return req.once('drain', pump);
        }
        req.end(tail);
      };
      pump();
    });
  const t0 = process.hrtime.bigint();
  const statuses = await Promise.all(Array.from({ length: CONCURRENCY }, upload));
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  process.stdout.write(JSON.stringify({ ms, statuses }) + '\n');
}

/** RSS of `pid` in bytes (VmRSS). */
function rssOf(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/**
 * Starts an upstream and a gateway (file store, one worker), runs every case ROUNDS times,
 * interleaved, and returns the medians. The caller stops the processes (`stopAll`).
 */
export async function runUpload({ log = () => {} } = {}) {
  const tmpDir = mkdtempSync(join(tmpdir(), 'notify-gateway-upload-'));
  try {
    const upstream = await startUpstream({ cpus: LOAD_CORE });
    const gw = await startGatewayFile(upstream, tmpDir, {
      name: 'gateway-upload',
      cpus: SUT_CORE,
      routes: [
        { prefix: '/notify/v1', target: upstream.url, methods: ['POST'] },
        { prefix: '/open/v1', target: upstream.url },
      ],
    });
    const pid = gw.child.pid;
    const script = fileURLToPath(import.meta.url);
    const runCase = async (c) => {
      await sleep(300); // let the previous batch's buffers go
      const before = rssOf(pid);
      let peak = before;
      const poll = setInterval(() => (peak = Math.max(peak, rssOf(pid))), 10);
      try {
        const r = await runTracked('upload-client', process.execPath, [script, '--client'], {
          cpus: LOAD_CORE,
          timeoutMs: 120_000,
          env: { PORT: String(gw.port), UPLOAD_PATH: c.path, KIND: c.kind, KEY: gw.key },
        });
        if (r.code !== 0) throw new Error(`upload client failed: ${r.stderr}`);
        const { ms, statuses } = JSON.parse(r.stdout);
        if (statuses.some((s) => s !== 200)) throw new Error(`${c.name}: statuses ${statuses.join(',')}`);
        return { ms, growthMiB: (peak - before) / 2 ** 20 };
      } finally {
        clearInterval(poll);
      }
    };
    // One batch of each kind first (warm-up, discarded): JIT, sockets, lazily loaded modules.
    for (const c of CASES) await runCase(c);
    const runs = CASES.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < CASES.length; i++) {
        const k = (i + round) % CASES.length;
        const r = await runCase(CASES[k]);
        runs[k].push(r);
        log(
          `upload round ${round + 1}/${ROUNDS} ${CASES[k].name.padEnd(36)} ${r.ms.toFixed(0).padStart(6)} ms  ` +
            `RSS +${r.growthMiB.toFixed(1)} MiB`,
        );
      }
    }
    const results = CASES.map((c, i) => ({
      ...c,
      ms: median(runs[i].map((r) => r.ms)),
      growthMiB: Math.max(...runs[i].map((r) => r.growthMiB)),
    }));
    for (const r of results) if (r.vs !== undefined) r.timeRatio = r.ms / results[r.vs].ms;
    return { concurrency: CONCURRENCY, mib: MIB, rounds: ROUNDS, goals: GOALS, results, loadavg: loadavg() };
  } finally {
    rmSync(tmpDir, { recursive: true, force: true });
  }
}

/** The figures as text: one line per case, each goal MET or not. */
export function uploadReport(u) {
  let out =
    `\nuploads (${u.concurrency} concurrent × ${u.mib} MiB through one gateway worker; median of ` +
    `${u.rounds} interleaved rounds, RSS growth the largest seen; load average ` +
    `${u.loadavg.map((x) => x.toFixed(2)).join(' ')} after):\n`;
  for (const r of u.results) {
    const rss = `RSS +${r.growthMiB.toFixed(1)} MiB (goal ≤ ${u.goals.rssMiB}: ${r.growthMiB <= u.goals.rssMiB ? 'MET' : 'not met'})`;
    const time =
      r.timeRatio === undefined
        ? ''
        : `; ${r.timeRatio.toFixed(2)}× ${u.results[r.vs].name} (goal ≤ ${u.goals.timeRatio}: ` +
          `${r.timeRatio <= u.goals.timeRatio ? 'MET' : 'not met'})`;
    out += `  ${r.name.padEnd(36)} ${r.ms.toFixed(0).padStart(6)} ms  ${rss}${time}\n`;
  }
  return out;
}

if (process.argv[2] === '--client') {
  await client();
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  checkBuild();
  installCleanup({ timeLimitMs: 9 * 60_000, label: 'upload' });
  const jsonOut = process.argv.includes('--json-out')
    ? process.argv[process.argv.indexOf('--json-out') + 1]
    : null;
  const log = (msg) => process.stderr.write(`${msg}\n`);
  try {
    const u = await runUpload({ log });
    process.stdout.write(uploadReport(u));
    if (jsonOut) writeFileSync(jsonOut, JSON.stringify(u, null, 2) + '\n');
  } finally {
    await stopAll();
  }
}
