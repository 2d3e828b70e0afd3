import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { PoolTargetInput, UpstreamPool } from './pool.js';

/** Every address of a hostname (injected in tests); rejects when it does not resolve. */
export type Lookup = (hostname: string) => Promise<string[]>;

/** The system resolver (`getaddrinfo`, as connections use), every address. */
export const systemLookup: Lookup = async (hostname) =>
  (await dnsLookup(hostname, { all: true })).map((a) => a.address);

export interface ResolveOptions {
  /** 0: never re-resolved (Node resolves the name at each new connection). */
  intervalMs: number;
  lookup?: Lookup;
  /** A name that did not resolve: its last addresses are kept. */
  onError?: (url: string, err: unknown) => void;
}

/**
 * Follows the addresses of a pool's hostname targets, like a Kubernetes headless Service: every
 * `intervalMs` each name is looked up and every address becomes a target of its own (same port,
 * path and weight; the `Host` header stays the name). Targets given by IP are left alone. A failed
 * lookup keeps the last addresses. The timers are unref'd; the returned function stops them.
 *
 * @example
 * const stop = startResolving(pool, route.targets, { intervalMs: 10_000 });
 */
export function startResolving(
  pool: UpstreamPool,
  configured: readonly PoolTargetInput[],
  opts: ResolveOptions,
): () => void {
  const named = configured.filter((t) => isIP(bare(new URL(t.url).hostname)) === 0);
  if (named.length === 0 || opts.intervalMs === 0) return () => undefined;
  const lookup = opts.lookup ?? systemLookup;
  const resolved = new Map<string, string[]>();
  let stopped = false;
  const round = async () => {
    for (const t of named) {
      try {
        const addresses = [...new Set(await lookup(new URL(t.url).hostname))].sort();
        if (addresses.length > 0) resolved.set(t.url, addresses);
      } catch (err) {
        opts.onError?.(t.url, err);
      }
    }
    if (!stopped) pool.setTargets(expandTargets(configured, resolved));
  };
  const timer = setInterval(() => void round(), opts.intervalMs);
  timer.unref();
  setImmediate(() => void round()).unref();
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

/** The configured targets with each resolved name replaced by one target per address. */
export function expandTargets(
  configured: readonly PoolTargetInput[],
  resolved: ReadonlyMap<string, readonly string[]>,
): PoolTargetInput[] {
  return configured.flatMap((t) => {
    const addresses = resolved.get(t.url);
    if (addresses === undefined) return [t];
    return addresses.map((address) => {
      const url = new URL(t.url);
      url.hostname = isIP(address) === 6 ? `[${address}]` : address;
      return { url: url.href, weight: t.weight, host: new URL(t.url).host };
    });
  });
}

const bare = (hostname: string) => hostname.replace(/^\[(.*)\]$/, '$1');
