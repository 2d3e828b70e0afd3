import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { runCli as runCliInProcess } from '../../src/cli/main.js';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key.js';
import type { CliIo } from '../../src/cli/io.js';
import { eventually, send } from './http.js';

/** The shipped bin, as users run it (`npm run build` first). */
export const CLI = join(import.meta.dirname, '../../dist/cli.js');

/** One CLI run: exit code and output. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a spawned CLI: PATH, HOME and USER from this process, then `env`. */
function childEnv(env: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '/tmp',
    USER: process.env.USER ?? 'tester',
    ...env,
  };
}

function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` first (npm test does)`);
}

/**
 * Runs the built bin to its end with only PATH, HOME and USER plus `env`, feeding `stdin`; killed
 * after `timeoutMs`.
 */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  stdin = '',
  timeoutMs = 20_000,
): Promise<CliRun> {
  assertBuilt();
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CLI, ...args], {
      env: childEnv(env),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    p.stdin.end(stdin);
  });
}

/** A long-running bin (`serve`, `demo`): the process, its output so far (stdout and stderr), its exit. */
export interface SpawnedCli {
  proc: ChildProcess;
  /** stdout and stderr so far, in the order they came. */
  output(): string;
  stdout(): string;
  stderr(): string;
  /** The exit code, and the ms from spawn to exit. */
  exit: Promise<{ code: number | null; ms: number }>;
  /** Resolves once the process has exited and its output is read to the end. */
  closed: Promise<void>;
}

/**
 * Starts the built bin and leaves it running; killed (with its process group when `detached`)
 * when this test process exits, so a failed test leaves nothing behind. `env` is the whole
 * environment but PATH, HOME and USER.
 */
export function spawnCli(
  args: string[],
  env: Record<string, string> = {},
  opts: { detached?: boolean } = {},
): SpawnedCli {
  assertBuilt();
  const t0 = Date.now();
  const proc = spawn(process.execPath, [CLI, ...args], {
    env: childEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: !!opts.detached,
  });
  let out = '';
  let stdout = '';
  let stderr = '';
  proc.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    stdout += d.toString();
  });
  proc.stderr!.on('data', (d: Buffer) => {
    out += d.toString();
    stderr += d.toString();
  });
  const exit = new Promise<{ code: number | null; ms: number }>((r) =>
    proc.once('exit', (code) => r({ code, ms: Date.now() - t0 })),
  );
  const closed = new Promise<void>((r) => proc.once('close', () => r()));
  process.once('exit', () => {
    try {
      if (opts.detached && proc.pid) process.kill(-proc.pid, 'SIGKILL');
      else proc.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  });
  return { proc, output: () => out, stdout: () => stdout, stderr: () => stderr, exit, closed };
}

/**
 * `serve` as users run it (`spawnCli(['serve', ...args], env)`), resolved once `/healthz` on `port`
 * answers 200; rejects with its output if it exits first or is not up within 15 s (and kills it).
 */
export async function startServe(
  args: string[],
  env: Record<string, string>,
  port: number,
): Promise<SpawnedCli> {
  const s = spawnCli(['serve', ...args], env);
  const up = async () => {
    if (s.proc.exitCode !== null) throw new Error(`serve exited ${s.proc.exitCode}:\n${s.output()}`);
    return (await send(port, '/healthz').catch(() => ({ status: 0 }))).status === 200;
  };
  await eventually(up, 15_000, 100).catch((err: unknown) => {
    s.proc.kill('SIGKILL');
    throw err;
  });
  return s;
}

/** Sends `signal` (default SIGTERM) unless the process has exited; resolves with its exit code. */
export function stopCli(proc: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode);
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  proc.kill(signal);
  return exited;
}

/**
 * A `CliIo` for calling the modules of src/cli/ directly: `env` as the environment, empty stdin,
 * output collected in `out` and `err`, exit codes in `exits`, signals on `signals`.
 */
export function testIo(env: Record<string, string> = {}): CliIo & {
  out: string[];
  err: string[];
  exits: number[];
  signals: EventEmitter;
} {
  const out: string[] = [];
  const err: string[] = [];
  const exits: number[] = [];
  return {
    out,
    err,
    exits,
    stdout: (t) => void out.push(t),
    stderr: (t) => void err.push(t),
    env,
    stdin: Readable.from([]),
    signals: new EventEmitter(),
    exit: (c) => void exits.push(c),
  };
}

/** An in-process run: what `runCli` resolved with, the output, and what a later `io.exit` got. */
export interface InProcessRun extends CliRun {
  code: number;
  /** Codes passed to `io.exit` so far (long-running commands end through it). */
  exits: number[];
  /** Emit 'SIGTERM' / 'SIGINT' here to signal a long-running command. */
  signals: EventEmitter;
  /** Everything written to stdout and stderr so far, including after `runCli` resolved. */
  output(): { stdout: string; stderr: string };
}

/**
 * Runs a command line in this process through `runCli(argv, io)` (src/cli/main.ts), with `env` as
 * the whole environment, `opts.stdin` as standard input (a string, or chunks given when read) and
 * `opts.signals` (default: a new emitter) as where SIGTERM/SIGINT arrive; nothing reaches the real
 * process.
 */
export async function runCliHere(
  args: string[],
  env: Record<string, string> = {},
  opts: {
    stdin?: string | AsyncIterable<string>;
    signals?: EventEmitter;
    /** A person at a terminal (`CliIo.interactive`): `apply --prune` asks on stderr, reads stdin. */
    interactive?: boolean;
  } = {},
): Promise<InProcessRun> {
  let stdout = '';
  let stderr = '';
  const exits: number[] = [];
  const signals = opts.signals ?? new EventEmitter();
  const io: CliIo = {
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    env,
    stdin:
      typeof opts.stdin === 'string'
        ? Readable.from([Buffer.from(opts.stdin)])
        : (opts.stdin ?? Readable.from([])),
    interactive: opts.interactive ?? false,
    signals,
    exit: (c) => void exits.push(c),
  };
  const code = await runCliInProcess(args, io);
  return { code, stdout, stderr, exits, signals, output: () => ({ stdout, stderr }) };
}

/** A file-store setup for CLI runs: its folder, `gateway.yaml` and the one key's plaintext. */
export interface FileStoreSetup {
  dir: string;
  /** Path of gateway.yaml (for `--config`). */
  config: string;
  key: string;
}

/**
 * Writes a key file holding company `acme` (tier free, key `k1`, label "ci") and a gateway.yaml over
 * it in a new temporary folder; `configLines` are appended to gateway.yaml.
 */
export function writeFileStoreSetup(configLines = ''): FileStoreSetup {
  const dir = mkdtempSync(join(tmpdir(), 'ng-cli-'));
  const key = generateApiKey('live');
  writeFileSync(
    join(dir, 'keys.yaml'),
    `companies:\n  - id: acme\n    name: Acme\n    tier: free\n    keys:\n` +
      `      - { id: k1, hash: ${hashApiKey(key)}, prefix: ${key.slice(0, 14)}, label: ci }\n`,
  );
  writeFileSync(
    join(dir, 'gateway.yaml'),
    `store: { type: file, file: { path: keys.yaml } }\n${configLines}`,
  );
  return { dir, config: join(dir, 'gateway.yaml'), key };
}
