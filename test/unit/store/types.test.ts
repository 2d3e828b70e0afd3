import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { adminErrorCode } from '../../../src/admin/router.js';
import { parseKeyFile } from '../../../src/store/file-store.js';
import { isKeyActive, isStoreOutage } from '../../../src/store/types.js';
import { parseInstant } from '../../../src/time.js';

/** Shapes that pass TIMESTAMP_PATTERN but name no instant (issue 10, finding 5). */
const IMPOSSIBLE = [
  '2030-13-01T00:00:00Z',
  '2030-00-10T00:00:00Z',
  '2027-01-01T23:59:60Z',
  '2027-02-30T00:00:00Z',
  '2027-02-29T00:00:00Z',
  '2027-04-31T00:00:00Z',
  '2027-01-01T24:00:00Z',
  '2027-01-01T12:60:00Z',
  '2027-01-00T00:00:00Z',
];

describe('parseInstant', () => {
  test('real instants parse to their ms', () => {
    assert.equal(parseInstant('2026-01-01T00:00:00Z'), Date.UTC(2026, 0, 1));
    assert.equal(parseInstant('2028-02-29T23:59:59Z'), Date.UTC(2028, 1, 29, 23, 59, 59));
    assert.equal(parseInstant('2000-02-29T00:00:00Z'), Date.UTC(2000, 1, 29));
    assert.equal(parseInstant('0050-06-01T00:00:00Z'), Date.parse('0050-06-01T00:00:00Z'));
  });
  test('impossible dates and times, and other shapes, are null', () => {
    for (const s of [
      ...IMPOSSIBLE,
      '1900-02-29T00:00:00Z',
      '2026-01-01',
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00+00:00',
      ' 2026-01-01T00:00:00Z',
      '',
      'garbage',
    ])
      assert.equal(parseInstant(s), null, s);
  });
});

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

describe('admin error mapping', () => {
  test('store outages are 503, everything else unexpected is 500', () => {
    const outages = [
      new Error('Connection is closed.'),
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
      new Error('Command timed out'),
      Object.assign(new Error('Reached the max retries per request limit'), {
        name: 'MaxRetriesPerRequestError',
      }),
      Object.assign(new Error('Failed to refresh slots cache.'), { name: 'ClusterAllFailedError' }),
      new Error('CLUSTERDOWN The cluster is down'),
      new Error('LOADING Redis is loading the dataset in memory'),
      new Error('connect ECONNREFUSED 127.0.0.1:6379'),
    ];
    for (const e of outages) {
      assert.equal(isStoreOutage(e), true, e.message);
      assert.equal(adminErrorCode(e), 'STORE_UNAVAILABLE', e.message);
    }
    const bugs: unknown[] = [
      new TypeError("Cannot read properties of undefined (reading 'x')"),
      new Error('ERR Error running script (call to f_0123): @user_script:1: bad argument'),
      new Error('NOPERM User has no permissions to access the channel'),
      new Error('WRONGTYPE Operation against a key holding the wrong kind of value'),
      'a string',
      null,
    ];
    for (const e of bugs) {
      assert.equal(isStoreOutage(e), false, String(e));
      assert.equal(adminErrorCode(e), 'INTERNAL', String(e));
    }
  });
  test("body-parser's client errors keep their meaning", () => {
    assert.equal(adminErrorCode({ status: 400, type: 'entity.parse.failed' }), 'ADMIN_INVALID_JSON');
    assert.equal(adminErrorCode({ status: 413, type: 'entity.too.large' }), 'ADMIN_PAYLOAD_TOO_LARGE');
    assert.equal(
      adminErrorCode({ status: 415, type: 'encoding.unsupported' }),
      'ADMIN_UNSUPPORTED_MEDIA_TYPE',
    );
    assert.equal(adminErrorCode({ status: 400, type: 'request.aborted' }), 'BAD_REQUEST');
  });
});
