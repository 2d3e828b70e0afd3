import { holdsKeyMaterial, ID_PATTERN } from '../config/field-patterns.js';
import { parseInstant, TIMESTAMP_PATTERN } from '../time.js';
import type { AuditEntry, AuditQuery, KeyStore } from '../store/types.js';

/**
 * Every event the audit trail records, in the order the console lists them. `GET
 * /admin/v1/audit?event=` takes these names; test/unit/admin/audit-query.test.ts fails when code
 * writes an event that is not listed here.
 */
export const AUDIT_EVENTS = [
  'company.created',
  'company.updated',
  'key.created',
  'key.rotated',
  'key.updated',
  'key.revoked',
  'key.expired',
  'key.exposed',
  'webhook.created',
  'webhook.deleted',
  'webhook.retried',
  'registration.approved',
  'registration.rejected',
  'member.added',
  'member.removed',
  'member.signed_in',
] as const;

/** The audit query as the admin API and the CLI receive it: strings as sent, or absent. */
export interface AuditQueryInput {
  limit?: unknown;
  companyId?: string;
  /** Comma-separated event names (`key.revoked,key.exposed`). */
  event?: unknown;
  from?: unknown;
  to?: unknown;
  before?: unknown;
  after?: unknown;
}

/** Most entries one answer holds. */
export const AUDIT_MAX_LIMIT = 1000;

/**
 * Validates an audit query into the store's `AuditQuery`: `limit` a whole number ≥ 1 (capped at
 * 1000, default 100), `companyId` a company id, `event` known event names separated by commas,
 * `from`/`to` UTC timestamps or dates (`from` before `to`), `before` or `after` (not both) an entry
 * id from an earlier answer. A problem names the parameter and never echoes the value (a key pasted
 * by mistake must not come back in a body or a log line). Absent or empty filters are left out.
 */
export function parseAuditQuery(
  input: AuditQueryInput,
  defaultLimit = 100,
): { ok: true; query: AuditQuery } | { ok: false; details: string } {
  const limit = auditLimit(input.limit, defaultLimit);
  if (limit === null)
    return {
      ok: false,
      details: `limit: must be a whole number ≥ 1 (at most ${AUDIT_MAX_LIMIT} entries are returned)`,
    };
  const query: AuditQuery = { limit };
  const problems: string[] = [];
  const text = (name: keyof AuditQueryInput): string | undefined => {
    const v = input[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') problems.push(`${name}: must be given once, as ${name}=value`);
    return typeof v === 'string' ? v : undefined;
  };
  const companyId = text('companyId');
  if (companyId !== undefined) {
    // An empty or malformed company id is refused, not read as "every company".
    if (ID_PATTERN.test(companyId) && !holdsKeyMaterial(companyId)) query.companyId = companyId;
    else problems.push('companyId: must be a company id (1-64 letters, digits, ".", "_" or "-")');
  }
  const event = text('event');
  if (event !== undefined) {
    const names = event.split(',');
    const known: readonly string[] = AUDIT_EVENTS;
    if (names.length > AUDIT_EVENTS.length || !names.every((n) => known.includes(n)))
      problems.push(`event: must be one or more of ${AUDIT_EVENTS.join(', ')}, separated by commas`);
    else query.events = [...new Set(names)];
  }
  for (const name of ['from', 'to'] as const) {
    const v = text(name);
    if (v === undefined) continue;
    const at = instantOf(v);
    if (at === null)
      problems.push(`${name}: must be a UTC timestamp YYYY-MM-DDTHH:MM:SSZ or a date YYYY-MM-DD`);
    else query[name] = at;
  }
  if (query.from !== undefined && query.to !== undefined && query.from >= query.to)
    problems.push('from: must be before to');
  for (const name of ['before', 'after'] as const) {
    const v = text(name);
    if (v === undefined) continue;
    if (CURSOR.test(v)) query[name] = v;
    else problems.push(`${name}: must be the id of an audit entry (digits, or digits-digits)`);
  }
  if (query.before !== undefined && query.after !== undefined)
    problems.push('before: give before (older entries) or after (newer entries), not both');
  return problems.length ? { ok: false, details: problems.join('; ') } : { ok: true, query };
}

/** An entry id: the memory store's counter or a Redis stream id. */
const CURSOR = /^\d{1,20}(?:-\d{1,20})?$/;
const DATE_PATTERN = /^\d{4}-\d{2}-\d{2}$/;

/** A timestamp or a date (midnight UTC), as the stored `at` spells it; null when it is neither. */
function instantOf(v: string): string | null {
  const ts = DATE_PATTERN.test(v) ? `${v}T00:00:00Z` : v;
  return TIMESTAMP_PATTERN.test(ts) && parseInstant(ts) !== null ? ts : null;
}

/**
 * The `limit`: a whole number ≥ 1 (a query string's digits or a number), capped at 1000;
 * `fallback` when absent; null when it is anything else (`abc`, `0`, `1.5`, a repeated parameter).
 */
function auditLimit(v: unknown, fallback: number): number | null {
  if (v === undefined) return fallback;
  const n = typeof v === 'string' && /^\d{1,16}$/.test(v) ? Number(v) : typeof v === 'number' ? v : NaN;
  return Number.isInteger(n) && n >= 1 ? Math.min(n, AUDIT_MAX_LIMIT) : null;
}

/** Entries read from the store per page of an export. */
const EXPORT_PAGE = 500;

/**
 * The entries an export sends, oldest first, page by page (`after` the query's cursor, or from the
 * oldest entry the store still holds): memory holds one page at a time, whatever the trail's
 * length. Rejects when the store does.
 */
export async function* exportAudit(
  store: Pick<KeyStore, 'readAudit'>,
  query: Omit<AuditQuery, 'limit' | 'before'>,
): AsyncGenerator<AuditEntry[]> {
  let after = query.after ?? '0';
  for (;;) {
    const page = await store.readAudit({ ...query, after, limit: EXPORT_PAGE });
    if (page.length) yield page;
    if (page.length < EXPORT_PAGE) return;
    after = page[page.length - 1]!.id!;
  }
}
