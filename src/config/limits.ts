import { METHODS } from 'node:http';
import { z } from 'zod';
import { holdsKeyMaterial, KEY_MATERIAL_MESSAGE } from './field-patterns.js';

// Scopes and rate-limit windows: one schema for the config (tiers), the key file, the admin API
// and the CLI, so that every way in accepts and refuses the same things.

/** Longest window: 31 days (a monthly quota). */
export const MAX_WINDOW_SECONDS = 31 * 86_400;

/** One window: `points` requests per fixed window of `duration` seconds. */
export const windowSchema = z
  .object({
    points: z.coerce.number().int().min(1).max(1_000_000_000),
    duration: z.coerce.number().int().min(1).max(MAX_WINDOW_SECONDS),
  })
  .strict();

/** A list of windows: 1 to 8, no two of the same length (a window's counter is named by its length). */
export const windowListSchema = z
  .array(windowSchema)
  .min(1, 'list at least one window')
  .max(8, 'at most 8 windows')
  .refine((l) => new Set(l.map((w) => w.duration)).size === l.length, 'two windows have the same duration');

/**
 * Whether a path prefix (in the plain characters `pathPrefixSchema` allows) is one a request can
 * reach: no empty segment (`//`) and no segment of dots only (`.`, `..`, `...`). The gateway
 * refuses such request targets (`isSafeRequestPath` in src/proxy/routes.ts, the same rule for
 * these characters), so a route or scope path holding one could never match anything.
 */
export function isReachablePathPrefix(p: string): boolean {
  return !p.includes('//') && !/\/\.+(?:\/|$)/.test(p);
}

/**
 * A route prefix or scope path: `/` and URL path characters (no `%`, `\`, `;` or non-ASCII: a
 * percent-encoded spelling would never match the raw path), no empty or dot segment, no key
 * material (scopes are echoed in answers, audit entries and logs, as ids and labels are), stored
 * without a trailing `/`. The config's `routes[].prefix` and every scope (admin API, CLI, key
 * file, apply) use this one schema.
 */
export const pathPrefixSchema = z
  .string()
  .regex(/^\/[A-Za-z0-9._~\-/]*$/, 'must start with / and hold only URL path characters (no %, \\ or ;)')
  .refine(
    isReachablePathPrefix,
    'must not hold an empty (//) or dot (., ..) segment: no request path the gateway accepts could match it',
  )
  .refine((p) => !holdsKeyMaterial(p), KEY_MATERIAL_MESSAGE)
  .transform((p) => (p.length > 1 ? p.replace(/\/+$/, '') : p))
  .describe('A path prefix: starts with /, plain URL path characters, no empty (//) or dot (., ..) segment');

const method = z
  .string()
  .regex(/^[A-Z][A-Z-]*$/, 'must be an uppercase method name such as GET')
  .refine((m) => !['TRACE', 'TRACK', 'CONNECT'].includes(m), 'is always refused by the gateway')
  .refine((m) => METHODS.includes(m), 'is not an HTTP method');

/** One scope: a route prefix, optionally some methods and some path prefixes under it. */
export const scopeSchema = z
  .object({
    route: pathPrefixSchema,
    methods: z
      .array(method)
      .min(1, 'list at least one method, or leave methods out')
      .max(16)
      .refine((l) => new Set(l).size === l.length, 'lists a method twice')
      .optional(),
    paths: z.array(pathPrefixSchema).min(1, 'list at least one path, or leave paths out').max(64).optional(),
  })
  .strict();

/** Scopes as stored: `null` = every route. */
export const scopeListSchema = z.array(scopeSchema).max(64, 'at most 64 scopes').nullable();

/** What a scope must be checked against: the configured routes. */
export interface ScopeRoute {
  prefix: string;
  methods?: readonly string[] | undefined;
}

/**
 * Problems of parsed scopes against the configured routes (empty when none): a route that is not
 * a configured prefix, a method the route does not forward, a path outside its route. Each
 * problem names its position (`0.route`), never echoes more than the configured names.
 */
export function findScopeProblems(
  scopes: readonly z.infer<typeof scopeSchema>[],
  routes: readonly ScopeRoute[],
): string[] {
  const problems: string[] = [];
  scopes.forEach((s, i) => {
    const route = routes.find((r) => r.prefix === s.route);
    if (!route) {
      problems.push(`${i}.route: not a configured route prefix (${routes.map((r) => r.prefix).join(', ')})`);
      return;
    }
    const forwarded = route.methods ? new Set(route.methods) : null;
    if (forwarded?.has('GET')) forwarded.add('HEAD');
    s.methods?.forEach((m, j) => {
      if (forwarded && !forwarded.has(m)) problems.push(`${i}.methods.${j}: the route does not forward ${m}`);
    });
    s.paths?.forEach((p, j) => {
      if (!isUnder(p, s.route)) problems.push(`${i}.paths.${j}: must be ${s.route} or a path under it`);
    });
  });
  return problems;
}

/** Whether `path` is `prefix` or under it on a segment boundary (`/` or `;`). */
export function isUnder(path: string, prefix: string): boolean {
  if (prefix === '/') return path.startsWith('/');
  if (!path.startsWith(prefix)) return false;
  const next = path.charCodeAt(prefix.length);
  return path.length === prefix.length || next === 47 || next === 59;
}
