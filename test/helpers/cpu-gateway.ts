/**
 * A real gateway in a child process that reports its own CPU time over IPC, so a test can measure
 * what a request costs the gateway alone (the client's work stays in the parent). Started by
 * `startCpuGateway`; the config comes as JSON in argv[2].
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ConfigInput } from '../../src/config/schema.js';
import { startTestGateway } from './gateway.js';

type FromChild = { port: number } | { cpu: number };

export interface CpuGateway {
  port: number;
  /** The child's CPU time (user + system) so far, in microseconds. */
  cpuMicros(): Promise<number>;
  close(): Promise<void>;
}

/** Forks this file with the config and waits until its gateway listens. */
export async function startCpuGateway(input: ConfigInput): Promise<CpuGateway> {
  const child = fork(fileURLToPath(import.meta.url), [JSON.stringify(input)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: FromChild) => ('port' in m ? resolve(m.port) : reject(new Error('no port'))));
    child.once('exit', (code) => reject(new Error(`gateway child exited with ${code}`)));
  });
  return {
    port,
    cpuMicros: () => ask(child),
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill();
      }),
  };
}

function ask(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m: FromChild) => resolve('cpu' in m ? m.cpu : NaN));
    child.send('cpu');
  });
}

async function main(): Promise<void> {
  const t = await startTestGateway(JSON.parse(process.argv[2] ?? '{}') as ConfigInput);
  process.on('message', () => {
    const u = process.cpuUsage();
    process.send!({ cpu: u.user + u.system });
  });
  // The parent ends this process with a signal: nothing here needs a graceful close.
  void t;
  process.send!({ port: t.port });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) void main();
