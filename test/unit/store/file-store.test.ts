import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseKeyFile } from '../../../src/store/file-store.js';

describe('key file timestamps', () => {
  test('an impossible createdAt, expiresAt or revokedAt rejects the file, naming each field', () => {
    const h = (i: number) => String(i).repeat(64).slice(0, 64);
    const r = parseKeyFile(
      `companies:\n  - id: a\n    tier: free\n    keys:\n` +
        `      - { id: k1, hash: ${h(1)}, expiresAt: "2027-02-30T00:00:00Z" }\n` +
        `      - { id: k2, hash: ${h(2)}, revokedAt: "2030-13-01T00:00:00Z" }\n` +
        `      - { id: k3, hash: ${h(3)}, createdAt: "2027-01-01T24:00:00Z" }\n` +
        `      - { id: k4, hash: ${h(4)}, revokedAt: "2027-01-01T23:59:60Z" }\n`,
      new Set(['free']),
    );
    assert.equal(r.ok, false);
    const text = r.ok ? '' : r.problems.join('\n');
    for (const path of [
      'companies.0.keys.0.expiresAt',
      'companies.0.keys.1.revokedAt',
      'companies.0.keys.2.createdAt',
      'companies.0.keys.3.revokedAt',
    ])
      assert.match(text, new RegExp(`${path.replace(/\./g, '\\.')}: must be a real UTC instant`));
  });
});
