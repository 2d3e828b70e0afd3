import express, {
  type ErrorRequestHandler,
  type Express,
  type Request,
  type RequestHandler,
  type Response,
} from 'express';
import helmet from 'helmet';
import { fileURLToPath } from 'node:url';
import { CONSOLE_DIR, readConsoleFiles } from '../admin/console.js';
import { adminErrorCode, isJsonMediaType } from '../admin/router.js';
import type { AdminResult } from '../admin/service.js';
import { safeMessage, sendError } from '../errors.js';
import type { Logger } from '../observability/logger.js';
import type { DashboardService, RetryAfter, SignedIn } from './service.js';

/** The dashboard page's files: `dashboard/` at the package root (next to `console/`). */
export const DASHBOARD_DIR = fileURLToPath(new URL('../../dashboard/', import.meta.url));

/**
 * The page's Content-Security-Policy: its own scripts, styles and API calls only; no inline script
 * or style, no plugin, no form posted elsewhere, and no page may frame it (clickjacking).
 */
export const DASHBOARD_CSP = {
  defaultSrc: ["'none'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'"],
  connectSrc: ["'self'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
};

export interface DashboardAppDeps {
  service: DashboardService;
  /** `dashboard.publicOrigin` (or `http://<loopback host>:<port>`): the one origin that may write. */
  origin: string;
  /** The active-key cap and the rotation age, shown on the page. */
  policy: { maxActiveKeys: number; rotationAgeDays: number };
  /** `server.trustedProxies`: whose `X-Forwarded-For` names the client (per-client limits). */
  trustedProxies: readonly string[];
  logger: Logger;
}

/**
 * The company dashboard (its own listener): the page (plain HTML and ES modules, strict CSP) and
 * its JSON API under `/api/`. A session is a random id in a `__Host-` cookie (HttpOnly, Secure,
 * SameSite=Strict), looked up in the store on every request. Writes need the page's own origin (`Origin` and
 * `Sec-Fetch-Site: same-origin`) and a JSON body.
 */
export function createDashboardApp(deps: DashboardAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('trust proxy', deps.trustedProxies.length ? [...deps.trustedProxies] : false);
  const secure = deps.origin.startsWith('https://');
  app.use(
    helmet({
      contentSecurityPolicy: { useDefaults: false, directives: DASHBOARD_CSP },
      strictTransportSecurity: secure,
      frameguard: { action: 'deny' },
      referrerPolicy: { policy: 'no-referrer' },
    }),
  );
  app.use(createPageHandler());
  const api = express.Router();
  api.use(refuseCrossSite(deps.origin));
  api.use(express.json({ limit: '16kb', strict: true, type: () => true }));
  addPublicRoutes(api, deps);
  api.use(requireSession(deps.service));
  addMemberRoutes(api, deps);
  app.use('/api', noStore, api);
  app.use((_req, res) => sendError(res, 'DASHBOARD_NOT_FOUND'));
  app.use(createErrorHandler(deps.logger));
  return app;
}

/**
 * The session cookie: `__Host-` (no Domain, Path=/, Secure: no subdomain can set or shadow it).
 * Browsers accept `Secure` cookies from loopback over plain HTTP too (a potentially trustworthy
 * origin), so the demo uses the same cookie.
 */
export const SESSION_COOKIE = '__Host-ng_session';

const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('Cache-Control', 'no-store');
  next();
};

/**
 * A browser's cross-site request never reaches the API (`Sec-Fetch-Site` other than `same-origin`
 * or `none`). A write (anything but GET/HEAD) needs `Origin` equal to the dashboard's own origin
 * and `Sec-Fetch-Site: same-origin`, and a JSON body: a form posted from elsewhere, a `text/plain`
 * "simple request" or a page after DNS rebinding (another origin) changes nothing.
 */
function refuseCrossSite(origin: string): RequestHandler {
  return function refuseCrossSite(req, res, next) {
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin' && site !== 'none')
      return sendError(res, 'DASHBOARD_CROSS_ORIGIN');
    if (req.method === 'GET' || req.method === 'HEAD') return next();
    if (req.headers.origin !== origin || site !== 'same-origin')
      return sendError(res, 'DASHBOARD_CROSS_ORIGIN');
    const hasBody = req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0';
    if (
      (hasBody || req.headers['transfer-encoding'] !== undefined) &&
      !isJsonMediaType(req.headers['content-type'])
    )
      return sendError(res, 'ADMIN_UNSUPPORTED_MEDIA_TYPE');
    next();
  };
}

/** The session id of the request's cookie, if it has exactly one. */
function sessionIdOf(req: Request): string | undefined {
  const found = (req.headers.cookie ?? '')
    .split(';')
    .map((c) => c.trim())
    .filter((c) => c.startsWith(`${SESSION_COOKIE}=`));
  return found.length === 1 ? found[0]!.slice(SESSION_COOKIE.length + 1) : undefined;
}

function setSessionCookie(res: Response, id: string, maxAgeS: number): void {
  res.setHeader(
    'Set-Cookie',
    `${SESSION_COOKIE}=${id}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=${maxAgeS}`,
  );
}

function addPublicRoutes(r: express.Router, deps: DashboardAppDeps): void {
  const svc = deps.service;
  r.get('/settings', (_req, res) => void res.json({ registration: svc.settings.registration }));
  r.post('/register', async (req, res) => reply(res, await svc.register(req.body, clientIp(req)), 202));
  r.post('/sign-in/code', async (req, res) =>
    reply(res, await svc.requestCode(req.body, clientIp(req)), 202),
  );
  r.post('/sign-in', async (req, res) => {
    const result = await svc.signIn(req.body, clientIp(req));
    if (!result.ok) return reply(res, result);
    // A new id at every sign-in: a session id planted before it (fixation) is dropped.
    await svc.signOut(sessionIdOf(req));
    setSessionCookie(res, result.value.sessionId, Math.floor(svc.settings.absoluteMs / 1000));
    res.json({ signedIn: true, expiresAt: result.value.expiresAt });
  });
  r.post('/sign-out', async (req, res) => {
    await svc.signOut(sessionIdOf(req));
    setSessionCookie(res, '', 0);
    res.json({ signedOut: true });
  });
}

/** Every later route needs a live session (`res.locals.member`); 401 otherwise. */
function requireSession(svc: DashboardService): RequestHandler {
  return async function requireSession(req, res, next) {
    try {
      const who = await svc.resolveSession(sessionIdOf(req));
      if (!who) return sendError(res, 'DASHBOARD_SIGN_IN_REQUIRED');
      res.locals.member = who;
      next();
    } catch (err) {
      next(err);
    }
  };
}

function addMemberRoutes(r: express.Router, deps: DashboardAppDeps): void {
  const svc = deps.service;
  const who = (res: Response) => res.locals.member as SignedIn;
  r.get('/me', (_req, res) => void res.json({ ...who(res), policy: deps.policy }));
  r.get('/keys', async (_req, res) => reply(res, await svc.listKeys(who(res))));
  r.post('/keys', async (req, res) => reply(res, await svc.createKey(who(res), req.body), 201));
  r.post('/keys/:id/rotate', async (req, res) =>
    reply(res, await svc.rotateKey(who(res), req.params.id!, req.body), 201),
  );
  r.delete('/keys/:id', async (req, res) => reply(res, await svc.revokeKey(who(res), req.params.id!)));
  r.get('/usage', async (_req, res) => reply(res, await svc.usage(who(res))));
  r.get('/members', async (_req, res) => reply(res, await svc.listMembers(who(res))));
  r.post('/members', async (req, res) => reply(res, await svc.inviteMember(who(res), req.body), 201));
  r.delete('/members/:email', async (req, res) =>
    reply(res, await svc.removeMember(who(res), req.params.email!)),
  );
  r.get('/activity', async (_req, res) => reply(res, await svc.activity(who(res))));
}

/** The client's address: the socket's, or from `X-Forwarded-For` through trusted proxies only. */
function clientIp(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? '-';
}

function reply<T>(res: Response, result: AdminResult<T> | RetryAfter, okStatus = 200): void {
  if (result.ok) return void res.status(okStatus).json(result.value);
  if ('retryAfterSeconds' in result) res.setHeader('Retry-After', String(result.retryAfterSeconds));
  sendError(res, result.code, result.details);
}

/** Serves `dashboard/` (and the console's DOM and chart helpers) from memory, GET and HEAD only. */
function createPageHandler(): RequestHandler {
  const files = readConsoleFiles(DASHBOARD_DIR);
  const shared = readConsoleFiles(CONSOLE_DIR);
  for (const name of ['js/dom.js', 'js/chart.js', 'style.css'])
    files.set(`shared/${name.replace('js/', '')}`, shared.get(name)!);
  return function servePage(req, res, next) {
    if (req.path.startsWith('/api/') || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
    const file = files.get(req.path === '/' ? 'index.html' : req.path.slice(1));
    if (!file) return next();
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Content-Type', file.type);
    res.setHeader('Content-Length', file.body.length);
    res.end(req.method === 'HEAD' ? undefined : file.body);
  };
}

function createErrorHandler(logger: Logger): ErrorRequestHandler {
  return function dashboardErrorHandler(err, _req, res, _next) {
    if (res.headersSent) return void res.destroy();
    const code = adminErrorCode(err);
    if (code === 'STORE_UNAVAILABLE' || code === 'INTERNAL')
      logger.error({ err: { message: safeMessage(err) }, code }, 'dashboard request failed');
    sendError(
      res,
      code,
      code === 'ADMIN_PAYLOAD_TOO_LARGE' ? 'Dashboard request bodies are limited to 16 KiB' : undefined,
    );
  };
}
