import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { ERRORS, errorBody } from '../../src/errors.js';

describe('error registry', () => {
  test('every code is documented in docs/errors.md with its status and body', () => {
    const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    for (const [code, e] of Object.entries(ERRORS)) {
      const row = doc.split('\n').find((l) => l.includes(`\`${code}\``));
      assert.ok(row, `${code} is not documented in docs/errors.md`);
      assert.ok(row.includes(String(e.status)), `${code}: status ${e.status} missing in its row`);
      assert.ok(row.includes(e.details), `${code}: details "${e.details}" missing in its row`);
    }
  });
  test('every code documented in docs/errors.md exists in the registry, with the documented status', () => {
    const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| `([A-Z0-9_]+)` +\| (\d{3}) /gm)];
    assert.ok(rows.length >= Object.keys(ERRORS).length, 'the tables were not found');
    for (const [, code, status] of rows) {
      assert.ok(code! in ERRORS, `${code} is documented but not in src/errors.ts`);
      assert.equal(Number(ERRORS[code as keyof typeof ERRORS].status), Number(status), `${code}: status`);
    }
  });
  test('the admin API statuses each have a code: 400, 401, 403, 404, 405, 409, 413, 415, 500, 503', () => {
    const statuses = new Set<number>(Object.values(ERRORS).map((e) => e.status));
    for (const s of [400, 401, 403, 404, 405, 409, 413, 415, 500, 503]) assert.ok(statuses.has(s), String(s));
    const admin = Object.keys(ERRORS).filter((c) => c.startsWith('ADMIN_'));
    assert.deepEqual(
      [...new Set(admin.map((c) => ERRORS[c as keyof typeof ERRORS].status))].sort(),
      [400, 401, 403, 404, 405, 409, 413, 415],
    );
  });
  test('bodies have exactly the spec shape', () => {
    for (const code of Object.keys(ERRORS) as (keyof typeof ERRORS)[]) {
      const body = JSON.parse(errorBody(code).toString()) as Record<string, unknown>;
      assert.deepEqual(Object.keys(body), ['error', 'details']);
      assert.equal(typeof body.error, 'string');
      assert.equal(typeof body.details, 'string');
    }
    assert.deepEqual(JSON.parse(errorBody('MISSING_KEY').toString()), {
      error: 'Unauthorized',
      details: 'Missing API key',
    });
  });
});
