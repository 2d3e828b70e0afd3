import { maskUrlCredentials } from '../redact.js';
import { EXIT_FAIL, EXIT_USAGE, fail, type CliIo } from './io.js';
import type { AdminApiTarget, Answer, ApiSession } from './session.js';

/** localhost, 127.0.0.0/8 and ::1 as a URL's hostname spells them. */
const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/** How long one admin API call may take before the command fails (exit 1). */
const CALL_TIMEOUT_MS = 30_000;

/**
 * A session through a running gateway's admin API (`--admin-url`/`ADMIN_URL`): each command is one
 * call with `Authorization: Bearer <token>`, so the token's role applies (a 403 names the role it
 * lacks) and the audit trail names the token, not the OS user. Answers keep the admin API's
 * `{error, details}`, so they print and exit as on the store (400: exit 2; others: exit 1). Exit 2
 * for a URL that is not `http(s)://host[:port][/path]` or carries credentials; exit 1 when the API
 * cannot be reached. Uses Node's `fetch`; the token never appears in any output.
 */
export function openApiSession(target: AdminApiTarget, io: CliIo): ApiSession {
  const base = checkedUrl(target.url);
  const shown = maskUrlCredentials(base.origin + base.pathname.replace(/\/$/, ''));
  // The gateway warns when its admin API listens beyond loopback over plain HTTP; so does the client.
  if (target.token !== null && base.protocol === 'http:' && !LOOPBACK_HOST.test(base.hostname))
    io.stderr(`warning: the admin token goes to ${shown} over plain HTTP (admin.tls serves HTTPS)\n`);
  const call = <T>(method: string, path: string, body?: unknown, query?: Record<string, string>) =>
    callApi<T>(base, target.token, shown, { method, path, body, query });
  const id = encodeURIComponent;
  return {
    via: 'admin-api',
    actor: '',
    companies: {
      createCompany: (input) => call('POST', '/companies', input),
      getCompany: (companyId) => call('GET', `/companies/${id(companyId)}`),
      listCompanies: () => call('GET', '/companies'),
      updateCompany: (companyId, input) => call('PATCH', `/companies/${id(companyId)}`, input),
    },
    keys: {
      createKey: (companyId, input) => call('POST', `/companies/${id(companyId)}/keys`, input ?? {}),
      listKeys: (companyId) => call('GET', `/companies/${id(companyId)}/keys`),
      updateKey: (keyId, input) => call('PATCH', `/keys/${id(keyId)}`, input),
      revokeKey: (keyId) => call('DELETE', `/keys/${id(keyId)}`),
      rotateKey: (keyId, input) => call('POST', `/keys/${id(keyId)}/rotate`, input ?? {}),
    },
    audit: {
      // Every filter as a query parameter, as typed; the admin API checks them.
      readAudit: (o) =>
        call(
          'GET',
          '/audit',
          undefined,
          Object.fromEntries(
            Object.entries(o).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)]])),
          ),
        ),
    },
    usage: {
      readUsage: (companyId, query) => call('GET', `/companies/${id(companyId)}/usage`, undefined, query),
    },
    close: async () => undefined,
  };
}

/** `--admin-url` as a URL: http(s), no credentials (the token has its own place), no query. */
function checkedUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    fail(
      `--admin-url/ADMIN_URL: not a URL: ${maskUrlCredentials(text)} (e.g. http://127.0.0.1:8081)`,
      EXIT_USAGE,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    fail(`--admin-url/ADMIN_URL: must be http:// or https://, not ${url.protocol}`, EXIT_USAGE);
  if (url.username || url.password)
    fail(
      `--admin-url/ADMIN_URL: must not carry credentials (${maskUrlCredentials(text)}); put the token in --token-file or ADMIN_TOKEN`,
      EXIT_USAGE,
    );
  if (url.search || url.hash) fail('--admin-url/ADMIN_URL: must not have a query or a fragment', EXIT_USAGE);
  return url;
}

/**
 * One admin API call under `/admin/v1`: the JSON answer, or the error body with its status. An
 * answer that is not JSON (a proxy's error page) keeps its status, in the CLI's words. A network
 * failure or a time-out ends the command (exit 1), naming the URL and the cause.
 */
async function callApi<T>(
  base: URL,
  token: string | null,
  shown: string,
  req: { method: string; path: string; body?: unknown; query?: Record<string, string> | undefined },
): Promise<Answer<T>> {
  const url = new URL(`${base.pathname.replace(/\/$/, '')}/admin/v1${req.path}`, base);
  for (const [k, v] of Object.entries(req.query ?? {})) url.searchParams.set(k, v);
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (req.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, {
      method: req.method,
      headers,
      ...(req.body !== undefined ? { body: JSON.stringify(req.body) } : {}),
      // A redirect would carry the token elsewhere: refused, like any other surprise.
      redirect: 'error',
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
    text = await res.text();
  } catch (err) {
    fail(`cannot reach the admin API at ${shown}: ${causeOf(err)}`, EXIT_FAIL);
  }
  const body = parseJson(text);
  if (res.ok) return { ok: true, value: body as T };
  if (isErrorBody(body)) return { ok: false, status: res.status, error: body.error, details: body.details };
  return {
    ok: false,
    status: res.status,
    error: res.statusText || `HTTP ${res.status}`,
    details: `the admin API at ${shown} answered ${res.status} without an {error, details} body`,
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isErrorBody(v: unknown): v is { error: string; details: string } {
  const b = v as { error?: unknown; details?: unknown } | null;
  return typeof b?.error === 'string' && typeof b.details === 'string';
}

/** The reason a call failed: `ECONNREFUSED`, `timed out after 30 s`, a redirect refused. */
function causeOf(err: unknown): string {
  if (err instanceof Error && err.name === 'TimeoutError')
    return `no answer within ${CALL_TIMEOUT_MS / 1000} s`;
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return err instanceof Error ? err.message : String(err);
}
