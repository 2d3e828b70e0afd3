import type { RequestHandler } from 'express';
import type { Counter } from 'prom-client';
import { childCache } from '../../observability/metrics.js';
import { deny } from '../deny.js';
import { assertFunction, assertNonNegativeInteger } from '../option-checks.js';

export interface OverloadGuardOptions {
  /** Requests this process serves at once (admitted, not yet answered); `0` = no bound. */
  maxInFlight: number;
  /** Event-loop delay (ms) past which new requests are refused; `0` = not watched. */
  maxEventLoopDelayMs: number;
  /** `Retry-After` of the refusal, seconds. */
  retryAfterSeconds: number;
  /** `gateway_overload_refused_total{reason}`. */
  refused: Pick<Counter<'reason'>, 'labels'>;
  /** The event loop's current delay in ms (tests inject one); default: a timer-lag sampler. */
  eventLoopDelay?: () => number;
}

/** How often the sampler's timer asks to run; its lateness is the event loop's delay. */
const SAMPLE_MS = 20;

/**
 * Step 4 (second half), overload (threat model: T7): past `maxInFlight` requests in flight, or
 * while the event loop runs more than `maxEventLoopDelayMs` late, a new request is answered 503
 * `OVERLOADED` with `Retry-After` at once, before any key lookup, quota or upstream work, instead
 * of queueing behind the others (latency would grow for every company). Probes (`/healthz`,
 * `/readyz`, the step before) are never refused. An admitted request holds its slot until its
 * response closes (answered, or the client gone). Needs `req.gw`.
 *
 * @example
 * const overload = createOverloadGuard({ maxInFlight: 512, maxEventLoopDelayMs: 200,
 *   retryAfterSeconds: 1, refused: metrics.overloadRefused });
 */
export function createOverloadGuard(opts: OverloadGuardOptions): RequestHandler {
  assertNonNegativeInteger(opts.maxInFlight, 'maxInFlight');
  assertNonNegativeInteger(opts.maxEventLoopDelayMs, 'maxEventLoopDelayMs');
  assertNonNegativeInteger(opts.retryAfterSeconds, 'retryAfterSeconds');
  assertFunction(opts.refused?.labels, 'refused.labels');
  const maxInFlight = opts.maxInFlight > 0 ? opts.maxInFlight : Infinity;
  const maxDelay = opts.maxEventLoopDelayMs > 0 ? opts.maxEventLoopDelayMs : Infinity;
  const delay = opts.eventLoopDelay ?? (maxDelay !== Infinity ? processLagSampler().delay : () => 0);
  const retryAfter = String(opts.retryAfterSeconds);
  const refusedBy = childCache(opts.refused);
  let inFlight = 0;
  // One shared listener, no closure per request.
  const release = (): void => void inFlight--;
  return function overloadGuard(req, res, next) {
    const reason =
      inFlight >= maxInFlight ? 'in_flight' : delay() > maxDelay ? 'event_loop_delay' : undefined;
    if (reason === undefined) {
      inFlight++;
      res.on('close', release);
      return next();
    }
    refusedBy(reason).inc();
    req.gw.denyReason = reason;
    res.setHeader('Retry-After', retryAfter);
    deny(req, res, 'OVERLOADED');
  };
}

let processSampler: ReturnType<typeof startLagSampler> | null = null;

/** The process's one sampler (the event loop is the process's), started on first use, never stopped. */
function processLagSampler(): ReturnType<typeof startLagSampler> {
  return (processSampler ??= startLagSampler(SAMPLE_MS));
}

/**
 * The event loop's delay, sampled: a timer asks to run every `intervalMs`, and how late it runs is
 * the delay (the timers run before the sockets in each loop turn, so requests that waited behind
 * long turns see it). The delay is the smaller of the last two samples: a process that is behind
 * runs late turn after turn, while one pause (a large GC, a module loaded on first use, a moment
 * without a core on a busy host) is not overload and refuses nothing. The timer never keeps the
 * process alive.
 */
export function startLagSampler(intervalMs: number): { delay: () => number; stop: () => void } {
  let last = performance.now();
  let lag = 0;
  let previous = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    const sample = Math.max(0, now - last - intervalMs);
    lag = Math.min(previous, sample);
    previous = sample;
    last = now;
  }, intervalMs);
  timer.unref();
  return { delay: () => lag, stop: () => clearInterval(timer) };
}
