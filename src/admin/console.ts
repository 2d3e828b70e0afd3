import { readdirSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AUDIT_EVENTS } from './audit-query.js';

/** Where the console's files are: `console/` at the package root (next to `dist/` and `src/`). */
export const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

/**
 * The console's Content-Security-Policy: nothing but its own scripts, styles and API calls; no inline
 * script or style, no frames, no forms posted elsewhere.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
};

/** One rate-limit window as the console shows it. */
export interface ConsoleWindow {
  points: number;
  duration: number;
}

/**
 * What the console page reads at start: the configured tier names (for the tier pickers) and
 * their windows (a company's effective limits), the audit event names (the audit filter), and
 * whether the admin API runs without a token (loopback only: no sign-in screen).
 */
export interface ConsoleSettings {
  tiers: readonly string[];
  tierWindows?: Readonly<Record<string, readonly ConsoleWindow[]>>;
  tokenless?: boolean;
}

/** A Node request handler for `/console/...`: answers, or calls `next()` for other paths. */
export type ConsoleHandler = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

/**
 * Serves the operator console (plain HTML and ES modules, no build step) from memory: the files of
 * `dir` are read once here, so a request can only ever get one of them. `settings.json` is
 * generated from `settings`. Every answer carries the console CSP; a path outside the set is 404.
 *
 * @example app.use(createConsoleHandler({ tiers: ['free', 'standard'] }))
 */
export function createConsoleHandler(settings: ConsoleSettings, dir: string = CONSOLE_DIR): ConsoleHandler {
  const files = readConsoleFiles(dir);
  const generated = {
    tiers: settings.tiers,
    tierWindows: settings.tierWindows ?? {},
    auditEvents: AUDIT_EVENTS,
    tokenless: settings.tokenless === true,
  };
  files.set('settings.json', { type: TYPES['.json']!, body: Buffer.from(JSON.stringify(generated)) });
  // Without a token there is no sign-in: the page's first screen (static, shown before any script
  // runs) is the companies' one. The marker is the body's data-mode attribute.
  const index = files.get('index.html')!;
  if (generated.tokenless)
    index.body = Buffer.from(
      index.body.toString('utf8').replace('data-mode="token"', 'data-mode="tokenless"'),
    );
  return function serveConsole(req, res, next) {
    const path = (req.url ?? '/').split('?')[0]!;
    if (path !== '/console' && !path.startsWith('/console/')) return next();
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    res.setHeader('Cache-Control', 'no-cache');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return answer(res, 405, TYPES['.json']!, '{"error":"Method Not Allowed","details":"GET only"}');
    }
    if (path === '/console') {
      res.setHeader('Location', '/console/');
      return answer(res, 301, 'text/plain', '');
    }
    const name = path.slice('/console/'.length) || 'index.html';
    const file = files.get(name);
    if (!file) return answer(res, 404, TYPES['.json']!, '{"error":"Not Found","details":"No such file"}');
    answer(res, 200, file.type, req.method === 'HEAD' ? '' : file.body, file.body.length);
  };
}

function answer(res: ServerResponse, status: number, type: string, body: string | Buffer, length?: number) {
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  res.setHeader('Content-Length', length ?? Buffer.byteLength(body));
  res.end(body);
}

/**
 * Every servable file under `dir` (html, js, css), by its posix path relative to `dir`, read once
 * (the console's and the company dashboard's pages). Throws when `dir` has no index.html.
 */
export function readConsoleFiles(dir: string): Map<string, { type: string; body: Buffer }> {
  const out = new Map<string, { type: string; body: Buffer }>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (TYPES[extname(name)]) {
        out.set(relative(dir, p).split(sep).join('/'), {
          type: TYPES[extname(name)]!,
          body: readFileSync(p),
        });
      }
    }
  };
  walk(dir);
  if (!out.has('index.html')) throw new Error(`the page's files are missing: no index.html in ${dir}`);
  return out;
}

/** How the admin listener is set up, for {@link isConsoleOrigin}. */
export interface ConsoleOriginOptions {
  /** `admin.consoleOrigin`, if set. */
  origin: string | null;
  /** `admin.host`. */
  host: string;
  /** Whether the admin API runs without a token (loopback only). */
  tokenless: boolean;
}

/**
 * Whether a request's `Origin` may drive the admin API: only a same-origin request
 * (`Sec-Fetch-Site: same-origin`, which a page cannot forge) from an allow-listed origin — the
 * configured console origin (default `http://<admin.host>:<port>`), or, without a token, the loopback
 * origins with the admin port. An Origin that merely matches `Host` is not enough: after DNS
 * rebinding, a hostile page is same-origin with a name that resolves to the admin listener.
 */
export function isConsoleOrigin(
  origin: string,
  fetchSite: string | undefined,
  localPort: number | undefined,
  opts: ConsoleOriginOptions,
): boolean {
  if (fetchSite !== 'same-origin') return false;
  return allowedOrigins(localPort, opts).includes(origin.toLowerCase());
}

function allowedOrigins(localPort: number | undefined, opts: ConsoleOriginOptions): string[] {
  if (opts.origin !== null) {
    const configured = [opts.origin.toLowerCase()];
    return opts.tokenless ? [...configured, ...loopbackOrigins(localPort)] : configured;
  }
  const own = isWildcard(opts.host) || localPort === undefined ? [] : [origin(opts.host, localPort)];
  return opts.tokenless ? [...own, ...loopbackOrigins(localPort)] : own;
}

function loopbackOrigins(port: number | undefined): string[] {
  if (port === undefined) return [];
  return ['127.0.0.1', 'localhost', '::1'].map((h) => origin(h, port));
}

/** An http origin as browsers serialise it: IPv6 in brackets, no `:80`. */
const origin = (host: string, port: number) =>
  `http://${host.includes(':') ? `[${host}]` : host}${port === 80 ? '' : `:${port}`}`.toLowerCase();
const isWildcard = (host: string) => host === '0.0.0.0' || host === '::' || host === '[::]';
