import { destination, pino, type DestinationStream, type Logger } from 'pino';
import { isoSeconds } from '../time.js';

/** The gateway's logger: pino, created by `createLogger`. */
export type { Logger } from 'pino';

/**
 * Paths removed from every log record, whatever a caller passes: keys and hashes must never be
 * logged (spec section 5.7), nor config secrets (INVARIANTS #12). pino throws at creation when a path is invalid.
 */
export const REDACT_PATHS = [
  'key',
  'apiKey',
  'hash',
  'token',
  'headers["x-api-key"]',
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'headers.authorization',
  '*.key',
  '*.apiKey',
  '*.hash',
  // Config secrets, should a caller ever log a config section.
  'secret',
  'password',
  '*.token',
  '*.secret',
  '*.password',
];

/**
 * Creates the JSON logger. A line's `time` is UTC with milliseconds, `YYYY-MM-DDTHH:MM:SS.mmmZ`
 * (lines of one second stay in order; every timestamp inside a record keeps the gateway's
 * `YYYY-MM-DDTHH:MM:SSZ`). Writes asynchronously to stdout unless a destination is given (tests pass one to parse lines).
 */
export function createLogger(opts: {
  level: string;
  destination?: DestinationStream;
  /** The clock for `time` (tests inject one); `Date.now` by default. */
  now?: () => number;
}): Logger {
  return pino(
    {
      level: opts.level,
      base: { service: 'notify-gateway' },
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      timestamp: millisecondClock(opts.now ?? Date.now),
      formatters: { level: (label) => ({ level: label }) },
    },
    opts.destination ?? destination({ sync: false }),
  );
}

/**
 * pino timestamp function: the date and time formatted once per second, the milliseconds added to
 * it per line (one string per line, the field itself).
 */
function millisecondClock(clock: () => number): () => string {
  let second = -1;
  let head = '';
  return () => {
    const now = clock();
    const s = Math.floor(now / 1000);
    if (s !== second) {
      second = s;
      head = `,"time":"${isoSeconds(now).slice(0, -1)}.`;
    }
    return head + MILLIS[now - s * 1000]!;
  };
}
/** `000Z"` to `999Z"`: the end of the time field, per millisecond. */
const MILLIS: readonly string[] = Array.from({ length: 1000 }, (_, i) => `${String(i).padStart(3, '0')}Z"`);

/**
 * The names the redaction removes wherever they appear (the last segment of each `REDACT_PATHS`
 * entry, plus the `headers`/`req` objects those paths reach into): a log record that holds none of
 * them, as a field or inside one, has nothing to redact.
 */
export const REDACTED_NAMES: readonly string[] = [
  ...new Set(
    REDACT_PATHS.flatMap((p) => [
      p.split('.')[0]!.replace(/\[.*$/, ''),
      p.replace(/^.*[.[]"?/, '').replace(/"?\]$/, ''),
    ]),
  ),
].filter((n) => n !== '*');

/**
 * A child of `logger` that writes to the same destination in the same format, without the
 * redaction pass (~8 µs per line, most of what a line costs). Only for records made of fixed
 * scalar fields none of which is in `REDACTED_NAMES` — the access line (its fields are typed and
 * checked against that list by test): on such a record the redaction cannot change a byte.
 */
export function unredactedChild(logger: Logger): Logger {
  return logger.child({}, { redact: [] });
}
