import { BlockList, isIP } from 'node:net';
import express, { type ErrorRequestHandler, type Express, type RequestHandler, type Response } from 'express';
import helmet from 'helmet';
import { safeMessage, sendError, type ErrorCode } from '../errors.js';
import type { MetricsReader } from '../observability/cluster-metrics.js';
import type { Logger } from '../observability/logger.js';
import type { Readiness } from '../observability/readiness.js';
import { isStoreOutage } from '../store/types.js';
import {
  createConsoleHandler,
  isConsoleOrigin,
  type ConsoleOriginOptions,
  type ConsoleSettings,
} from './console.js';
import type { WebhookAdmin } from '../events/admin.js';
import { adminOpenApiDocument } from './openapi.js';
import type { AdminResult, AdminService } from './service.js';
import { adminIdentities, hasRole, identify, type AdminIdentity, type AdminTokenEntry } from './roles.js';
import {
  ADMIN_OPERATIONS,
  allowedMethods,
  findQueryProblems,
  isQueryChecked,
  missingBodyDetails,
  type AdminOperation,
  type UpstreamsView,
} from './schemas.js';
import { queryKeyUsage, queryUsage, type UsageQueryDeps } from './usage-query.js';

export interface AdminAppDeps {
  service: AdminService;
  /** Served over HTTPS (`admin.tls`): only then is `Strict-Transport-Security` sent. */
  tls?: boolean;
  /** Bearer token (name `admin`, role `admin`); `null` with no `tokens` only when bound to loopback (server.ts enforces it). */
  token: string | null;
  /** More tokens, each with a name and a role, by SHA-256 (`admin.tokens`, `ADMIN_TOKENS`). */
  tokens?: readonly AdminTokenEntry[];
  /** Prometheus text for `/metrics` (this process, or all workers under `--workers`). */
  readMetrics: MetricsReader;
  logger: Logger;
  /** The operator console at `/console/` (`admin.console`), or absent/null when it is off. */
  console?: {
    origin: string | null;
    host: string;
    tiers: readonly string[];
    tierWindows?: ConsoleSettings['tierWindows'];
  } | null;
  /** Usage counts for `GET /companies/:id/usage`; null or absent: usage is off (404). */
  usage?: UsageQueryDeps | null;
  /** Readiness behind the admin port's `/readyz` (the probes are in the OpenAPI document: always served). */
  ready: () => Promise<Readiness>;
  /** The webhook routes (src/events/admin.ts); null or absent: events are off (404). */
  webhooks?: WebhookAdmin | null;
  /** The routes' pools for `GET /admin/v1/upstreams` (absent: an empty list). */
  upstreams?: { view(): UpstreamsView };
  /** Registrations and members of the company dashboard; null or absent: the dashboard is off (404). */
  dashboard?: DashboardAdmin | null;
}

/** What the admin API needs of the company dashboard (src/dashboard/service.ts `DashboardService`). */
export interface DashboardAdmin {
  listRegistrations(): Promise<AdminResult<unknown[]>>;
  decideRegistration(
    id: string,
    decision: 'approved' | 'rejected',
    actor: string,
  ): Promise<AdminResult<unknown>>;
  operatorListMembers(companyId: string): Promise<AdminResult<unknown[]>>;
  operatorInvite(companyId: string, input: unknown, actor: string): Promise<AdminResult<unknown>>;
  operatorRemove(companyId: string, email: string, actor: string): Promise<AdminResult<unknown>>;
}

/**
 * The admin API (its own port): companies, keys, audit, and Prometheus `/metrics`. Every route
 * but the probes needs `Authorization: Bearer <ADMIN_TOKEN>` when a token is set (401 first), then
 * its role (403); an unknown path is 404 for any role, a method a path does not serve 405 with
 * `Allow`. Bodies are JSON, validated, and answered in the spec's `{error, details}` shape on failure.
 * Every route is one of `ADMIN_OPERATIONS` (the OpenAPI document): registering another throws.
 */
export function createAdminApp(deps: AdminAppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  // HSTS only over HTTPS (RFC 6797 §7.2); server.ts serves the admin API over TLS with admin.tls.
  app.use(helmet({ strictTransportSecurity: false }));
  if (deps.tls) app.use(hstsHeader);
  const identities = adminIdentities(deps.token, deps.tokens);
  // The console's static files need no token (the page asks for it) and set their own CSP.
  const consoleOpts = deps.console
    ? { origin: deps.console.origin, host: deps.console.host, tokenless: identities.length === 0 }
    : null;
  if (deps.console) {
    const { tiers, tierWindows } = deps.console;
    app.use(createConsoleHandler({ tiers, tierWindows, tokenless: identities.length === 0 }));
  }
  app.use(function noStore(_req, res, next) {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  app.use(createRefuseBrowsers(identities.length ? 'set' : null, consoleOpts));
  addProbes(app, deps.ready, identities);
  app.use(createRequireToken(identities));
  app.use(refuseUnservedMethods);
  app.use(
    express.json({
      limit: '64kb',
      strict: true,
      // How many bytes the body had: an empty body parses as {}, but is answered as a missing one.
      verify: (_req, res, buf) => void ((res as unknown as Response).locals.bodyBytes = buf.length),
    }),
  );

  app.get('/metrics', guard('get', '/metrics'), async (_req, res) => {
    const m = await deps.readMetrics();
    res.setHeader('Content-Type', m.contentType);
    res.end(m.text);
  });
  app.get('/admin/v1/upstreams', guard('get', '/admin/v1/upstreams'), (_req, res) => {
    res.json(deps.upstreams?.view() ?? []);
  });
  app.use('/admin/v1', createAdminRoutes(deps.service, deps.usage ?? null));
  app.use('/admin/v1', createWebhookRoutes(deps.webhooks ?? null));
  app.use('/admin/v1', createDashboardRoutes(deps.dashboard ?? null));

  app.use((_req, res) => sendError(res, 'ADMIN_NOT_FOUND'));
  app.use(createAdminErrorHandler(deps.logger));
  return app;
}

/** The token of `Authorization: Bearer <token>`, if the header has that shape. */
function bearerOf(req: { headers: { authorization?: string | undefined } }): string | undefined {
  const auth = req.headers.authorization;
  return typeof auth === 'string' && /^Bearer /i.test(auth) ? auth.slice(7).trim() : undefined;
}

/**
 * `GET|HEAD /healthz` and `/readyz` on the admin port, before the token check: probes (kubelet,
 * load balancers) cannot hold a secret. With the token (or on a tokenless loopback admin API)
 * `/readyz` answers `{status, checks, degraded}`; without it the status only, as on the public port.
 * Other methods go on to the token check, then 405.
 */
function addProbes(
  app: Express,
  ready: () => Promise<Readiness>,
  identities: readonly AdminTokenEntry[],
): void {
  app.get('/healthz', guard('get', '/healthz'), (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', guard('get', '/readyz'), async (req, res, next) => {
    try {
      const r = await ready();
      const detailed = identities.length === 0 || identify(bearerOf(req), identities) !== null;
      const body = detailed
        ? { status: r.status, checks: r.checks, degraded: r.degraded }
        : { status: r.status };
      res.status(r.ok ? 200 : 503).json(body);
    } catch (err) {
      next(err);
    }
  });
}

/**
 * The handler every route starts with, from its entry in `ADMIN_OPERATIONS` (so its role from
 * `ADMIN_ROUTE_ROLES`): the role check (403 `ADMIN_FORBIDDEN`), then, for an operation that takes a
 * body, the body check. A route that is not in the table cannot be registered (this throws), so
 * the router and the OpenAPI document cannot drift apart, and no route goes unchecked.
 */
function guard(method: AdminOperation['method'], path: string): RequestHandler<Record<string, string>> {
  const op = ADMIN_OPERATIONS.find((o) => o.method === method && o.path === path);
  if (!op) throw new Error(`admin route ${method.toUpperCase()} ${path} is not in ADMIN_OPERATIONS`);
  const need = op.role;
  const missing = op.body ? missingBodyDetails(op.body) : '';
  const queryNames = isQueryChecked(op) ? Object.keys(op.query?.shape ?? {}) : null;
  return function adminGuard(req, res, next) {
    if (need !== 'none') {
      const who = res.locals.admin as AdminIdentity;
      if (!hasRole(who.role, need))
        return sendError(
          res,
          'ADMIN_FORBIDDEN',
          `this route needs the ${need} role; this token has ${who.role}`,
        );
    }
    // Each declared parameter once, as name=value; anything else is refused, never ignored.
    if (queryNames) {
      const problems = findQueryProblems(req.query as Record<string, unknown>, queryNames);
      if (problems.length) return sendError(res, 'ADMIN_INVALID_REQUEST', problems.join('; '));
    }
    if (op.body) {
      // The body must be a JSON object. Absent (or empty) where one is required: 400 naming what
      // is missing (`body: a JSON object is required; id: Required`); an optional one may be absent.
      const body: unknown = req.body;
      if (isEmptyBody(req, res)) {
        if (!op.bodyOptional) return sendError(res, 'ADMIN_INVALID_REQUEST', missing);
      } else if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return sendError(res, 'ADMIN_INVALID_REQUEST', 'body: must be a JSON object');
      }
    }
    next();
  };
}

/** No body was sent, or an empty one (which the JSON parser turns into `{}`). */
function isEmptyBody(req: express.Request, res: Response): boolean {
  return req.body === undefined || res.locals.bodyBytes === 0;
}

/**
 * A method that a documented path does not serve (`PUT /admin/v1/keys/:keyId`, `OPTIONS` anywhere)
 * is 405 `ADMIN_METHOD_NOT_ALLOWED` with `Allow`, before Express's own automatic `OPTIONS` answer
 * (text/plain) can be made; `OPTIONS` on an unknown path is 404 here too. No CORS: the console is
 * same-origin, and a cross-origin preflight carries `Origin`, refused (403) before this.
 */
function refuseUnservedMethods(req: express.Request, res: Response, next: express.NextFunction): void {
  const allowed = allowedMethods(req.path);
  if (allowed.includes(req.method)) return next();
  if (allowed.length > 0) {
    res.setHeader('Allow', allowed.join(', '));
    return sendError(res, 'ADMIN_METHOD_NOT_ALLOWED');
  }
  if (req.method === 'OPTIONS') return sendError(res, 'ADMIN_NOT_FOUND');
  next();
}

/** Whether the request carries a body: a non-zero `Content-Length`, or `Transfer-Encoding`. */
function hasBody(req: { headers: express.Request['headers'] }): boolean {
  return req.headers['content-length'] !== undefined
    ? req.headers['content-length'] !== '0'
    : req.headers['transfer-encoding'] !== undefined;
}

/**
 * Whether a `Content-Type` is `application/json` in UTF-8: exactly that media type, in any case,
 * with or without parameters; a `charset` parameter, if there is one, must be `utf-8` (any case,
 * quoted or not) and given once. Not `application/json-patch+json`, `application/jsonx` or any
 * other `application/*+json`: the admin API parses plain JSON only, so those are 415. Nor
 * `charset=utf-16` (or `utf-32`, `utf-7`, `utf8`, `iso-8859-1`, an empty one): JSON is UTF-8 (RFC
 * 8259 §8.1), and a body declared otherwise is refused rather than read as something it is not.
 */
export function isJsonMediaType(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const [type = '', ...params] = contentType.split(';');
  if (type.trim().toLowerCase() !== 'application/json') return false;
  const charsets = params.filter((p) => p.split('=')[0]!.trim().toLowerCase() === 'charset');
  if (charsets.length === 0) return true;
  if (charsets.length > 1) return false;
  const value = charsets[0]!.slice(charsets[0]!.indexOf('=') + 1).trim();
  const unquoted = /^"(.*)"$/.exec(value)?.[1] ?? value;
  return unquoted.toLowerCase() === 'utf-8';
}

/**
 * `Authorization: Bearer <token>` on every request, unless no token is set (loopback only: the
 * caller is `admin`). The caller's identity goes to `res.locals.admin` (actor of audit entries).
 */
function createRequireToken(identities: readonly AdminTokenEntry[]): RequestHandler {
  return function requireToken(req, res, next) {
    if (identities.length === 0) {
      res.locals.admin = { name: 'admin', role: 'admin' } satisfies AdminIdentity;
      return next();
    }
    const who = identify(bearerOf(req), identities);
    if (!who) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="notify-gateway-admin"');
      return sendError(res, 'ADMIN_UNAUTHORIZED');
    }
    res.locals.admin = who;
    next();
  };
}

/** The audit trail's actor for this request: the admin token's name. */
function actorOf(res: Response): string {
  return (res.locals.admin as AdminIdentity).name;
}

/**
 * Browsers must not be able to drive the admin API: a page could POST a `text/plain` "simple
 * request" without a preflight, or reach a loopback admin API through DNS rebinding. So no
 * browser-marked requests (but the console's own, see `isConsoleOrigin`), JSON bodies only, and
 * (tokenless, loopback only) loopback Host names.
 */
function createRefuseBrowsers(
  token: string | null,
  consoleOpts: ConsoleOriginOptions | null,
): RequestHandler {
  return function refuseBrowsers(req, res, next) {
    const site = req.headers['sec-fetch-site'];
    const origin = req.headers.origin;
    // The console's own page may write: Origin allow-listed and Sec-Fetch-Site: same-origin.
    const consoleWrite =
      consoleOpts !== null &&
      origin !== undefined &&
      isConsoleOrigin(origin, site as string | undefined, req.socket.localPort, consoleOpts);
    if (
      (origin !== undefined && !consoleWrite) ||
      (typeof site === 'string' && site !== 'none' && site !== 'same-origin')
    ) {
      return sendError(res, 'ADMIN_BROWSER_REQUEST');
    }
    if (token === null && !isLoopbackHost(req.headers.host)) return sendError(res, 'ADMIN_LOOPBACK_ONLY');
    if (hasBody(req) && !isJsonMediaType(req.headers['content-type']))
      return sendError(res, 'ADMIN_UNSUPPORTED_MEDIA_TYPE');
    next();
  };
}

/** The `/admin/v1` routes: each calls the service and answers its result. */
function createAdminRoutes(service: AdminService, usage: UsageQueryDeps | null): express.Router {
  const r = express.Router();
  const v1 = (method: AdminOperation['method'], path: string) => guard(method, `${V1}${path}`);
  r.post('/companies', v1('post', '/companies'), async (req, res) =>
    reply(res, await service.createCompany(req.body, actorOf(res)), 201),
  );
  r.get('/companies', v1('get', '/companies'), async (_req, res) =>
    reply(res, await service.listCompanies()),
  );
  r.get('/companies/:id', v1('get', '/companies/:id'), async (req, res) =>
    reply(res, await service.getCompany(req.params.id!)),
  );
  r.patch('/companies/:id', v1('patch', '/companies/:id'), async (req, res) =>
    reply(res, await service.updateCompany(req.params.id!, req.body, actorOf(res))),
  );
  r.post('/companies/:id/keys', v1('post', '/companies/:id/keys'), async (req, res) =>
    reply(res, await service.createKey(req.params.id!, bodyOrEmpty(req, res), actorOf(res)), 201, true),
  );
  r.get('/companies/:id/usage', v1('get', '/companies/:id/usage'), async (req, res) =>
    reply(res, await queryUsage(service, usage, req.params.id!, req.query)),
  );
  r.get('/companies/:id/keys', v1('get', '/companies/:id/keys'), async (req, res) =>
    reply(res, await service.listKeys(req.params.id!)),
  );
  r.get('/keys/:keyId', v1('get', '/keys/:keyId'), async (req, res) =>
    reply(res, await service.getKey(req.params.keyId!)),
  );
  r.patch('/keys/:keyId', v1('patch', '/keys/:keyId'), async (req, res) =>
    reply(res, await service.updateKey(req.params.keyId!, req.body, actorOf(res))),
  );
  r.delete('/keys/:keyId', v1('delete', '/keys/:keyId'), async (req, res) =>
    reply(res, await service.revokeKey(req.params.keyId!, actorOf(res))),
  );
  r.post('/keys/:keyId/rotate', v1('post', '/keys/:keyId/rotate'), async (req, res) =>
    reply(res, await service.rotateKey(req.params.keyId!, bodyOrEmpty(req, res), actorOf(res)), 201, true),
  );
  r.get('/audit', v1('get', '/audit'), async (req, res) => {
    // Each at most once, as a string (the guard checked); the values by the service.
    const q = req.query as Record<string, string | undefined>;
    // An empty company id is refused here, not read as "every company" (the service's meaning).
    if (q.companyId === '') return sendError(res, 'ADMIN_INVALID_REQUEST', 'companyId: must be a company id');
    reply(res, await service.readAudit(q));
  });
  r.get('/audit/export', v1('get', '/audit/export'), async (req, res) => {
    const pages = service.exportAudit(req.query as Record<string, string | undefined>);
    if (!pages.ok) return reply(res, pages);
    await writeJsonLines(res, pages.value);
  });
  r.get('/whoami', v1('get', '/whoami'), (_req, res) => {
    const { name, role } = res.locals.admin as AdminIdentity;
    res.json({ name, role });
  });
  r.get('/keys', v1('get', '/keys'), async (req, res) =>
    reply(res, await service.findKeys(req.query.prefix)),
  );
  r.get('/keys/:keyId/usage', v1('get', '/keys/:keyId/usage'), async (req, res) =>
    reply(res, await queryKeyUsage(service, usage, req.params.keyId!, req.query)),
  );
  r.get('/openapi.json', v1('get', '/openapi.json'), (_req, res) => void res.json(adminOpenApiDocument()));
  return r;
}

const V1 = '/admin/v1';

/** The webhook routes: each calls the webhook admin (404 `ADMIN_NOT_FOUND` when events are off). */
function createWebhookRoutes(hooks: WebhookAdmin | null): express.Router {
  const r = express.Router();
  const v1 = (method: AdminOperation['method'], path: string) => guard(method, `${V1}${path}`);
  const off = (res: Response) => sendError(res, 'ADMIN_NOT_FOUND', 'events are off (events.enabled: false)');
  r.get('/webhooks', v1('get', '/webhooks'), (_req, res) =>
    hooks ? reply(res, hooks.listGatewayWebhooks()) : off(res),
  );
  r.get('/webhooks/deliveries', v1('get', '/webhooks/deliveries'), async (req, res) =>
    hooks ? reply(res, await hooks.listDeliveries(req.query as Record<string, unknown>)) : off(res),
  );
  r.post(
    '/webhooks/deliveries/:deliveryId/retry',
    v1('post', '/webhooks/deliveries/:deliveryId/retry'),
    async (req, res) =>
      hooks ? reply(res, await hooks.retryDelivery(req.params.deliveryId!, actorOf(res))) : off(res),
  );
  r.get('/companies/:id/webhooks', v1('get', '/companies/:id/webhooks'), async (req, res) =>
    hooks ? reply(res, await hooks.listCompanyWebhooks(req.params.id!)) : off(res),
  );
  r.post('/companies/:id/webhooks', v1('post', '/companies/:id/webhooks'), async (req, res) =>
    hooks
      ? reply(res, await hooks.createCompanyWebhook(req.params.id!, req.body, actorOf(res)), 201, true)
      : off(res),
  );
  r.delete(
    '/companies/:id/webhooks/:webhookId',
    v1('delete', '/companies/:id/webhooks/:webhookId'),
    async (req, res) =>
      hooks
        ? reply(res, await hooks.deleteCompanyWebhook(req.params.id!, req.params.webhookId!, actorOf(res)))
        : off(res),
  );
  return r;
}

/** Registrations and members of the company dashboard (404 `ADMIN_NOT_FOUND` when it is off). */
function createDashboardRoutes(d: DashboardAdmin | null): express.Router {
  const r = express.Router();
  const v1 = (method: AdminOperation['method'], path: string) => guard(method, `${V1}${path}`);
  const off = (res: Response) =>
    sendError(res, 'ADMIN_NOT_FOUND', 'the company dashboard is off (dashboard.enabled: false)');
  r.get('/registrations', v1('get', '/registrations'), async (_req, res) =>
    d ? reply(res, await d.listRegistrations()) : off(res),
  );
  for (const [verb, decision] of [
    ['approve', 'approved'],
    ['reject', 'rejected'],
  ] as const)
    r.post(`/registrations/:id/${verb}`, v1('post', `/registrations/:id/${verb}`), async (req, res) =>
      d ? reply(res, await d.decideRegistration(req.params.id!, decision, actorOf(res))) : off(res),
    );
  r.get('/companies/:id/members', v1('get', '/companies/:id/members'), async (req, res) =>
    d ? reply(res, await d.operatorListMembers(req.params.id!)) : off(res),
  );
  r.post('/companies/:id/members', v1('post', '/companies/:id/members'), async (req, res) =>
    d ? reply(res, await d.operatorInvite(req.params.id!, req.body, actorOf(res)), 201) : off(res),
  );
  r.delete(
    '/companies/:id/members/:email',
    v1('delete', '/companies/:id/members/:email'),
    async (req, res) =>
      d ? reply(res, await d.operatorRemove(req.params.id!, req.params.email!, actorOf(res))) : off(res),
  );
  return r;
}

/**
 * Streams pages of entries as JSON lines (`application/x-ndjson`), one write per page, waiting for
 * the client to take each (memory: one page). A store failure after the first line cuts the
 * answer (the client sees it end without its last chunk), so a partial export is never mistaken
 * for a whole one; before it, the error handler answers.
 */
async function writeJsonLines(res: Response, pages: AsyncIterable<readonly object[]>): Promise<void> {
  const iterator = pages[Symbol.asyncIterator]();
  let next = await iterator.next();
  res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
  try {
    while (!next.done) {
      const text = next.value.map((e) => JSON.stringify(e)).join('\n') + '\n';
      if (!res.write(text)) await new Promise((resolve) => res.once('drain', resolve));
      if (res.destroyed) return void (await iterator.return?.());
      next = await iterator.next();
    }
    res.end();
  } catch {
    res.destroy();
  }
}

/** An optional body: what was sent, or `{}` when nothing (or nothing but an empty body) was. */
function bodyOrEmpty(req: express.Request, res: Response): unknown {
  return isEmptyBody(req, res) ? {} : (req.body as unknown);
}

/** Thrown errors become registry answers; store outages and bugs are also logged (masked message). */
function createAdminErrorHandler(logger: Logger): ErrorRequestHandler {
  return function adminErrorHandler(err, _req, res, _next) {
    if (res.headersSent) return void res.destroy();
    const code = adminErrorCode(err);
    if (ERRORS_LOGGED.has(code)) {
      logger.error(
        { err: { message: safeMessage(err), type: err instanceof Error ? err.name : typeof err }, code },
        'admin request failed',
      );
    }
    sendError(res, code);
  };
}

const ERRORS_LOGGED: ReadonlySet<ErrorCode> = new Set(['STORE_UNAVAILABLE', 'INTERNAL']);

/**
 * The registry code for an error thrown while serving an admin request: body-parser's client
 * errors keep their 4xx meaning; a store outage is a 503 (retry later); anything else is a bug or
 * a refused store command, so a 500, never a 503 that would invite blind retries.
 */
export function adminErrorCode(err: unknown): ErrorCode {
  const e = err as { status?: unknown; type?: unknown } | null;
  const status = typeof e?.status === 'number' ? e.status : 500;
  if (e?.type === 'entity.parse.failed') return 'ADMIN_INVALID_JSON';
  if (status === 413) return 'ADMIN_PAYLOAD_TOO_LARGE';
  if (status === 415) return 'ADMIN_UNSUPPORTED_MEDIA_TYPE';
  if (status >= 400 && status < 500) return 'BAD_REQUEST';
  return isStoreOutage(err) ? 'STORE_UNAVAILABLE' : 'INTERNAL';
}

function reply<T>(res: Response, result: AdminResult<T>, okStatus = 200, secret = false): void {
  if (secret) res.setHeader('Cache-Control', 'no-store');
  if (result.ok) res.status(okStatus).json(result.value);
  else sendError(res, result.code, result.details);
}

/** 127.0.0.0/8 and ::1; `BlockList` also matches them written as IPv4-mapped IPv6 (`::ffff:127.0.0.1`). */
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * Whether a bare host name or address is loopback: `localhost`, `127.0.0.0/8`, `::1` in any
 * spelling (`0:0:0:0:0:0:0:1`), and their IPv4-mapped forms (`::ffff:127.0.0.1`, `::ffff:7f00:1`).
 */
export function isLoopbackName(name: string): boolean {
  if (name.toLowerCase() === 'localhost') return true;
  const family = isIP(name);
  return family !== 0 && LOOPBACK.check(name, family === 6 ? 'ipv6' : 'ipv4');
}

/** The same for a `Host` header value (`name[:port]`, `[v6][:port]`). */
function isLoopbackHost(host: string | undefined): boolean {
  if (!host) return false;
  const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
  return isLoopbackName(name);
}

/** `Strict-Transport-Security` for an admin API served over HTTPS (helmet's default value). */
const hstsHeader: RequestHandler = (_req, res, next) => {
  res.setHeader('Strict-Transport-Security', 'max-age=31536000; includeSubDomains');
  next();
};
