// Checks for step factories' options, run once when a step is built (never per request), so a
// wiring mistake fails at startup with the option's name rather than on the first request.

/** Throws a TypeError naming `name` unless `value` is a function. */
export function assertFunction(value: unknown, name: string): void {
  if (typeof value !== 'function') throw new TypeError(`${name} must be a function`);
}

/** Throws a TypeError naming `name` unless `value` is a boolean. */
export function assertBoolean(value: unknown, name: string): void {
  if (typeof value !== 'boolean') throw new TypeError(`${name} must be a boolean`);
}

/** Throws a TypeError naming `name` unless `value` is an integer ≥ 0. */
export function assertNonNegativeInteger(value: unknown, name: string): void {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw new TypeError(`${name} must be an integer >= 0`);
}

/**
 * Throws a TypeError naming `name` unless `value` is a lowercase header name (letters, digits,
 * dashes): Node lowercases incoming header names, so a mixed-case name would never match.
 */
export function assertHeaderName(value: unknown, name: string): void {
  if (typeof value !== 'string' || !/^[a-z0-9-]{1,64}$/.test(value))
    throw new TypeError(`${name} must be a lowercase header name`);
}
