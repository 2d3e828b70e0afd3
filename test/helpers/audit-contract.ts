import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AuditEntry, KeyStore } from '../../src/store/types.js';

/**
 * The audit section of the KeyStore contract: every store (memory, file, Redis single node and
 * Cluster) answers the same `readAudit` queries the same way. Entries are written with their own
 * `at` (a fixed day, one minute apart) and a unique company, so the suite can share a store with
 * other tests and never sees their entries.
 */
export function auditQueryContract(store: () => KeyStore, tag: string): void {
  const company = `audit-${tag}`;
  const other = `audit-${tag}-other`;
  const at = (minute: number) => `2030-01-02T10:${String(minute).padStart(2, '0')}:00Z`;
  const events = ['company.created', 'key.created', 'key.revoked', 'key.exposed'];
  const only = (q: Partial<Parameters<KeyStore['readAudit']>[0]> = {}) =>
    store().readAudit({ limit: 1000, companyId: company, ...q });
  const minutes = (rows: AuditEntry[]) => rows.map((e) => Number(e.at.slice(14, 16)));

  test(`audit (${tag}): newest first, filters by company, events and time range`, async () => {
    // 12 entries of `company` at minutes 0..11 (events in turn), and some of another company between.
    for (let i = 0; i < 12; i++) {
      await store().appendAudit({ at: at(i), event: events[i % 4]!, companyId: company, actor: 't' });
      if (i % 3 === 0) await store().appendAudit({ at: at(i), event: 'key.created', companyId: other });
    }
    const all = await only();
    assert.deepEqual(minutes(all), [11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    assert.ok(all.every((e) => typeof e.id === 'string' && e.id !== ''));
    assert.deepEqual(minutes(await only({ limit: 3 })), [11, 10, 9]);
    assert.deepEqual(minutes(await only({ events: ['key.revoked'] })), [10, 6, 2]);
    assert.deepEqual(minutes(await only({ events: ['key.revoked', 'key.exposed'] })), [11, 10, 7, 6, 3, 2]);
    assert.deepEqual(minutes(await only({ events: ['no.such.event'] })), []);
    // from inclusive, to exclusive.
    assert.deepEqual(minutes(await only({ from: at(4), to: at(7) })), [6, 5, 4]);
    assert.deepEqual(minutes(await only({ from: at(10) })), [11, 10]);
    assert.deepEqual(minutes(await only({ to: at(2) })), [1, 0]);
    assert.deepEqual(minutes(await only({ from: at(4), to: at(7), events: ['key.created'] })), [5]);
    const both = await store().readAudit({ limit: 1000, from: at(0), to: at(12) });
    assert.ok(both.some((e) => e.companyId === other) && both.some((e) => e.companyId === company));
  });

  test(`audit (${tag}): before pages back without gaps or repeats; after reads forward`, async () => {
    const all = await only();
    const pages: number[][] = [];
    let before: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await only({ limit: 5, ...(before ? { before } : {}) });
      if (!page.length) break;
      pages.push(minutes(page));
      before = page.at(-1)!.id;
    }
    assert.deepEqual(pages, [
      [11, 10, 9, 8, 7],
      [6, 5, 4, 3, 2],
      [1, 0],
    ]);
    // A cursor with filters: the filters still apply past it.
    const revoked = await only({ events: ['key.revoked'], limit: 1 });
    assert.deepEqual(minutes(await only({ events: ['key.revoked'], before: revoked[0]!.id })), [6, 2]);
    // Forward from the oldest: oldest first, the cursor itself excluded.
    const oldest = all.at(-1)!;
    assert.deepEqual(minutes(await only({ after: oldest.id, limit: 4 })), [1, 2, 3, 4]);
    const fifth = all.find((e) => e.at === at(4))!;
    assert.deepEqual(minutes(await only({ after: fifth.id, events: ['company.created'] })), [8]);
    assert.deepEqual(minutes(await only({ after: all[0]!.id })), [], 'nothing after the newest');
  });
}

/**
 * Reads that cross the stores' page size (Redis reads 500 entries per call): a filter that skips
 * most entries still finds every match, in order, across pages.
 */
export function auditPagingContract(store: () => KeyStore, tag: string): void {
  test(`audit (${tag}): a sparse filter finds every match across the store's pages`, async () => {
    const company = `audit-pages-${tag}`;
    const at = '2031-05-06T07:08:09Z';
    for (let i = 0; i < 1300; i++)
      await store().appendAudit({
        at,
        event: i % 100 === 0 ? 'key.exposed' : 'key.created',
        companyId: company,
      });
    const found = await store().readAudit({ limit: 1000, companyId: company, events: ['key.exposed'] });
    assert.equal(found.length, 13);
    const forward = await store().readAudit({
      limit: 1000,
      companyId: company,
      after: '0',
      events: ['key.exposed'],
    });
    assert.deepEqual(
      forward.map((e) => e.id),
      found.map((e) => e.id).reverse(),
    );
  });
}
