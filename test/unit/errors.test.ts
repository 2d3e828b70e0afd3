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
