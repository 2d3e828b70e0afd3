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

/** A UTC timestamp as the spec writes it (shape only: it does not check that the instant exists). */
export const TIMESTAMP_PATTERN = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;
