import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';
import type { ZodIssue } from 'zod';
import { maskUrlsInText } from '../redact.js';
import { configSchema, type ConfigInput, type GatewayConfig } from './schema.js';

/** Directory of the shipped config (default config, tier table, example key file). */
export const PACKAGE_CONFIG_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../config');
export const DEFAULT_CONFIG_FILE = resolve(PACKAGE_CONFIG_DIR, 'default.yaml');

/** A frozen, valid config, or every problem found; `file` is the config file used. */
export type LoadResult =
  | { ok: true; config: Readonly<GatewayConfig>; file: string }
  | { ok: false; problems: string[]; file: string };

/** One environment override: the config path it sets (as shown in problems) and how it applies. */
interface EnvOverride {
  path: string;
  /** Default: set `path` to the raw string (the schema coerces numbers). Returns a problem, if any. */
  apply?: (cfg: Record<string, unknown>, value: string) => string | undefined | void;
}

/**
 * The one table of environment variables that override the file. Drives both the overrides and
 * the `(from VAR)` hint in problems. An unset or empty variable changes nothing.
 */
const ENV_TABLE = {
  PORT: { path: 'server.port' },
  ADMIN_PORT: { path: 'admin.port' },
  ADMIN_HOST: { path: 'admin.host' },
  DASHBOARD_PORT: { path: 'dashboard.port' },
  ADMIN_TOKEN: { path: 'admin.token' },
  /** `name:role:sha256[,name:role:sha256...]`, replacing `admin.tokens`. */
  ADMIN_TOKENS: {
    path: 'admin.tokens',
    apply: (cfg, v) =>
      setPath(
        cfg,
        'admin.tokens',
        v.split(',').map((entry) => {
          // `name:role:sha256` (the hash may carry its `sha256:` prefix); the schema checks each part.
          const [name, role, ...hash] = entry.trim().split(':');
          return { name, role, sha256: hash.join(':') };
        }),
      ),
  },
  REDIS_URL: {
    path: 'store.redis.url',
    apply: (cfg, url) => {
      setPath(cfg, 'store.type', 'redis');
      setPath(cfg, 'store.redis.url', url);
    },
  },
  UPSTREAM_URL: { path: 'routes.0.target', apply: setSingleRouteTarget },
  UPSTREAM_TIMEOUT_MS: { path: 'upstream.timeoutMs' },
  BODY_LIMIT_BYTES: { path: 'server.bodyLimitBytes' },
  LOG_LEVEL: { path: 'log.level' },
} satisfies Record<string, EnvOverride>;

/** Environment variables that override the file, with the config path each sets. */
export const ENV_OVERRIDES = Object.fromEntries(
  Object.entries(ENV_TABLE).map(([name, o]) => [name, o.path]),
) as { readonly [K in keyof typeof ENV_TABLE]: string };

/**
 * Reads a YAML/JSON config file, applies the environment overrides and validates the result once.
 * Never throws for bad input: every problem is returned, each naming its path (or env variable).
 * The returned config is deep-frozen.
 *
 * @example
 * const r = loadConfig({ file: process.env.GATEWAY_CONFIG, env: process.env });
 * if (!r.ok) { console.error(r.problems.join('\n')); process.exit(2); }
 */
export function loadConfig(opts: {
  file?: string | undefined;
  env?: Record<string, string | undefined>;
}): LoadResult {
  const file = resolve(opts.file ?? opts.env?.GATEWAY_CONFIG ?? DEFAULT_CONFIG_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const reason =
      (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'file not found' : (err as Error).message;
    return { ok: false, file, problems: [`${file}: ${reason}`] };
  }
  const read = readYamlMapping(text);
  if (!read.ok) return { ok: false, file, problems: read.problems.map((p) => `${file}: ${p}`) };
  const raw = read.value;
  const input = structuredClone(raw) as Record<string, unknown>;
  const applied = applyEnv(input, opts.env ?? {});
  if (applied.problems.length) return { ok: false, file, problems: applied.problems };
  return validateInput(input, file, applied.names);
}

/**
 * Parses a YAML/JSON mapping, listing every YAML error at once. Only each error's first line is
 * kept: the rest is an excerpt of the file, which may hold a token or a Redis password. An empty
 * file is refused, not read as "all defaults": a truncated copy would silently drop settings.
 */
function readYamlMapping(
  text: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; problems: string[] } {
  const doc = parseDocument(text, { strict: true, uniqueKeys: true });
  if (doc.errors.length) {
    return { ok: false, problems: doc.errors.map((e) => `YAML: ${e.message.split('\n')[0] ?? ''}`) };
  }
  if (doc.contents === null) {
    return { ok: false, problems: ['the file is empty (write `{}` to use every default)'] };
  }
  const value: unknown = doc.toJS();
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, problems: ['the top level must be a mapping'] };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/** Validates an in-memory config (tests, demo). Relative paths resolve against `baseFile`'s folder. */
export function validateConfig(
  input: ConfigInput | Record<string, unknown>,
  baseFile = DEFAULT_CONFIG_FILE,
): LoadResult {
  return validateInput(input, baseFile, []);
}

/** `validateConfig`, blaming a problem on an environment variable only when it was applied. */
function validateInput(
  input: ConfigInput | Record<string, unknown>,
  baseFile: string,
  envApplied: readonly EnvName[],
): LoadResult {
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => formatIssue(i, envApplied));
    return { ok: false, file: baseFile, problems };
  }
  const config = parsed.data;
  const base = dirname(baseFile);
  config.store.file.path = resolvePath(base, config.store.file.path);
  for (const tls of [config.server.tls, config.admin.tls]) {
    if (!tls) continue;
    tls.certFile = resolvePath(base, tls.certFile);
    tls.keyFile = resolvePath(base, tls.keyFile);
  }
  return { ok: true, file: baseFile, config: deepFreeze(config) };
}

function resolvePath(base: string, p: string): string {
  return isAbsolute(p) ? p : resolve(base, p);
}

type EnvName = keyof typeof ENV_TABLE;

/** One problem, `path (from VAR): message`; the variable is named only when it was set. */
function formatIssue(issue: ZodIssue, envApplied: readonly EnvName[]): string {
  const path = issue.path.length ? issue.path.join('.') : '(top level)';
  // A variable that sets a whole subtree (`ADMIN_TOKENS` → `admin.tokens`) owns its items' problems.
  const env = envApplied.find((name) => {
    const own = ENV_TABLE[name].path;
    return path === own || path.startsWith(`${own}.`);
  });
  // zod quotes some received values (enums): a URL there keeps its host, not its password.
  return `${path}${env ? ` (from ${env})` : ''}: ${maskUrlsInText(issue.message)}`;
}

function setPath(obj: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let cur = obj;
  for (const part of parts.slice(0, -1)) {
    const next = cur[part];
    if (next === null || typeof next !== 'object' || Array.isArray(next)) cur[part] = {};
    cur = cur[part] as Record<string, unknown>;
  }
  cur[parts[parts.length - 1]!] = value;
}

/**
 * Applies the set (non-empty) variables to `cfg`; returns their names, and the problems of a
 * variable that cannot apply (`UPSTREAM_URL` with several routes).
 */
function applyEnv(
  cfg: Record<string, unknown>,
  env: Record<string, string | undefined>,
): { names: EnvName[]; problems: string[] } {
  const names: EnvName[] = [];
  const problems: string[] = [];
  for (const [name, o] of Object.entries(ENV_TABLE) as [EnvName, EnvOverride][]) {
    const v = env[name];
    if (v === undefined || v === '') continue;
    const problem = o.apply ? o.apply(cfg, v) : setPath(cfg, o.path, v);
    if (typeof problem === 'string') problems.push(`${name}: ${problem}`);
    else names.push(name);
  }
  return { names, problems };
}

/**
 * `UPSTREAM_URL`: the target of the one route. Without `routes` in the file that is the default
 * `/notify/v1` route; with exactly one route in the file, that route (whatever its prefix); with
 * several, it is an error: which one it meant cannot be guessed, and silently adding a route would
 * expose a path the file never declared.
 */
function setSingleRouteTarget(cfg: Record<string, unknown>, url: string): string | undefined {
  if (cfg.routes === undefined) {
    cfg.routes = [{ prefix: '/notify/v1', target: url }];
    return undefined;
  }
  if (!Array.isArray(cfg.routes)) return undefined; // the schema reports the bad `routes`
  const routes = cfg.routes as unknown[];
  const only = routes[0];
  if (routes.length === 1 && only !== null && typeof only === 'object' && !Array.isArray(only)) {
    (only as Record<string, unknown>).target = url;
    delete (only as Record<string, unknown>).targets;
    return undefined;
  }
  return (
    `sets the target of the only route, but the config file defines ${routes.length} routes; ` +
    "set each route's target in the file and unset UPSTREAM_URL"
  );
}

/** Freezes an object graph so a loaded config cannot drift at run time. */
export function deepFreeze<T>(obj: T): T {
  if (obj && typeof obj === 'object' && !Object.isFrozen(obj)) {
    Object.freeze(obj);
    for (const v of Object.values(obj)) deepFreeze(v);
  }
  return obj;
}
