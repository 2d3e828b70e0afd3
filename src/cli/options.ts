import { InvalidArgumentError } from 'commander';
import { EXIT_USAGE, fail } from './io.js';

// Option parsers. Commander turns an InvalidArgumentError into "error: option '--x <n>' argument
// 'y' is invalid. <message>" and exit 2 (`runCli`); the parsers that `fail` print their own words.

/** `--workers`, `--limit`: a whole number ≥ 1. */
export function parsePositive(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive whole number');
  return n;
}

/** `--grace`: a whole number ≥ 0. */
export function parseNonNegative(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be a whole number >= 0');
  return n;
}

/** A port, 0-65535 (0: any free port): exit 2 otherwise. */
export function parsePort(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) fail(`invalid port: ${v}`, EXIT_USAGE);
  return n;
}

/** `--api-access`: `on`/`true` or `off`/`false`. */
export function parseOnOff(v: string): boolean {
  if (v === 'on' || v === 'true') return true;
  if (v === 'off' || v === 'false') return false;
  throw new InvalidArgumentError('must be on or off');
}

/** `--status`: a company status. */
export function parseStatus(v: string): string {
  if (!['active', 'pending', 'suspended'].includes(v))
    throw new InvalidArgumentError('must be active, pending or suspended');
  return v;
}

/**
 * A value that may be `null` (`--scopes all`, `--limits tier`), wrapped: commander replaces a
 * parser's `null` with the option's default.
 */
export interface Settable {
  set: unknown;
}

/**
 * `--scopes`: `all` (every route: null), or a JSON list of `{route, methods?, paths?}`. The service
 * validates the content; only unreadable JSON stops here (exit 2).
 */
export function parseScopesOption(v: string): Settable {
  if (v === 'all') return { set: null };
  try {
    return { set: JSON.parse(v) as unknown };
  } catch {
    fail(
      '--scopes: must be "all" or a JSON list such as [{"route":"/notify/v1","methods":["POST"]}]',
      EXIT_USAGE,
    );
  }
}

/** `--limits`: `tier` / `none` (null), or windows `POINTS/SECONDS[,POINTS/SECONDS...]`, e.g. `10/1,600/60`. */
export function parseLimitsOption(v: string): Settable {
  if (v === 'tier' || v === 'none') return { set: null };
  const windows = v.split(',').map((w) => {
    const m = /^\s*(\d+)\/(\d+)s?\s*$/.exec(w);
    if (!m) fail('--limits: must be "tier", "none" or POINTS/SECONDS[,...] such as 10/1,600/60', EXIT_USAGE);
    return { points: Number(m[1]), duration: Number(m[2]) };
  });
  return { set: windows };
}
