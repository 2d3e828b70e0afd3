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
  /** Default: set `path` to the raw string (the schema coerces numbers). */
  apply?: (cfg: Record<string, unknown>, value: string) => void;
}

/**
 * The one table of environment variables that override the file. Drives both the overrides and
 * the `(from VAR)` hint in problems. An unset or empty variable changes nothing.
 */
const ENV_TABLE = {
  PORT: { path: 'server.port' },
  ADMIN_PORT: { path: 'admin.port' },
  ADMIN_HOST: { path: 'admin.host' },
  ADMIN_TOKEN: { path: 'admin.token' },
  REDIS_URL: {
    path: 'store.redis.url',
    apply: (cfg, url) => {
      setPath(cfg, 'store.type', 'redis');
      setPath(cfg, 'store.redis.url', url);
    },
  },
  UPSTREAM_URL: { path: 'routes[/notify/v1].target', apply: setDefaultRouteTarget },
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
  const input = applyEnv(structuredClone(raw) as Record<string, unknown>, opts.env ?? {});
  return validateConfig(input, file);
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
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    return { ok: false, file: baseFile, problems: parsed.error.issues.map(formatIssue) };
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

function formatIssue(issue: ZodIssue): string {
  const path = issue.path.length ? issue.path.join('.') : '(top level)';
  const env = Object.entries(ENV_OVERRIDES).find(([, p]) => envPathMatches(p, issue.path));
  // zod quotes some received values (enums): a URL there keeps its host, not its password.
  return `${path}${env ? ` (from ${env[0]})` : ''}: ${maskUrlsInText(issue.message)}`;
}

function envPathMatches(envPath: string, issuePath: (string | number)[]): boolean {
  if (envPath.startsWith('routes')) return issuePath[0] === 'routes' && issuePath[2] === 'target';
  return envPath === issuePath.join('.');
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

function applyEnv(
  cfg: Record<string, unknown>,
  env: Record<string, string | undefined>,
): Record<string, unknown> {
  for (const [name, o] of Object.entries(ENV_TABLE) as [string, EnvOverride][]) {
    const v = env[name];
    if (v === undefined || v === '') continue;
    if (o.apply) o.apply(cfg, v);
    else setPath(cfg, o.path, v);
  }
  return cfg;
}

/** `UPSTREAM_URL`: the target of the `/notify/v1` route, added first when the file has none. */
function setDefaultRouteTarget(cfg: Record<string, unknown>, url: string): void {
  const routes = Array.isArray(cfg.routes) ? (cfg.routes as Record<string, unknown>[]) : [];
  const route = routes.find((r) => r && typeof r === 'object' && r.prefix === '/notify/v1');
  if (route) route.target = url;
  else routes.unshift({ prefix: '/notify/v1', target: url });
  cfg.routes = routes;
}

/** Freezes an object graph so a loaded config cannot drift at run time. */
export function deepFreeze<T>(obj: T): T {
  if (obj && typeof obj === 'object' && !Object.isFrozen(obj)) {
    Object.freeze(obj);
    for (const v of Object.values(obj)) deepFreeze(v);
  }
  return obj;
}
