import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { AUDIT_EVENTS, exportAudit, parseAuditQuery } from '../../../src/admin/audit-query.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';

const SRC = join(import.meta.dirname, '..', '..', '..', 'src');

/** Every `event: '<name>'` literal in src/: the audit events the code writes. */
function writtenEvents(dir = SRC): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return writtenEvents(p);
    if (!p.endsWith('.ts')) return [];
    return [...readFileSync(p, 'utf8').matchAll(/\bevent: '([a-z_]+\.[a-z_.]+)'/g)].map((m) => m[1]!);
  });
}

describe('audit query', () => {
  test('AUDIT_EVENTS lists every event the code writes (the console filters by this list)', () => {
    const written = new Set(writtenEvents());
    assert.ok(written.size >= 8, [...written].join());
    const listed: readonly string[] = AUDIT_EVENTS;
    assert.deepEqual(
      [...written].filter((e) => !listed.includes(e)),
      [],
    );
  });

  test('parses every filter; an absent one is left out; the limit is clamped', () => {
    assert.deepEqual(parseAuditQuery({}), { ok: true, query: { limit: 100 } });
    assert.deepEqual(
      parseAuditQuery({
        limit: '5000',
        companyId: 'acme',
        event: 'key.revoked,key.exposed,key.revoked',
        from: '2024-01-02',
        to: '2024-01-03T04:05:06Z',
        before: '1700000000000-3',
      }),
      {
        ok: true,
        query: {
          limit: 1000,
          companyId: 'acme',
          events: ['key.revoked', 'key.exposed'],
          from: '2024-01-02T00:00:00Z',
          to: '2024-01-03T04:05:06Z',
          before: '1700000000000-3',
        },
      },
    );
  });

  test('every problem at once, each naming its parameter', () => {
    const r = parseAuditQuery({ companyId: 'a b', event: 'x', from: '2024-02-30', after: '-1', to: ['x'] });
    assert.ok(!r.ok);
    assert.deepEqual(
      r.details.split('; ').map((p) => p.split(':')[0]),
      ['companyId', 'event', 'from', 'to', 'after'],
    );
  });

  test('the export reads page by page, oldest first, never more than a page at once', async () => {
    const store = new MemoryKeyStore();
    for (let i = 0; i < 1234; i++)
      await store.appendAudit({ at: '2024-01-01T00:00:00Z', event: 'key.created' });
    const limits: number[] = [];
    const read = store.readAudit.bind(store);
    store.readAudit = (q) => {
      limits.push(q.limit);
      return read(q);
    };
    const pages: number[] = [];
    let last = 0;
    for await (const page of exportAudit(store, {})) {
      pages.push(page.length);
      for (const e of page) {
        assert.ok(Number(e.id) > last, 'oldest first, no repeat');
        last = Number(e.id);
      }
    }
    assert.deepEqual(pages, [500, 500, 234]);
    assert.ok(limits.every((l) => l === 500));
  });
});
