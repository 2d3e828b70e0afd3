/**
 * Time helpers shared by every layer. The spec writes every timestamp as UTC
 * `YYYY-MM-DDTHH:MM:SSZ` (no milliseconds); these keep that one format in one place.
 */

/**
 * UTC timestamp `YYYY-MM-DDTHH:MM:SSZ`, as the spec requires for every timestamp.
 * Throws a `RangeError` for an invalid date (as `Date.prototype.toISOString` does).
 *
 * @example
 * isoSeconds(0); // '1970-01-01T00:00:00Z'
 */
export function isoSeconds(d: Date | number = Date.now()): string {
  const date = typeof d === 'number' ? new Date(d) : d;
  return date.toISOString().slice(0, 19) + 'Z';
}

/** A UTC timestamp as the spec writes it (shape only: see `parseInstant` for a real instant). */
export const TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/**
 * The instant (ms) a `YYYY-MM-DDTHH:MM:SSZ` timestamp names, or null when it is not one: wrong
 * shape, or a shape that names no instant (month 13, February 30, hour 24, second 60). `Date.parse`
 * alone is not enough: it gives NaN for some of these and silently rolls others over
 * (`2027-02-30` becomes March 2, `T24:00:00` the next day), so the value must format back to itself.
 *
 * @example
 * parseInstant('2027-02-30T00:00:00Z'); // null
 */
export function parseInstant(s: string): number | null {
  if (!TIMESTAMP_PATTERN.test(s)) return null;
  const ms = Date.parse(s);
  if (Number.isNaN(ms) || isoSeconds(ms) !== s) return null;
  return ms;
}

/** Message for a timestamp that is not a real instant (400 details, key-file problems). */
export const INSTANT_MESSAGE = 'must be a real UTC instant YYYY-MM-DDTHH:MM:SSZ';
