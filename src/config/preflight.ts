import { closeSync, openSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { GatewayConfig } from './schema.js';

/** What `findStartupProblems` needs besides the config. */
export interface PreflightOptions {
  /** The config file the config came from (relative paths were resolved against its folder). */
  file?: string;
  /**
   * Whether a host name is loopback (the admin API's rule, passed in so that there is one rule:
   * `isLoopbackName` of `admin/router.ts`).
   */
  isLoopback: (host: string) => boolean;
  /** Check `store.file.path` (false when the caller brings its own store). Default true. */
  checkKeyFile?: boolean;
}

/**
 * Everything that keeps a schema-valid config from starting, short of opening sockets: the admin
 * API on a non-loopback address without a token, a key file or TLS file that cannot be opened.
 * Returns every problem, each naming its config key (`[]` = the config can start). `serve` (via
 * `startGateway`) and `config check` both call it, so they agree on what runs. Never throws.
 *
 * @example
 * const problems = findStartupProblems(config, { file, isLoopback: isLoopbackName });
 * if (problems.length) { console.error(problems.join('\n')); process.exit(2); }
 */
export function findStartupProblems(config: Readonly<GatewayConfig>, opts: PreflightOptions): string[] {
  const problems: string[] = [];
  const { admin, server, store } = config;
  if (admin.enabled && !admin.token && !admin.tokens.length && !opts.isLoopback(admin.host)) {
    problems.push(
      `admin.token: required because admin.host ${admin.host} is not loopback ` +
        '(set ADMIN_TOKEN, or bind the admin API to 127.0.0.1)',
    );
  }
  if (store.type === 'file' && opts.checkKeyFile !== false) {
    const problem = unreadable(store.file.path);
    if (problem) problems.push(`store.file.path: ${problem}${keyFileHint(store.file.path, opts.file)}`);
  }
  problems.push(...dashboardProblems(config, opts.isLoopback));
  for (const [name, tls] of [
    ['server.tls', server.tls],
    ['admin.tls', admin.enabled ? admin.tls : undefined],
  ] as const) {
    if (!tls) continue;
    for (const k of ['certFile', 'keyFile'] as const) {
      const problem = unreadable(tls[k]);
      if (problem) problems.push(`${name}.${k}: ${problem}`);
    }
  }
  return problems;
}

/** Why a file cannot be opened for reading, or null when it can. */
function unreadable(path: string): string | null {
  try {
    if (!statSync(path).isFile()) return `${path} is not a file`;
    closeSync(openSync(path, 'r'));
    return null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return `${path} does not exist`;
    if (code === 'EACCES') return `${path} cannot be read (permission denied)`;
    return `${path} cannot be read (${code ?? (err as Error).message})`;
  }
}

/** The default key file sits beside the config file: say so, since a custom config moves it. */
function keyFileHint(path: string, configFile: string | undefined): string {
  if (!configFile || path !== resolve(dirname(configFile), 'keys.yaml')) return '';
  return (
    " (store.file.path defaults to keys.yaml in the config file's folder; set store.file.path, " +
    'create the file (`companies: []` declares no companies), or use REDIS_URL)'
  );
}

/**
 * What keeps the dashboard from starting: the file store (read-only: no members, codes or
 * sessions), plain HTTP off loopback, the `log` mail transport off loopback.
 */
function dashboardProblems(config: Readonly<GatewayConfig>, isLoopback: (host: string) => boolean): string[] {
  const d = config.dashboard;
  if (!d.enabled) return [];
  const problems: string[] = [];
  if (config.store.type === 'file')
    problems.push(
      'dashboard.enabled: the company dashboard needs the redis store (or memory, for the demo); the file store is read-only and keeps no members, codes or sessions',
    );
  const loopback = isLoopback(d.host);
  if (!loopback && !d.publicOrigin?.startsWith('https://'))
    problems.push(
      `dashboard.publicOrigin: an https:// origin is required because dashboard.host ${d.host} is not loopback (plain HTTP is for loopback only; end TLS in front of the dashboard)`,
    );
  if (d.mail.transport === 'log' && !loopback)
    problems.push(
      `dashboard.mail.transport: log prints sign-in codes and is for the demo only; it is refused because dashboard.host ${d.host} is not loopback`,
    );
  return problems;
}
