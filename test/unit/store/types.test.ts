import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isKeyActive } from '../../../src/store/types.js';
import { IMPOSSIBLE_INSTANTS as IMPOSSIBLE } from '../../helpers/instants.js';

describe('isKeyActive fails closed', () => {
  const now = Date.UTC(2026, 5, 1);
  test('an unparseable revokedAt or expiresAt counts as passed', () => {
    for (const bad of [...IMPOSSIBLE, 'garbage', '']) {
      assert.equal(isKeyActive({ revokedAt: bad, expiresAt: null }, now), false, `revokedAt ${bad}`);
      assert.equal(isKeyActive({ revokedAt: null, expiresAt: bad }, now), false, `expiresAt ${bad}`);
    }
  });
  test('future and absent times keep the key active; past ones end it', () => {
    assert.equal(isKeyActive({ revokedAt: null, expiresAt: null }, now), true);
    assert.equal(
      isKeyActive({ revokedAt: '2027-01-01T00:00:00Z', expiresAt: '2027-01-01T00:00:00Z' }, now),
      true,
    );
    assert.equal(isKeyActive({ revokedAt: '2026-06-01T00:00:00Z', expiresAt: null }, now), false);
    assert.equal(isKeyActive({ revokedAt: null, expiresAt: '2026-05-31T23:59:59Z' }, now), false);
  });
});
