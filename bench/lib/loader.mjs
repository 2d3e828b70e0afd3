// Parent side of the load generator: one long-lived process (autocannon), driven over IPC so that
// the target's CPU can be read right before and right after each measured run.
import { fileURLToPath } from 'node:url';
import { forkProcess, stopProcess } from './procs.mjs';

const WORKER = fileURLToPath(new URL('./load-worker.mjs', import.meta.url));

export class Loader {
  static async start() {
    const child = forkProcess('load generator', WORKER);
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('load generator did not start')), 15_000);
      child.once('message', () => {
        clearTimeout(timer);
        resolve();
      });
      child.once('exit', () => reject(new Error(`load generator died: ${child.stderrTail()}`)));
    });
    return new Loader(child);
  }

  constructor(child) {
    this.child = child;
    this.seq = 0;
  }

  get pid() {
    return this.child.pid;
  }

  /** One autocannon run; bounded by its duration plus a margin. */
  run(opts) {
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`load run ${id} did not finish in time`)),
        (opts.duration + 20) * 1000,
      );
      const onMessage = (msg) => {
        if (msg?.type !== 'result' || msg.id !== id) return;
        clearTimeout(timer);
        this.child.off('message', onMessage);
        if (msg.error) reject(new Error(`load generator: ${msg.error}`));
        else resolve(msg.result);
      };
      this.child.on('message', onMessage);
      this.child.send({ type: 'run', id, opts });
    });
  }

  stop() {
    return stopProcess(this.child);
  }
}
