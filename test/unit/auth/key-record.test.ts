import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { displayPrefixOf, hashApiKey, parseApiKey } from '../../../src/auth/api-key.js';
import { createKeyRecord } from '../../../src/auth/key-record.js';
import { ID_PATTERN } from '../../../src/store/types.js';

const input = {
  companyId: 'acme',
  environment: 'test',
  label: 'ci',
  expiresAt: '2030-01-01T00:00:00Z',
  createdAt: '2025-06-01T12:00:00Z',
};

describe('createKeyRecord', () => {
  test('the record stores the hash and display prefix of the returned key, never the key', () => {
    const { key, record } = createKeyRecord(input);
    assert.deepEqual(parseApiKey(key, { maxLength: 256, acceptLegacy: false }), {
      ok: true,
      environment: 'test',
    });
    assert.deepEqual(record, {
      id: record.id,
      companyId: 'acme',
      hash: hashApiKey(key),
      prefix: displayPrefixOf(key),
      label: 'ci',
      environment: 'test',
      createdAt: '2025-06-01T12:00:00Z',
      expiresAt: '2030-01-01T00:00:00Z',
      revokedAt: null,
      lastUsedAt: null,
      exposedAt: null,
      rotatedTo: null,
      scopes: null,
      limits: null,
    });
    assert.ok(!Object.values(record).includes(key));
  });

  test('ids are key_ + 16 random bytes in base64url, valid ids, all distinct', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const { record } = createKeyRecord(input);
      assert.match(record.id, /^key_[A-Za-z0-9_-]{22}$/);
      assert.match(record.id, ID_PATTERN);
      ids.add(record.id);
    }
    assert.equal(ids.size, 1000);
  });

  test('an invalid environment throws before anything is built', () => {
    assert.throws(() => createKeyRecord({ ...input, environment: 'Bad Env' }), TypeError);
  });
});
