import { ERRORS } from '../errors.js';
import { parseUsageRange, readUsage, type UsageReader, type UsageReport } from '../usage/query.js';
import type { AdminResult, AdminService } from './service.js';

/** Where usage is read from and how long it is kept. */
export interface UsageQueryDeps {
  reader: UsageReader;
  retentionDays: number;
}

/**
 * `GET /admin/v1/companies/:id/usage?from=&to=&granularity=hour|day`: 404 for an unknown company
 * (or when usage is off), 400 naming `from`, `to` or `granularity` for a bad query (nothing read).
 */
export async function queryUsage(
  service: Pick<AdminService, 'getCompany'>,
  usage: UsageQueryDeps | null,
  companyId: string,
  query: Record<string, unknown>,
  now = Date.now(),
): Promise<AdminResult<UsageReport>> {
  if (!usage) return failure('ADMIN_NOT_FOUND', 'usage counting is off (usage.enabled: false)');
  const range = parseUsageRange(query, now);
  if (!range.ok) return failure('ADMIN_INVALID_REQUEST', range.details);
  const company = await service.getCompany(companyId);
  if (!company.ok) return company;
  const value = await readUsage(usage.reader, companyId, range.range, {
    now,
    retentionDays: usage.retentionDays,
  });
  return { ok: true, value };
}

/**
 * `GET /admin/v1/keys/:keyId/usage`: the same report for one key (its share of its company's
 * counts), with `keyId`. 404 for an unknown key or when usage is off.
 */
export async function queryKeyUsage(
  service: Pick<AdminService, 'getKey'>,
  usage: UsageQueryDeps | null,
  keyId: string,
  query: Record<string, unknown>,
  now = Date.now(),
): Promise<AdminResult<UsageReport & { keyId: string }>> {
  if (!usage) return failure('ADMIN_NOT_FOUND', 'usage counting is off (usage.enabled: false)');
  const range = parseUsageRange(query, now);
  if (!range.ok) return failure('ADMIN_INVALID_REQUEST', range.details);
  const key = await service.getKey(keyId);
  if (!key.ok) return key;
  const report = await readUsage(usage.reader, key.value.companyId, range.range, {
    now,
    retentionDays: usage.retentionDays,
    keyId,
  });
  return { ok: true, value: { ...report, keyId } };
}

function failure(code: 'ADMIN_NOT_FOUND' | 'ADMIN_INVALID_REQUEST', details: string): AdminResult<never> {
  const e = ERRORS[code];
  return { ok: false, code, status: e.status, error: e.error, details };
}
