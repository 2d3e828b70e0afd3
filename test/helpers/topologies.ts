import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort, waitForPing } from './redis.js';

/**
 * Real Redis topologies for the scale-out tests, built from the installed `redis-server` and
 * `redis-cli` on free 127.0.0.1 ports: a Cluster of 3 masters + 3 replicas, and a master + 1 replica
 * watched by 3 Sentinels. No persistence; every file lives in a temp dir under os.tmpdir(); every
 * process this module starts is SIGKILLed by `stop()`, and also when the test process exits (a
 * failing `before` that never reaches `after` leaves nothing running). Every wait is bounded and
 * fails with a message saying what was awaited and what was seen last.
 */

const live = new Set<ChildProcess>();
const dirs = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Synchronous kill of what is still running: only our own children, by their pid.
  process.once('exit', () => {
    for (const p of live) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
}

/** One redis-server (or sentinel) process started by this module. */
export interface RedisProcess {
  port: number;
  /** Started and not killed (a paused process is running). */
  readonly running: boolean;
  readonly paused: boolean;
  /** SIGKILL: the process is gone at once, connections reset. */
  kill(): Promise<void>;
  /** SIGSTOP: the process hangs with its connections open (a hung or partitioned node). */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
}

function tempDir(prefix: string): { dir: string; remove: () => void } {
  installExitHook();
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(dir);
  return {
    dir,
    remove: () => {
      rmSync(dir, { recursive: true, force: true });
      dirs.delete(dir);
    },
  };
}

function spawnRedis(args: string[], what: string): { proc: ChildProcess; stderr: () => string } {
  installExitHook();
  const proc = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(proc);
  let out = '';
  const keep = (c: Buffer) => {
    out = (out + c.toString('utf8')).slice(-4000);
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  proc.once('exit', () => live.delete(proc));
  proc.once('error', (err: NodeJS.ErrnoException) => {
    live.delete(proc);
    out += `\nspawn failed for ${what}: ${err.code === 'ENOENT' ? 'redis-server is not installed (apt-get install -y redis-server)' : err.message}`;
  });
  return { proc, stderr: () => out };
}

function handleOf(port: number, proc: ChildProcess): RedisProcess {
  const exited = () =>
    new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
    });
  let paused = false;
  const alive = () => proc.exitCode === null && proc.signalCode === null;
  return {
    port,
    get running() {
      return alive();
    },
    get paused() {
      return paused && alive();
    },
    async kill() {
      if (alive()) proc.kill('SIGKILL');
      await exited();
    },
    pause() {
      if (alive()) proc.kill('SIGSTOP');
      paused = true;
    },
    resume() {
      if (alive()) proc.kill('SIGCONT');
      paused = false;
    },
  };
}

async function startServer(args: string[], port: number, what: string): Promise<RedisProcess> {
  const { proc, stderr } = spawnRedis(args, what);
  try {
    await waitForPing(port, 5000);
  } catch (err) {
    proc.kill('SIGKILL');
    throw new Error(`${what} on port ${port} did not start: ${(err as Error).message}\n${stderr()}`);
  }
  return handleOf(port, proc);
}

/** Runs one command on 127.0.0.1:port with short timeouts; rejects on any error. */
export async function redisCmd(port: number, ...args: (string | number)[]): Promise<unknown> {
  const c = new Redis({
    host: '127.0.0.1',
    port,
    lazyConnect: true,
    retryStrategy: null,
    enableOfflineQueue: true,
    enableReadyCheck: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    commandTimeout: 2000,
  });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return await c.call(String(args[0]), ...args.slice(1).map(String));
  } finally {
    c.disconnect();
  }
}

/** `INFO`-style text (`a:b` lines) as an object; undefined when the command failed. */
async function infoOf(port: number, ...args: string[]): Promise<Record<string, string> | undefined> {
  try {
    const text = String(await redisCmd(port, ...args));
    const out: Record<string, string> = {};
    for (const line of text.split(/\r?\n/)) {
      const i = line.indexOf(':');
      if (i > 0) out[line.slice(0, i)] = line.slice(i + 1).trim();
    }
    return out;
  } catch {
    return undefined;
  }
}

/** Polls `check` (which returns null when satisfied, else a description of what it saw) for `ms`. */
async function waitUntil(what: string, ms: number, check: () => Promise<string | null>): Promise<number> {
  const start = Date.now();
  let seen = 'nothing checked yet';
  while (Date.now() - start < ms) {
    const r = await check().catch((err: unknown) => `check threw: ${(err as Error).message}`);
    if (r === null) return Date.now() - start;
    seen = r;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}; last seen: ${seen}`);
}

function redisCli(args: string[], ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('redis-cli', args, { timeout: ms }, (err, stdout, stderr) => {
      if (err) reject(new Error(`redis-cli ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

const NO_PERSISTENCE = ['--save', '', '--appendonly', 'no'];

// ---------------------------------------------------------------------------------------------
// Cluster

export interface ClusterNodeInfo {
  id: string;
  port: number;
  role: 'master' | 'replica';
  /** For a replica: the id of its master. */
  masterId: string | null;
  /** Slot ranges served (masters only), as written by CLUSTER NODES. */
  slots: string[];
  failed: boolean;
}

export interface TestCluster {
  /** Every node started (killed nodes stay listed, `running` false). */
  nodes: RedisProcess[];
  /** `[{host, port}]` of every node: the `store.redis.cluster` seed list. */
  seeds: { host: string; port: number }[];
  /** The topology as a running node sees it now. */
  topology(): Promise<ClusterNodeInfo[]>;
  /** Waits until every running node says `cluster_state:ok` and agrees on 3 masters holding all slots. */
  waitHealthy(ms?: number): Promise<number>;
  /** Graceful `CLUSTER FAILOVER` on a replica of the master at `masterPort`; resolves when promoted. Returns the new master's port. */
  failover(masterPort: number, ms?: number): Promise<number>;
  /** SIGKILLs the master at `masterPort`; resolves when one of its replicas serves its slots. Returns that replica's port. */
  killMaster(masterPort: number, ms?: number): Promise<number>;
  /** SIGSTOPs the master at `masterPort`; resolves when one of its replicas serves its slots. Returns that replica's port. */
  pauseMaster(masterPort: number, ms?: number): Promise<number>;
  /** SIGSTOPs any node (no waiting). */
  pause(port: number): void;
  /** SIGCONTs a paused node and waits until the cluster is healthy again (it rejoins, as a replica if it was replaced). */
  resume(port: number, ms?: number): Promise<number>;
  /** Port of the master serving `key` (CLUSTER KEYSLOT + topology). */
  masterOfKey(key: string): Promise<number>;
  /** How many client connections whose name contains `namePart` each answering node has (CLIENT LIST). */
  clientsByNode(namePart: string): Promise<Map<number, number>>;
  stop(): Promise<void>;
}

/**
 * Starts 6 `redis-server --cluster-enabled yes` nodes and joins them with
 * `redis-cli --cluster create ... --cluster-replicas 1`, then waits until every node reports
 * `cluster_state:ok` and every replica's link to its master is up. Bus ports are chosen free too
 * (`--cluster-port`), since port+10000 may be out of range or taken.
 */
export async function startCluster(opts: { nodeTimeoutMs?: number } = {}): Promise<TestCluster> {
  const { dir, remove } = tempDir('ng-cluster-');
  const nodes: RedisProcess[] = [];
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.kill()));
    remove();
  };
  try {
    const ports: number[] = [];
    const used = new Set<number>();
    while (ports.length < 12) {
      const p = await freePort();
      if (!used.has(p)) {
        used.add(p);
        ports.push(p);
      }
    }
    const started = await Promise.all(
      [0, 1, 2, 3, 4, 5].map((i) => {
        const port = ports[i]!;
        const bus = ports[i + 6]!;
        return startServer(
          [
            '--port',
            String(port),
            '--bind',
            '127.0.0.1',
            ...NO_PERSISTENCE,
            '--dir',
            dir,
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            join(dir, `nodes-${port}.conf`),
            '--cluster-node-timeout',
            String(opts.nodeTimeoutMs ?? 1000),
            '--cluster-port',
            String(bus),
          ],
          port,
          `cluster node ${i + 1}/6`,
        );
      }),
    );
    nodes.push(...started);
    await redisCli(
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        '1',
        '--cluster-yes',
      ],
      30_000,
    );
    const cluster = makeCluster(nodes, stop);
    await cluster.waitHealthy(30_000);
    return cluster;
  } catch (err) {
    await stop();
    throw err;
  }
}

function parseClusterNodes(text: string): ClusterNodeInfo[] {
  const out: ClusterNodeInfo[] = [];
  for (const line of text.split('\n')) {
    const parts = line.trim().split(' ');
    if (parts.length < 8) continue;
    const [id, addr, flags, master, , , , , ...slots] = parts;
    const port = Number(addr!.split('@')[0]!.split(':')[1]);
    const f = flags!.split(',');
    out.push({
      id: id!,
      port,
      role: f.includes('master') ? 'master' : 'replica',
      masterId: master === '-' ? null : master!,
      slots,
      failed: f.includes('fail') || f.includes('fail?'),
    });
  }
  return out;
}

function makeCluster(nodes: RedisProcess[], stop: () => Promise<void>): TestCluster {
  /** Nodes that can answer: started, not killed, not paused. */
  const running = () => nodes.filter((n) => n.running && !n.paused);
  const topologyFrom = async (port: number) =>
    parseClusterNodes(String(await redisCmd(port, 'CLUSTER', 'NODES')));
  const topology = async () => {
    let last: unknown;
    for (const n of running()) {
      try {
        return await topologyFrom(n.port);
      } catch (err) {
        last = err;
      }
    }
    throw new Error(`no running cluster node answered CLUSTER NODES: ${String(last)}`);
  };
  const healthy = async (): Promise<string | null> => {
    const alive = running();
    for (const n of alive) {
      const info = await infoOf(n.port, 'CLUSTER', 'INFO');
      if (!info) return `node ${n.port} did not answer CLUSTER INFO`;
      if (info.cluster_state !== 'ok') return `node ${n.port} cluster_state:${info.cluster_state}`;
      if (info.cluster_slots_ok !== '16384')
        return `node ${n.port} cluster_slots_ok:${info.cluster_slots_ok}`;
      const topo = (await topologyFrom(n.port)).filter((t) => !t.failed);
      const masters = topo.filter((t) => t.role === 'master' && t.slots.length > 0);
      if (masters.length !== 3) return `node ${n.port} sees ${masters.length} serving masters`;
      // A demoted master shows as a master without slots until it has turned into a replica.
      const idle = topo.filter((t) => t.role === 'master' && t.slots.length === 0);
      if (idle.length)
        return `node ${n.port} sees masters without slots: ${idle.map((t) => t.port).join(',')}`;
      const dead = new Set(nodes.filter((x) => !x.running || x.paused).map((x) => x.port));
      const seen = topo.filter((t) => !dead.has(t.port)).length;
      if (seen !== alive.length) return `node ${n.port} sees ${seen} healthy nodes of ${alive.length}`;
      const repl = await infoOf(n.port, 'INFO', 'replication');
      if (repl?.role === 'slave' && repl.master_link_status !== 'up')
        return `replica ${n.port} master_link_status:${repl.master_link_status}`;
    }
    return null;
  };
  const waitHealthy = (ms = 20_000) =>
    waitUntil('a healthy cluster (cluster_state:ok on all nodes)', ms, healthy);
  const replicaOf = async (masterPort: number) => {
    const topo = await topology();
    const master = topo.find((t) => t.port === masterPort && t.role === 'master');
    if (!master) throw new Error(`port ${masterPort} is not a master: ${JSON.stringify(topo)}`);
    const replica = topo.find((t) => t.masterId === master.id && !t.failed);
    if (!replica) throw new Error(`master ${masterPort} has no healthy replica: ${JSON.stringify(topo)}`);
    return replica;
  };
  const promoted = async (port: number): Promise<string | null> => {
    const info = await infoOf(port, 'INFO', 'replication');
    if (info?.role !== 'master') return `node ${port} role:${info?.role ?? 'no answer'}`;
    return healthy();
  };
  return {
    nodes,
    seeds: nodes.map((n) => ({ host: '127.0.0.1', port: n.port })),
    topology,
    waitHealthy,
    async failover(masterPort, ms = 20_000) {
      const replica = await replicaOf(masterPort);
      await redisCmd(replica.port, 'CLUSTER', 'FAILOVER');
      await waitUntil(`replica ${replica.port} to take over from ${masterPort} (CLUSTER FAILOVER)`, ms, () =>
        promoted(replica.port),
      );
      return replica.port;
    },
    async killMaster(masterPort, ms = 20_000) {
      const replica = await replicaOf(masterPort);
      const node = nodes.find((n) => n.port === masterPort);
      if (!node) throw new Error(`port ${masterPort} is not a node of this cluster`);
      await node.kill();
      await waitUntil(`replica ${replica.port} to take over from killed master ${masterPort}`, ms, () =>
        promoted(replica.port),
      );
      return replica.port;
    },
    async pauseMaster(masterPort, ms = 20_000) {
      const replica = await replicaOf(masterPort);
      const node = nodes.find((n) => n.port === masterPort);
      if (!node) throw new Error(`port ${masterPort} is not a node of this cluster`);
      node.pause();
      await waitUntil(`replica ${replica.port} to take over from paused master ${masterPort}`, ms, () =>
        promoted(replica.port),
      );
      return replica.port;
    },
    pause(port) {
      const node = nodes.find((n) => n.port === port);
      if (!node) throw new Error(`port ${port} is not a node of this cluster`);
      node.pause();
    },
    async resume(port, ms = 20_000) {
      const node = nodes.find((n) => n.port === port);
      if (!node) throw new Error(`port ${port} is not a node of this cluster`);
      node.resume();
      return waitUntil(`the cluster to be healthy after resuming ${port}`, ms, healthy);
    },
    async clientsByNode(namePart) {
      const out = new Map<number, number>();
      for (const n of running()) {
        const list = String(await redisCmd(n.port, 'CLIENT', 'LIST'));
        out.set(n.port, list.split('\n').filter((l) => / name=\S*/.test(l) && l.includes(namePart)).length);
      }
      return out;
    },
    async masterOfKey(key) {
      const alive = running()[0];
      if (!alive) throw new Error('no running node');
      const slot = Number(await redisCmd(alive.port, 'CLUSTER', 'KEYSLOT', key));
      const topo = await topology();
      for (const m of topo.filter((t) => t.role === 'master' && !t.failed)) {
        for (const range of m.slots) {
          const [a, b] = range.split('-').map(Number);
          if (slot >= a! && slot <= (b ?? a!)) return m.port;
        }
      }
      throw new Error(`no master serves slot ${slot}`);
    },
    stop,
  };
}

// ---------------------------------------------------------------------------------------------
// Sentinel

export interface TestSentinel {
  /** The data nodes: index 0 started as master, 1 as its replica (roles change with failovers). */
  servers: RedisProcess[];
  sentinels: RedisProcess[];
  /** `[{host, port}]` of the 3 sentinels: the `store.redis.sentinels` list. */
  sentinelAddrs: { host: string; port: number }[];
  name: 'mymaster';
  /** Port of the master as the sentinels report it (a majority must agree). */
  master(): Promise<number>;
  /** `SENTINEL FAILOVER mymaster`; resolves when every sentinel names the new master and it says role:master. */
  failover(ms?: number): Promise<number>;
  /** SIGKILLs the current master; resolves when the sentinels have promoted the replica. */
  killMaster(ms?: number): Promise<number>;
  /** SIGSTOPs the current master (hung, connections open); resolves when the sentinels have promoted the replica. */
  pauseMaster(ms?: number): Promise<number>;
  /** SIGCONTs a paused server and waits until it has rejoined as a replica with a working link. */
  resume(port: number, ms?: number): Promise<number>;
  /** Waits until the sentinels agree on a master with a linked replica, and know each other. */
  waitHealthy(ms?: number): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts a master, one replica and 3 Sentinels (`down-after-milliseconds 1000`,
 * `failover-timeout 3000`, quorum 2), and waits until the sentinels know the replica and each
 * other, so a failover can run at once.
 */
export async function startSentinel(): Promise<TestSentinel> {
  const { dir, remove } = tempDir('ng-sentinel-');
  const servers: RedisProcess[] = [];
  const sentinels: RedisProcess[] = [];
  const stop = async () => {
    await Promise.all([...sentinels, ...servers].map((n) => n.kill()));
    remove();
  };
  try {
    const [mPort, rPort, ...sPorts] = await distinctFreePorts(5);
    const common = ['--bind', '127.0.0.1', ...NO_PERSISTENCE, '--dir', dir];
    servers.push(await startServer(['--port', String(mPort), ...common], mPort!, 'sentinel-mode master'));
    servers.push(
      await startServer(
        ['--port', String(rPort), ...common, '--replicaof', '127.0.0.1', String(mPort)],
        rPort!,
        'sentinel-mode replica',
      ),
    );
    await waitUntil(`replica ${rPort} to sync with master ${mPort}`, 15_000, async () => {
      const info = await infoOf(rPort!, 'INFO', 'replication');
      return info?.master_link_status === 'up' ? null : `master_link_status:${info?.master_link_status}`;
    });
    for (const [i, port] of sPorts.entries()) {
      const conf = join(dir, `sentinel-${port}.conf`);
      // resolve-hostnames must precede monitor; the file must be writable (Sentinel rewrites it).
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          'sentinel resolve-hostnames no',
          `sentinel monitor mymaster 127.0.0.1 ${mPort} 2`,
          'sentinel down-after-milliseconds mymaster 1000',
          'sentinel failover-timeout mymaster 3000',
          'sentinel parallel-syncs mymaster 1',
          '',
        ].join('\n'),
      );
      sentinels.push(await startServer([conf, '--sentinel'], port, `sentinel ${i + 1}/3`));
    }
    const s = makeSentinel(servers, sentinels, stop);
    await s.waitHealthy(30_000);
    return s;
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A flat [name, value, ...] reply (SENTINEL MASTER / REPLICAS) as an object. */
function pairs(raw: string[]): Record<string, string> {
  const o: Record<string, string> = {};
  for (let i = 0; i + 1 < raw.length; i += 2) o[raw[i]!] = raw[i + 1]!;
  return o;
}

async function distinctFreePorts(n: number): Promise<number[]> {
  const out = new Set<number>();
  while (out.size < n) out.add(await freePort());
  return [...out];
}

function makeSentinel(
  servers: RedisProcess[],
  sentinels: RedisProcess[],
  stop: () => Promise<void>,
): TestSentinel {
  const runningSentinels = () => sentinels.filter((s) => s.running && !s.paused);
  const views = async () =>
    Promise.all(
      runningSentinels().map(async (s) => {
        try {
          const r = (await redisCmd(s.port, 'SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'mymaster')) as string[];
          return Number(r[1]);
        } catch {
          return null;
        }
      }),
    );
  const master = async () => {
    const v = await views();
    const counts = new Map<number, number>();
    for (const p of v) if (p !== null) counts.set(p, (counts.get(p) ?? 0) + 1);
    for (const [p, c] of counts) if (c >= 2) return p;
    throw new Error(`sentinels do not agree on a master: ${JSON.stringify(v)}`);
  };
  /** Every sentinel names `port`, and the server at `port` says role:master. */
  const settledOn = async (port: number | null): Promise<string | null> => {
    const v = await views();
    if (v.some((p) => p !== (port ?? v[0]))) return `sentinels name ${JSON.stringify(v)}`;
    const target = port ?? v[0]!;
    const info = await infoOf(target, 'INFO', 'replication');
    if (info?.role !== 'master') return `server ${target} role:${info?.role ?? 'no answer'}`;
    return null;
  };
  const healthy = async (): Promise<string | null> => {
    const settled = await settledOn(null);
    if (settled) return settled;
    for (const s of runningSentinels()) {
      const m = pairs((await redisCmd(s.port, 'SENTINEL', 'MASTER', 'mymaster')) as string[]);
      if (m.flags !== 'master') return `sentinel ${s.port} flags:${m.flags}`;
      if (Number(m['num-slaves']) < 1) return `sentinel ${s.port} knows ${m['num-slaves']} replicas`;
      if (Number(m['num-other-sentinels']) < runningSentinels().length - 1)
        return `sentinel ${s.port} knows ${m['num-other-sentinels']} other sentinels`;
      const replicas = (await redisCmd(s.port, 'SENTINEL', 'REPLICAS', 'mymaster')) as string[][];
      const ok = replicas.map(pairs).some((o) => o.flags === 'slave' && o['master-link-status'] === 'ok');
      if (!ok) return `sentinel ${s.port} sees no replica with a working link`;
    }
    return null;
  };
  return {
    servers,
    sentinels,
    sentinelAddrs: sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })),
    name: 'mymaster',
    master,
    waitHealthy: (ms = 20_000) =>
      waitUntil('sentinels agreeing on a master with a linked replica', ms, healthy),
    async failover(ms = 20_000) {
      const old = await master();
      const s = runningSentinels()[0];
      if (!s) throw new Error('no running sentinel');
      await redisCmd(s.port, 'SENTINEL', 'FAILOVER', 'mymaster');
      const next = servers.find((x) => x.port !== old && x.running);
      if (!next) throw new Error('no server to fail over to');
      await waitUntil(`sentinels to promote ${next.port} (SENTINEL FAILOVER)`, ms, () =>
        settledOn(next.port),
      );
      return next.port;
    },
    async killMaster(ms = 20_000) {
      const old = await master();
      const node = servers.find((x) => x.port === old);
      if (!node) throw new Error(`master ${old} is not one of ours`);
      const next = servers.find((x) => x.port !== old && x.running);
      if (!next) throw new Error('no replica to fail over to');
      await node.kill();
      await waitUntil(`sentinels to promote ${next.port} after killing ${old}`, ms, () =>
        settledOn(next.port),
      );
      return next.port;
    },
    async pauseMaster(ms = 20_000) {
      const old = await master();
      const node = servers.find((x) => x.port === old);
      if (!node) throw new Error(`master ${old} is not one of ours`);
      const next = servers.find((x) => x.port !== old && x.running && !x.paused);
      if (!next) throw new Error('no replica to fail over to');
      node.pause();
      await waitUntil(`sentinels to promote ${next.port} after pausing ${old}`, ms, () =>
        settledOn(next.port),
      );
      return next.port;
    },
    async resume(port, ms = 20_000) {
      const node = servers.find((x) => x.port === port);
      if (!node) throw new Error(`port ${port} is not one of ours`);
      node.resume();
      // Sentinel demotes a returning old master after ~8 s (4 hello periods). Its own INFO tells when
      // it has synced; the sentinels' flags tell when they consider it usable again (their view of
      // the link comes from INFO polls every 10 s, so it is not awaited).
      return waitUntil(`server ${port} to rejoin as a replica`, ms, async () => {
        const info = await infoOf(port, 'INFO', 'replication');
        if (info?.role !== 'slave' || info.master_link_status !== 'up')
          return `server ${port} role:${info?.role} link:${info?.master_link_status}`;
        for (const s of runningSentinels()) {
          const replicas = (await redisCmd(s.port, 'SENTINEL', 'REPLICAS', 'mymaster')) as string[][];
          const mine = replicas.map(pairs).find((r) => Number(r.port) === port);
          if (mine?.flags !== 'slave') return `sentinel ${s.port} flags for ${port}: ${mine?.flags}`;
        }
        return null;
      });
    },
    stop,
  };
}
