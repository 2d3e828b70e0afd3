import { holdsKeyMaterial, ID_PATTERN, TIER_NAME_PATTERN } from '../config/fields.js';
import type { KeyStore } from '../store/types.js';

/**
 * Companies whose tier the config does not have, by tier (ids sorted). A tier or an id that breaks
 * its field rule is not shown (it may hold a key): `(not shown)`.
 */
export interface MissingTier {
  tier: string;
  companies: string[];
}

const NOT_SHOWN = '(not shown)';
const shownTier = (t: string) => (TIER_NAME_PATTERN.test(t) && !holdsKeyMaterial(t) ? t : NOT_SHOWN);
const shownId = (id: string) => (ID_PATTERN.test(id) && !holdsKeyMaterial(id) ? id : NOT_SHOWN);

/**
 * Every company of the store whose `tier` is not in `tiers`: what happens when a tier is removed
 * from the config while companies still use it (the admin API, the CLI, `apply` and the key file
 * refuse unknown tiers, so only a changed config leads here). Such a company's requests are
 * answered 503 `TIER_NOT_CONFIGURED`. `config check` and `serve` call it at start; it reads every
 * company once. Rejects when the store cannot be read.
 *
 * @example
 * const missing = await findMissingTiers(store, new Set(['free', 'standard']));
 * // [{ tier: 'gold', companies: ['acme', 'globex'] }]
 */
export async function findMissingTiers(store: KeyStore, tiers: ReadonlySet<string>): Promise<MissingTier[]> {
  const byTier = new Map<string, string[]>();
  for (const c of await store.listCompanies()) {
    if (tiers.has(c.tier)) continue;
    const tier = shownTier(c.tier);
    const list = byTier.get(tier) ?? [];
    list.push(shownId(c.id));
    byTier.set(tier, list);
  }
  return [...byTier.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([tier, companies]) => ({ tier, companies: companies.sort() }));
}

/** What to do about them, in one sentence (log lines, `config check`). */
export function missingTierAdvice(tiers: ReadonlySet<string>): string {
  return (
    `their requests are answered 503 TIER_NOT_CONFIGURED: add the tier back to rateLimit.tiers, ` +
    `or move each company to a configured tier (${[...tiers].join(', ')}): ` +
    '`notify-gateway companies update ID --tier TIER` or PATCH /admin/v1/companies/ID {"tier": ...}'
  );
}
