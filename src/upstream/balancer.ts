/** What a balancer reads of a target: its weight, requests in flight, a stable name, its RR state. */
export interface Balanced {
  /** Stable identity (the target's URL): the company hash depends on it, not on list order. */
  readonly id: string;
  readonly weight: number;
  /** Requests in flight to this target (the pool counts them). */
  inFlight: number;
  /** Smooth weighted round-robin's running weight (owned by the balancer). */
  current: number;
}

/** How a route spreads requests over its targets (`routes[].balancing`). */
export type BalancingKind = 'round-robin' | 'least-requests' | 'company-hash';

/** Picks one of `candidates` (never empty) for a request of `companyId`. */
export type Balancer<T extends Balanced> = (candidates: readonly T[], companyId: string) => T;

/**
 * The balancer of a route. `round-robin`: nginx's smooth weighted round-robin (each pick adds every
 * candidate's weight to its running weight and takes the largest, which then gives back the total:
 * weights 5,1,1 go a a b a c a a, never five in a row). `least-requests`: fewest requests in flight
 * per unit of weight, ties broken at random. `company-hash`: weighted rendezvous hashing on the
 * company id: a company stays on one target while the set is stable, and when a target leaves only
 * its companies move (about 1/N of them).
 *
 * @example
 * const pick = createBalancer('round-robin');
 * pick(targets, 'acme');
 */
export function createBalancer<T extends Balanced>(
  kind: BalancingKind,
  random: () => number = Math.random,
): Balancer<T> {
  if (kind === 'least-requests') return (c) => pickLeastRequests(c, random);
  if (kind === 'company-hash') return pickByCompanyHash;
  return pickSmoothWeighted;
}

function pickSmoothWeighted<T extends Balanced>(candidates: readonly T[]): T {
  let total = 0;
  let best = candidates[0]!;
  for (const c of candidates) {
    c.current += c.weight;
    total += c.weight;
    if (c.current > best.current) best = c;
  }
  best.current -= total;
  return best;
}

function pickLeastRequests<T extends Balanced>(candidates: readonly T[], random: () => number): T {
  let best = candidates[0]!;
  let bestScore = (best.inFlight + 1) / best.weight;
  let ties = 1;
  for (let i = 1; i < candidates.length; i++) {
    const c = candidates[i]!;
    const score = (c.inFlight + 1) / c.weight;
    if (score < bestScore) {
      best = c;
      bestScore = score;
      ties = 1;
    } else if (score === bestScore && random() * ++ties < 1) best = c; // reservoir: each tie 1/n
  }
  return best;
}

function pickByCompanyHash<T extends Balanced>(candidates: readonly T[], companyId: string): T {
  let best = candidates[0]!;
  let bestScore = -Infinity;
  for (const c of candidates) {
    // Weighted rendezvous: score = -w / ln(u), u uniform in (0,1) from the pair's hash.
    const u = (hash53(`${companyId}\u0000${c.id}`) + 1) / 2 ** 53;
    const score = -c.weight / Math.log(u);
    if (score > bestScore) {
      best = c;
      bestScore = score;
    }
  }
  return best;
}

/** cyrb53: a fast, well-mixed 53-bit string hash (not cryptographic; spreading only). */
export function hash53(s: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}
