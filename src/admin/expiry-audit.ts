import { boundedLru } from '../auth/lru.js';
import type { KeyRecord } from '../store/types.js';
import type { AdminService } from './service.js';

export interface ExpiryAuditorOptions {
  /** Where the entry goes: `AdminService.audit` (store stream + log line, never rejects). */
  auditor: Pick<AdminService, 'audit'>;
  /** How many key ids to remember; past that the least recently seen is forgotten. */
  maxEntries?: number;
}

/**
 * Builds the handler for keys refused because they expired (the verifier's `onKeyExpired`). It
 * writes one `key.expired` audit entry per key and instance: expiry has no writer to record it,
 * so the first gateway that refuses the key does. Ids are remembered in a bounded LRU
 * (`maxEntries`, default 10 000), so a key forgotten there may be audited again. Never throws;
 * the audit write runs in the background.
 *
 * @example
 * const onKeyExpired = createExpiryAuditor({ auditor: service });
 * createApp({ ..., onKeyExpired });
 */
export function createExpiryAuditor(opts: ExpiryAuditorOptions): (key: KeyRecord) => void {
  const { auditor } = opts;
  const seen = boundedLru<string, true>(opts.maxEntries ?? 10_000);
  return function onKeyExpired(key) {
    if (seen.has(key.id)) return;
    seen.set(key.id, true);
    void auditor.audit({
      event: 'key.expired',
      companyId: key.companyId,
      keyId: key.id,
      keyPrefix: key.prefix,
      actor: 'gateway',
      details: { expiresAt: key.expiresAt },
    });
  };
}
