import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { keyEventsDue } from '../../../src/events/scanner.js';
import type { EventSink } from '../../../src/events/types.js';
import type { KeyRecord } from '../../../src/store/types.js';
import { isoSeconds } from '../../../src/time.js';

const NOW = Date.UTC(2030, 5, 1, 12);
const DAY = 86_400_000;
const at = (ms: number) => isoSeconds(NOW + ms);

function key(over: Partial<KeyRecord> = {}): KeyRecord {
  return {
    id: 'key_1',
    companyId: 'acme',
    hash: 'a'.repeat(64),
    prefix: 'nk_live_abcd',
    label: 'backend',
    environment: 'live',
    createdAt: at(-10 * DAY),
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    exposedAt: null,
    rotatedTo: null,
    scopes: null,
    limits: null,
    ...over,
  } as KeyRecord;
}

function due(k: KeyRecord, rotationAgeDays = 90): [string, Record<string, unknown>][] {
  const out: [string, Record<string, unknown>][] = [];
  const emit: EventSink['emit'] = (type, data) => void out.push([type, data as Record<string, unknown>]);
  keyEventsDue(k, NOW, rotationAgeDays, emit);
  return out;
}

describe('keyEventsDue', () => {
  test('key.expiring from 7 days before the expiry until it, not before, not after', () => {
    assert.deepEqual(due(key({ expiresAt: at(7 * DAY + 1000) })), []);
    assert.deepEqual(
      due(key({ expiresAt: at(7 * DAY) })).map(([t]) => t),
      ['key.expiring'],
    );
    assert.deepEqual(due(key({ expiresAt: at(60_000) }))[0]![1], {
      companyId: 'acme',
      keyId: 'key_1',
      keyPrefix: 'nk_live_abcd',
      label: 'backend',
      environment: 'live',
      expiresAt: at(60_000),
    });
    assert.deepEqual(due(key({ expiresAt: at(0) })), [], 'expired: nothing');
  });

  test('key.rotation_due past the rotation age, unless rotated or being revoked', () => {
    assert.deepEqual(
      due(key({ createdAt: at(-91 * DAY) })).map(([t]) => t),
      ['key.rotation_due'],
    );
    assert.deepEqual(due(key({ createdAt: at(-89 * DAY) })), []);
    assert.deepEqual(
      due(key({ createdAt: at(-31 * DAY) }), 30).map(([t]) => t),
      ['key.rotation_due'],
    );
    assert.deepEqual(due(key({ createdAt: at(-91 * DAY), rotatedTo: 'key_2', revokedAt: at(30 * DAY) })), []);
    assert.deepEqual(due(key({ createdAt: at(-91 * DAY), revokedAt: at(-1000) })), []);
  });

  test("key.grace_ending within 24 h of a rotated key's revocation; key.revoked in the day after it", () => {
    const rotated = { rotatedTo: 'key_2' };
    assert.deepEqual(due(key({ ...rotated, revokedAt: at(DAY + 1000) })), []);
    assert.deepEqual(due(key({ ...rotated, revokedAt: at(DAY) }))[0], [
      'key.grace_ending',
      {
        companyId: 'acme',
        keyId: 'key_1',
        keyPrefix: 'nk_live_abcd',
        revokesAt: at(DAY),
        replacedBy: 'key_2',
      },
    ]);
    const ended = due(key({ ...rotated, revokedAt: at(-60_000) }));
    assert.deepEqual(
      ended.map(([t, d]) => [t, d.reason, d.actor]),
      [['key.revoked', 'grace period after a rotation ended', 'gateway']],
    );
    assert.deepEqual(due(key({ ...rotated, revokedAt: at(-DAY - 1000) })), [], 'older: reported already');
    assert.deepEqual(due(key({ revokedAt: at(-60_000) })), [], 'revoked by hand: the admin API reported it');
  });

  test('an unparseable stored time fails closed: no event claims the key is alive', () => {
    assert.deepEqual(due(key({ revokedAt: '2030-02-30T00:00:00Z', rotatedTo: 'key_2' })), []);
    assert.deepEqual(due(key({ expiresAt: 'soon' })), []);
  });
});
