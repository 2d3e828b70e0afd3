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
 * Creates the JSON logger. Times are UTC `YYYY-MM-DDTHH:MM:SSZ`, like every timestamp the gateway
 * writes. Writes asynchronously to stdout unless a destination is given (tests pass one to parse lines).
 */
export function createLogger(opts: { level: string; destination?: DestinationStream }): Logger {
  return pino(
    {
      level: opts.level,
      base: { service: 'notify-gateway' },
      redact: { paths: REDACT_PATHS, censor: '[REDACTED]' },
      timestamp: secondClock(),
      formatters: { level: (label) => ({ level: label }) },
    },
    opts.destination ?? destination({ sync: false }),
  );
}

/** pino timestamp function that formats the time once per second, not once per line. */
function secondClock(): () => string {
  let second = -1;
  let text = '';
  return () => {
    const now = Date.now();
    const s = Math.floor(now / 1000);
    if (s !== second) {
      second = s;
      text = `,"time":"${isoSeconds(now)}"`;
    }
    return text;
  };
}
