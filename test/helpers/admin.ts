import assert from 'node:assert/strict';
import { adminOpenApiDocument } from '../../src/admin/openapi.js';
import { ADMIN_OPERATIONS, errorBodySchema, findAdminOperation } from '../../src/admin/schemas.js';
import type { AdminService, CreatedKey } from '../../src/admin/service.js';
import type { Scope } from '../../src/store/types.js';
import { ADMIN_TOKEN } from './gateway.js';

/** What a test may set on the company it creates; every field has the admin API's default. */
export interface TestCompanyOptions {
  tier?: string;
  status?: 'active' | 'pending' | 'suspended';
  apiAccess?: boolean;
  /** The company's scopes (every route when left out). */
  scopes?: Scope[];
  /** Label of the key. */
  label?: string;
}

/**
 * The one way tests create a company and a key for it: through the gateway's own `AdminService`
 * (`t.gw.service`, or a service built on a bare store), so the records are exactly what the admin
 * API would write. Asserts that both writes succeeded and returns the create-key answer, whose
 * `key` is the plaintext.
 */
export async function createCompanyAndKey(
  service: AdminService,
  id: string,
  opts: TestCompanyOptions = {},
): Promise<CreatedKey> {
  const { label, ...company } = opts;
  const c = await service.createCompany({ id, tier: 'standard', ...company });
  assert.ok(c.ok, JSON.stringify(c));
  const k = await service.createKey(id, label === undefined ? {} : { label });
  assert.ok(k.ok, JSON.stringify(k));
  return k.value;
}

/** One admin API answer: the status, the raw text, and the body parsed for assertions. */
export interface AdminReply {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body (null when the body is not JSON), loosely typed for assertions. */
  body: Record<string, unknown> & Record<string, unknown>[];
  /** The same parsed body, for answers that are lists. */
  list: Record<string, unknown>[];
}

/** A call to the admin API: method, path, optional JSON body, or `raw` text sent as it is. */
export type AdminCall = (method: string, path: string, body?: unknown, raw?: string) => Promise<AdminReply>;

/**
 * The one admin API client of the tests: calls on 127.0.0.1:`port` with `Authorization: Bearer
 * <token>` (ADMIN_TOKEN by default; `null` sends no Authorization header) and a JSON content type.
 */
export function adminApi(port: number, token: string | null = ADMIN_TOKEN): AdminCall {
  return async (method, path, body, raw) => {
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (token !== null) headers.Authorization = `Bearer ${token}`;
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers,
      ...(raw !== undefined ? { body: raw } : body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = null;
    }
    const reply = {
      status: res.status,
      headers: res.headers,
      text,
      body: parsed as AdminReply['body'],
      list: parsed as AdminReply['list'],
    };
    assertDocumentedAnswer(method, path, reply);
    return reply;
  };
}

/** How many admin answers `assertDocumentedAnswer` checked in this process. */
export const documentChecks = { count: 0 };

/**
 * Every admin answer a test sees must be one the OpenAPI document describes: the status is listed
 * for the operation, the content type is the documented one, and the body parses with the zod
 * schema the document was generated from (strict: an undocumented field, such as a hash, fails).
 * An answer of no operation (an unknown path or method) must be an error body.
 */
export function assertDocumentedAnswer(
  method: string,
  path: string,
  reply: Pick<AdminReply, 'status' | 'headers' | 'text' | 'body'>,
): void {
  documentChecks.count++;
  const where = `${method} ${path} → ${reply.status}`;
  const head = method.toUpperCase() === 'HEAD';
  const op = findAdminOperation(head ? 'GET' : method, path.split('?')[0]!);
  if (!op) {
    assert.ok(reply.status >= 400, `${where}: a success from no documented operation`);
    assert.ok(errorBodySchema.safeParse(reply.body).success, `${where}: not an {error, details} body`);
    assert.equal(reply.headers.get('content-type')?.split(';')[0], 'application/json', where);
    // A method a documented path does not serve: 405 naming the methods it does (the document's).
    if (reply.status === 405) {
      const served = ADMIN_OPERATIONS.filter(
        (o) => findAdminOperation(o.method, path.split('?')[0]!) === o,
      ).flatMap((o) => (o.method === 'get' ? ['GET', 'HEAD'] : [o.method.toUpperCase()]));
      assert.deepEqual(reply.headers.get('allow')?.split(', ').sort(), served.sort(), `${where}: Allow`);
    }
    return;
  }
  const docPath = op.path.replace(/:([A-Za-z]+)/g, '{$1}');
  const documented = adminOpenApiDocument().paths?.[docPath]?.[op.method]?.responses?.[String(reply.status)];
  assert.ok(documented, `${where}: the OpenAPI document lists no such answer for ${op.operationId}`);
  const mediaType = Object.keys((documented as { content?: object }).content ?? {})[0] ?? '';
  assert.equal(reply.headers.get('content-type')?.split(';')[0], mediaType.split(';')[0], where);
  if (head) return; // GET's status and headers, without a body
  const ok = reply.status === op.ok.status;
  const other = op.answers?.find((a) => a.status === reply.status);
  const schema = ok ? op.ok.schema : (other?.schema ?? errorBodySchema);
  const r = schema.safeParse(ok && op.ok.text ? reply.text : reply.body);
  assert.ok(r.success, `${where}: the body does not match the document: ${r.error?.message}`);
}
