import {
  extendZodWithOpenApi,
  OpenAPIRegistry,
  OpenApiGeneratorV31,
  type ResponseConfig,
  type RouteConfig,
} from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';
import { ERRORS, type ErrorCode } from '../errors.js';
import {
  ADMIN_OPERATIONS,
  auditEntrySchema,
  COMMON_ADMIN_ERRORS,
  companySchema,
  createdKeySchema,
  errorBodySchema,
  keyViewSchema,
  readinessSchema,
  rotatedKeySchema,
  type AdminOperation,
} from './schemas.js';

/** The generated document, as JSON (OpenAPI 3.1). */
export type OpenApiDocument = ReturnType<OpenApiGeneratorV31['generateDocument']>;

let cached: OpenApiDocument | undefined;

/**
 * The admin API as an OpenAPI 3.1 document, generated once from `ADMIN_OPERATIONS` and the zod
 * schemas that validate the requests (src/admin/schemas.ts). Each operation carries
 * `x-required-role` (`read`, `keys` or `admin`). Served at `GET /admin/v1/openapi.json`.
 */
export function adminOpenApiDocument(): OpenApiDocument {
  cached ??= generate();
  return cached;
}

function generate(): OpenApiDocument {
  // Adds `.openapi()` to zod's prototype: the generator needs it for parameters and references.
  extendZodWithOpenApi(z);
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'adminToken', {
    type: 'http',
    scheme: 'bearer',
    description: 'ADMIN_TOKEN (not needed when the admin API is bound to loopback without a token)',
  });
  const refs = new Map<z.ZodTypeAny, z.ZodTypeAny>([
    [companySchema, registry.register('Company', companySchema)],
    [keyViewSchema, registry.register('KeyView', keyViewSchema)],
    [createdKeySchema, registry.register('CreatedKey', createdKeySchema)],
    [rotatedKeySchema, registry.register('RotatedKey', rotatedKeySchema)],
    [auditEntrySchema, registry.register('AuditEntry', auditEntrySchema)],
    [errorBodySchema, registry.register('Error', errorBodySchema)],
    [readinessSchema, registry.register('Readiness', readinessSchema)],
  ]);
  const named = (s: z.ZodTypeAny): z.ZodTypeAny =>
    s instanceof z.ZodArray ? z.array(named(s.element as z.ZodTypeAny)) : (refs.get(s) ?? s);
  for (const op of ADMIN_OPERATIONS) registry.registerPath(routeOf(op, named));
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: {
      title: 'notify-gateway admin API',
      version: 'v1',
      description:
        'Companies, keys, audit, metrics and probes, on the admin port. Error answers are `{error, details}` ' +
        '(docs/errors.md); each operation names the role it needs in `x-required-role` (`none`: no token). ' +
        'Every request but the probes needs the token first (401). An unknown path is 404 ' +
        '`ADMIN_NOT_FOUND` for any role. A method a path does not serve, `OPTIONS` included, is 405 ' +
        '`ADMIN_METHOD_NOT_ALLOWED` with `Allow`. There is no CORS: the console is same-origin, and a ' +
        'request carrying another `Origin` (a preflight included) is 403 `ADMIN_BROWSER_REQUEST`. ' +
        'Bodies are `application/json` only (any case, parameters allowed, a `charset` only `utf-8`; ' +
        '`application/*+json` is refused, 415), and an operation that needs a body answers 400 naming what is missing without one. ' +
        'Under /admin/v1, each query parameter an operation lists at most once, as `name=value`; a repeated ' +
        'or bracketed one (`companyId[]=x`) or one it does not list is 400 `ADMIN_INVALID_REQUEST` naming it.',
    },
    security: [{ adminToken: [] }],
  });
}

function routeOf(op: AdminOperation, named: (s: z.ZodTypeAny) => z.ZodTypeAny): RouteConfig {
  const params = [...op.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
  const route: RouteConfig = {
    method: op.method,
    path: op.path.replace(/:([A-Za-z]+)/g, '{$1}'),
    operationId: op.operationId,
    summary: op.summary,
    'x-required-role': op.role,
    // The probes answer without a token (kubelet and load balancers hold no secret).
    ...(op.role === 'none' ? { security: [] } : {}),
    request: {
      ...(params.length ? { params: z.object(Object.fromEntries(params.map((p) => [p, z.string()]))) } : {}),
      ...(op.query ? { query: op.query } : {}),
      ...(op.body
        ? {
            body: {
              required: !op.bodyOptional,
              content: { 'application/json': { schema: op.body } },
            },
          }
        : {}),
    },
    responses: {
      [op.ok.status]: {
        description: 'Success',
        content: { [op.ok.text ?? 'application/json']: { schema: named(op.ok.schema) } },
      },
      ...Object.fromEntries(
        (op.answers ?? []).map((a) => [
          a.status,
          { description: a.description, content: { 'application/json': { schema: named(a.schema) } } },
        ]),
      ),
      ...errorResponses(
        op.role === 'none' ? op.errors : [...COMMON_ADMIN_ERRORS, ...op.errors],
        named(errorBodySchema),
      ),
    },
  };
  return route;
}

/** One response per status, naming the registry codes that answer it. */
function errorResponses(codes: readonly ErrorCode[], schema: z.ZodTypeAny): Record<string, ResponseConfig> {
  const byStatus = new Map<number, Set<ErrorCode>>();
  for (const code of codes) {
    const status = ERRORS[code].status;
    byStatus.set(status, (byStatus.get(status) ?? new Set()).add(code));
  }
  const out: Record<string, ResponseConfig> = {};
  for (const [status, set] of [...byStatus].sort((a, b) => a[0] - b[0])) {
    out[status] = {
      description: [...set].map((c) => `${c}: ${ERRORS[c].details}`).join('; '),
      content: { 'application/json': { schema } },
    };
  }
  return out;
}
