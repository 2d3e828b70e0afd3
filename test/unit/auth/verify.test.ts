import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { generateApiKey, hashApiKey } from '../../../src/auth/api-key.js';
import {
  KeyVerifier,
  type CacheOutcome,
  type RefusedRecord,
  type VerifierOptions,
} from '../../../src/auth/verify.js';
import { GatewayError } from '../../../src/errors.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import type { Company, KeyRecord, KeyStore } from '../../../src/store/types.js';
import { isoSeconds } from '../../../src/time.js';
import { ProbeKeyStore } from '../../helpers/probe-store.js';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const POSITIVE_TTL = 1000;
const NEGATIVE_TTL = 400;
const STALE = 2000;
const LAST_USED_INTERVAL = 60_000;

/** Lets every queued promise continuation run (the memory store answers within a few microtasks). */
const settle = () => new Promise((r) => setImmediate(r));

interface Fixture {
  probe: ProbeKeyStore;
  verifier: KeyVerifier;
  key: string;
  record: KeyRecord;
  clock: { now: number };
  cacheEvents: string[];
  storeErrors: string[];
  revoke(): Promise<void>;
}

async function setup(
  over: Partial<VerifierOptions> = {},
  wrap: (probe: ProbeKeyStore) => KeyStore = (probe) => probe,
): Promise<Fixture> {
  const inner = new MemoryKeyStore();
  const at = isoSeconds(T0);
  await inner.createCompany({
    id: 'acme',
    name: 'Acme',
    tier: 'standard',
    status: 'active',
    apiAccess: true,
    createdAt: at,
    updatedAt: at,
    scopes: null,
    limits: null,
  });
  const key = generateApiKey('live');
  const record: KeyRecord = {
    id: 'key_1',
    companyId: 'acme',
    hash: hashApiKey(key),
    prefix: key.slice(0, 14),
    label: null,
    environment: 'live',
    createdAt: at,
    expiresAt: null,
    revokedAt: null,
    lastUsedAt: null,
    exposedAt: null,
    rotatedTo: null,
    scopes: null,
    limits: null,
  };
  assert.deepEqual(await inner.createKey(record, 0, at), { ok: true });
  const probe = new ProbeKeyStore(inner);
  const clock = { now: T0 };
  const cacheEvents: string[] = [];
  const storeErrors: string[] = [];
  const verifier = new KeyVerifier({
    store: wrap(probe),
    maxEntries: 100,
    positiveTtlMs: POSITIVE_TTL,
    negativeTtlMs: NEGATIVE_TTL,
    staleIfErrorMs: STALE,
    maxKeyLength: 256,
    acceptLegacyFormat: false,
    lastUsedIntervalMs: LAST_USED_INTERVAL,
    onCache: (kind, outcome: CacheOutcome) => cacheEvents.push(`${kind}:${outcome}`),
    onStoreError: (op) => storeErrors.push(op),
    now: () => clock.now,
    ...over,
  });
  return {
    probe,
    verifier,
    key,
    record,
    clock,
    cacheEvents,
    storeErrors,
    // What the admin service does: write, then publish the invalidation to every instance.
    async revoke() {
      await inner.updateKey(record.id, { revokedAt: isoSeconds(clock.now) });
      await inner.publish({ kind: 'key', hash: record.hash });
    },
  };
}

async function assertStoreUnavailable(p: Promise<unknown>, what: string): Promise<void> {
  await assert.rejects(
    p,
    (err: unknown) => err instanceof GatewayError && err.code === 'STORE_UNAVAILABLE' && err.status === 503,
    what,
  );
}

describe('KeyVerifier', () => {
  let f: Fixture;
  beforeEach(async () => {
    f = await setup();
  });

  test('a valid key verifies once from the store, then from the cache until the positive TTL ends', async () => {
    const r = await f.verifier.verify(f.key);
    assert.ok(r.ok);
    assert.equal(r.company.id, 'acme');
    assert.equal(r.key.id, 'key_1');
    assert.equal(f.probe.count('findKeyByHash'), 1);
    assert.equal(f.probe.count('getCompany'), 1);
    f.clock.now += POSITIVE_TTL - 1;
    assert.ok((await f.verifier.verify(f.key)).ok);
    assert.equal(f.probe.count('findKeyByHash'), 1, 'answered from the cache');
    f.clock.now += 1;
    assert.ok((await f.verifier.verify(f.key)).ok);
    assert.equal(f.probe.count('findKeyByHash'), 2, 'a cached copy is not used past its TTL');
    assert.equal(f.probe.count('getCompany'), 2);
  });

  test('checksum failures, malformed and over-long keys are refused without any store lookup', async () => {
    const typo = f.key.slice(0, -1) + (f.key.endsWith('A') ? 'B' : 'A');
    assert.deepEqual(await f.verifier.verify(typo), { ok: false, code: 'INVALID_KEY', reason: 'checksum' });
    assert.deepEqual(await f.verifier.verify('hello'), {
      ok: false,
      code: 'INVALID_KEY',
      reason: 'malformed',
    });
    assert.deepEqual(await f.verifier.verify('x'.repeat(257)), {
      ok: false,
      code: 'INVALID_KEY',
      reason: 'too_long',
    });
    assert.deepEqual(await f.verifier.verify(undefined), {
      ok: false,
      code: 'MISSING_KEY',
      reason: 'missing',
    });
    assert.deepEqual(await f.verifier.verify([f.key]), {
      ok: false,
      code: 'INVALID_KEY',
      reason: 'malformed',
    });
    assert.equal(f.probe.count('findKeyByHash'), 0);
  });

  describe('generation race: an invalidation during a lookup', () => {
    test('a key lookup that raced a revocation is not cached: the next verify asks the store', async () => {
      assert.ok((await f.verifier.verify(f.key)).ok);
      f.clock.now += POSITIVE_TTL; // the cached copy is due for a refresh
      const release = f.probe.hold('findKeyByHash');
      // The store has answered "active"; the answer is still on the wire when the revocation lands.
      const raced = f.verifier.verify(f.key);
      await settle();
      assert.equal(f.probe.count('findKeyByHash'), 2);
      await f.revoke();
      release();
      await raced; // began before the revocation: either answer is acceptable for this one request
      assert.equal(f.verifier.cachedKeys, 0, 'the pre-revocation copy was not cached');
      const after = await f.verifier.verify(f.key);
      assert.equal(f.probe.count('findKeyByHash'), 3, 'the next verify went to the store');
      assert.equal(after.ok, false);
      assert.equal(!after.ok && after.reason, 'revoked');
    });

    test('a company lookup that raced a suspension is not cached either', async () => {
      const release = f.probe.hold('getCompany');
      const raced = f.verifier.verify(f.key);
      await settle();
      assert.equal(f.probe.count('getCompany'), 1);
      await f.probe.inner.updateCompany('acme', { status: 'suspended' }, isoSeconds(f.clock.now));
      await f.probe.inner.publish({ kind: 'company', id: 'acme' });
      release();
      await raced;
      const after = await f.verifier.verify(f.key);
      assert.equal(f.probe.count('getCompany'), 2, 'the next verify went to the store');
      assert.deepEqual(after, { ok: false, code: 'COMPANY_INACTIVE', reason: 'company_inactive' });
    });
  });

  describe('in-flight coalescing', () => {
    test('20 concurrent verifies of one uncached key cost one key lookup and one company lookup', async () => {
      const release = f.probe.hold('findKeyByHash');
      const all = Array.from({ length: 20 }, () => f.verifier.verify(f.key));
      await settle();
      release();
      const results = await Promise.all(all);
      assert.ok(results.every((r) => r.ok));
      assert.equal(f.probe.count('findKeyByHash'), 1);
      assert.equal(f.probe.count('getCompany'), 1);
    });

    test('a shared lookup that fails fails every waiter, and the next verify tries the store again', async () => {
      f.probe.fail('findKeyByHash');
      const release = f.probe.hold('findKeyByHash');
      const all = Array.from({ length: 5 }, () => f.verifier.verify(f.key));
      await settle();
      release();
      for (const p of all) await assertStoreUnavailable(p, 'a waiter of the failed lookup');
      assert.equal(f.probe.count('findKeyByHash'), 1);
      assert.deepEqual(f.storeErrors, Array(5).fill('find_key'));
      f.probe.heal();
      assert.ok((await f.verifier.verify(f.key)).ok, 'the failed lookup left nothing behind');
      assert.equal(f.probe.count('findKeyByHash'), 2);
    });
  });

  describe('stale-if-error', () => {
    test('a recently cached key verifies while the store fails, up to TTL + staleIfErrorMs and not after', async () => {
      assert.ok((await f.verifier.verify(f.key)).ok);
      f.probe.fail('findKeyByHash');
      f.probe.fail('getCompany');
      f.clock.now = T0 + POSITIVE_TTL + STALE - 1;
      f.cacheEvents.length = 0;
      assert.ok((await f.verifier.verify(f.key)).ok, 'served from the stale copy');
      assert.deepEqual(f.cacheEvents, ['key:stale', 'company:stale']);
      // The key read failed first, so the company's stale copy was served without waiting; its
      // read still ran (in the background) and its failure is reported too.
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(f.storeErrors, ['find_key', 'get_company']);
      f.clock.now = T0 + POSITIVE_TTL + STALE;
      await assertStoreUnavailable(f.verifier.verify(f.key), 'past the stale window');
      f.probe.heal();
      assert.ok((await f.verifier.verify(f.key)).ok, 'recovers with the store, no restart');
    });

    test('while the store is failing, stale copies are served at once: a hung read delays nothing', async () => {
      assert.ok((await f.verifier.verify(f.key)).ok);
      f.clock.now = T0 + POSITIVE_TTL + 1;
      f.probe.fail('findKeyByHash');
      assert.ok((await f.verifier.verify(f.key)).ok, 'the first failure: served stale');
      // The store now hangs (a paused Redis): within a second of the failure, nobody waits for it.
      f.probe.heal();
      const release = f.probe.hold('findKeyByHash');
      f.clock.now += 500;
      const answer = await Promise.race([
        f.verifier.verify(f.key),
        new Promise<'waited'>((r) => setTimeout(() => r('waited'), 300)),
      ]);
      assert.notEqual(answer, 'waited', 'a stale copy, not a wait on the hung store');
      assert.ok(answer !== 'waited' && answer.ok);
      assert.equal(f.probe.count('findKeyByHash'), 3, 'one background read found out whether it is back');
      // Once the store answers, the refreshed record is cached and used.
      release();
      await new Promise((r) => setImmediate(r));
      f.clock.now += 100;
      assert.ok((await f.verifier.verify(f.key)).ok);
      assert.equal(f.probe.count('findKeyByHash'), 3, 'fresh again: no further read');
    });

    test('an unknown key while the store fails is a 503, never a 401 or a pass', async () => {
      f.probe.fail('findKeyByHash');
      await assertStoreUnavailable(f.verifier.verify(generateApiKey('live')), 'unknown key');
    });

    test('a negative entry is never served stale: an outage is not evidence that a key is unknown', async () => {
      const unknown = generateApiKey('live');
      assert.deepEqual(await f.verifier.verify(unknown), {
        ok: false,
        code: 'INVALID_KEY',
        reason: 'unknown',
      });
      f.probe.fail('findKeyByHash');
      f.clock.now += NEGATIVE_TTL;
      await assertStoreUnavailable(f.verifier.verify(unknown), 'expired negative entry');
    });
  });

  describe('negative caching', () => {
    test('an unknown key costs one lookup per negativeTtlMs', async () => {
      const unknown = generateApiKey('live');
      for (let i = 0; i < 5; i++)
        assert.deepEqual(await f.verifier.verify(unknown), {
          ok: false,
          code: 'INVALID_KEY',
          reason: 'unknown',
        });
      assert.equal(f.probe.count('findKeyByHash'), 1);
      f.clock.now += NEGATIVE_TTL - 1;
      await f.verifier.verify(unknown);
      assert.equal(f.probe.count('findKeyByHash'), 1);
      f.clock.now += 1;
      await f.verifier.verify(unknown);
      assert.equal(f.probe.count('findKeyByHash'), 2, 'the negative entry expired');
      assert.equal(f.probe.count('getCompany'), 0, 'an unknown key never reaches the company lookup');
    });

    test('an invalidation drops a negative entry: a key created meanwhile works at once', async () => {
      const fresh = generateApiKey('live');
      assert.equal((await f.verifier.verify(fresh)).ok, false);
      const rec: KeyRecord = { ...f.record, id: 'key_2', hash: hashApiKey(fresh) };
      await f.probe.inner.createKey(rec, 0, isoSeconds(f.clock.now));
      await f.probe.inner.publish({ kind: 'key', hash: rec.hash });
      assert.ok((await f.verifier.verify(fresh)).ok);
      assert.equal(f.probe.count('findKeyByHash'), 2);
    });
  });

  describe('lastUsedAt', () => {
    test('written at most once per lastUsedIntervalMs per key, with the verifier clock', async () => {
      assert.ok((await f.verifier.verify(f.key)).ok);
      await settle();
      assert.equal(f.probe.count('touchKey'), 1);
      assert.equal((await f.probe.inner.getKey('key_1'))!.lastUsedAt, isoSeconds(T0));
      for (const dt of [1, POSITIVE_TTL, LAST_USED_INTERVAL - 1]) {
        f.clock.now = T0 + dt;
        assert.ok((await f.verifier.verify(f.key)).ok);
      }
      await settle();
      assert.equal(f.probe.count('touchKey'), 1, 'throttled');
      f.clock.now = T0 + LAST_USED_INTERVAL;
      assert.ok((await f.verifier.verify(f.key)).ok);
      await settle();
      assert.equal(f.probe.count('touchKey'), 2);
      assert.equal((await f.probe.inner.getKey('key_1'))!.lastUsedAt, isoSeconds(T0 + LAST_USED_INTERVAL));
    });

    test('a failing write is reported and never fails the request; denied keys are not touched', async () => {
      f.probe.fail('touchKey');
      assert.ok((await f.verifier.verify(f.key)).ok);
      await settle();
      assert.deepEqual(f.storeErrors, ['touch_key']);
      await f.revoke();
      f.clock.now += LAST_USED_INTERVAL;
      f.probe.heal();
      assert.equal((await f.verifier.verify(f.key)).ok, false);
      await settle();
      assert.equal(f.probe.count('touchKey'), 1, 'a revoked key records no use');
    });
  });
});

describe('KeyVerifier.verifyCached (the request path without promises)', () => {
  test('answers only from fresh cached records, as verify would, counting the same hits', async () => {
    const f = await setup();
    assert.equal(f.verifier.verifyCached(f.key), undefined, 'nothing cached yet');
    assert.deepEqual(f.cacheEvents, [], 'an undefined answer counts nothing');
    const viaStore = await f.verifier.verify(f.key);
    assert.deepEqual(f.cacheEvents, ['key:miss', 'company:miss']);
    const cached = f.verifier.verifyCached(f.key);
    assert.deepEqual(cached, viaStore);
    assert.deepEqual(f.cacheEvents, ['key:miss', 'company:miss', 'key:hit', 'company:hit']);
    f.clock.now += POSITIVE_TTL;
    assert.equal(f.verifier.verifyCached(f.key), undefined, 'a record past its TTL needs the store');
    assert.equal(f.cacheEvents.length, 4);
    assert.equal(f.probe.count('findKeyByHash'), 1);
  });

  test('format refusals and cached unknown or revoked keys are answered without the store', async () => {
    const f = await setup();
    assert.deepEqual(f.verifier.verifyCached(undefined), {
      ok: false,
      code: 'MISSING_KEY',
      reason: 'missing',
    });
    const typo = f.key.slice(0, -1) + (f.key.endsWith('A') ? 'B' : 'A');
    assert.deepEqual(f.verifier.verifyCached(typo), { ok: false, code: 'INVALID_KEY', reason: 'checksum' });
    const unknown = generateApiKey('live');
    assert.equal(f.verifier.verifyCached(unknown), undefined);
    assert.deepEqual(await f.verifier.verify(unknown), { ok: false, code: 'INVALID_KEY', reason: 'unknown' });
    assert.deepEqual(f.verifier.verifyCached(unknown), { ok: false, code: 'INVALID_KEY', reason: 'unknown' });
    await f.revoke();
    const revoked = await f.verifier.verify(f.key);
    assert.equal(!revoked.ok && revoked.reason, 'revoked');
    const again = f.verifier.verifyCached(f.key);
    assert.equal(again !== undefined && !again.ok && again.reason, 'revoked');
    assert.equal(f.probe.count('findKeyByHash'), 2);
    assert.equal(f.probe.count('touchKey'), 0, 'a refused key records no use');
  });

  test('a cached key stops at its expiresAt to the millisecond (instants parsed once per record)', async () => {
    const f = await setup({ positiveTtlMs: 10_000 });
    await f.probe.updateKey(f.record.id, { expiresAt: isoSeconds(T0 + 2000) });
    assert.ok((await f.verifier.verify(f.key)).ok);
    f.clock.now = T0 + 1999;
    assert.equal(f.verifier.verifyCached(f.key)?.ok, true);
    assert.equal((await f.verifier.verify(f.key)).ok, true);
    f.clock.now = T0 + 2000;
    const expired = f.verifier.verifyCached(f.key);
    assert.equal(expired !== undefined && !expired.ok && expired.reason, 'expired');
    const viaVerify = await f.verifier.verify(f.key);
    assert.equal(!viaVerify.ok && viaVerify.reason, 'expired');
    assert.equal(f.probe.count('findKeyByHash'), 1, 'all from the one cached record');
  });
});

/**
 * A store of one's own (see `KeyStore`) that hands out one object per key record and updates that
 * object in place on every read, instead of a fresh copy each time.
 */
function sharedRecords(inner: KeyStore): KeyStore {
  const objects = new Map<string, KeyRecord>();
  return new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'findKeyByHash')
        return async (hash: string) => {
          const fresh = await target.findKeyByHash(hash);
          if (fresh === null) return null;
          const own = objects.get(hash);
          if (own === undefined) objects.set(hash, fresh);
          return own === undefined ? fresh : Object.assign(own, fresh);
        };
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/** Replaces the memory store's contents (the file store's reload): records the admin API refuses. */
async function replaceRecords(f: Fixture, keys: KeyRecord[], companies?: Company[]): Promise<void> {
  const acme = (await f.probe.inner.getCompany('acme'))!;
  (f.probe.inner as MemoryKeyStore).replaceContents(companies ?? [acme], keys);
}

async function addCompanyWithKey(f: Fixture, id: string): Promise<string> {
  const acme = (await f.probe.inner.getCompany('acme'))!;
  assert.equal(await f.probe.inner.createCompany({ ...acme, id, name: id }), true);
  const key = generateApiKey('live');
  const rec: KeyRecord = { ...f.record, id: `key_${id}`, companyId: id, hash: hashApiKey(key) };
  assert.deepEqual(await f.probe.inner.createKey(rec, 0, isoSeconds(T0)), { ok: true });
  return key;
}

describe('KeyVerifier: every denial, as a value', () => {
  test('an empty header is a missing key, on both paths', async () => {
    const f = await setup();
    const missing = { ok: false, code: 'MISSING_KEY', reason: 'missing' };
    assert.deepEqual(await f.verifier.verify(''), missing);
    assert.deepEqual(f.verifier.verifyCached(''), missing);
  });

  test('a key whose company does not exist is an invalid key (orphan), on both paths', async () => {
    const f = await setup();
    const ghostKey = generateApiKey('live');
    const ghost: KeyRecord = { ...f.record, id: 'key_ghost', companyId: 'ghost', hash: hashApiKey(ghostKey) };
    await replaceRecords(f, [{ ...f.record }, ghost]);
    const orphan = { ok: false, code: 'INVALID_KEY', reason: 'orphan' };
    assert.deepEqual(await f.verifier.verify(ghostKey), orphan);
    assert.deepEqual(f.verifier.verifyCached(ghostKey), orphan);
    await settle();
    assert.equal(f.probe.count('touchKey'), 0, 'an orphan key records no use');
  });

  test('a company without API access: API_ACCESS_DISABLED, on both paths', async () => {
    const f = await setup();
    await f.probe.inner.updateCompany('acme', { apiAccess: false }, isoSeconds(T0));
    const disabled = { ok: false, code: 'API_ACCESS_DISABLED', reason: 'api_access_disabled' };
    assert.deepEqual(await f.verifier.verify(f.key), disabled);
    assert.deepEqual(f.verifier.verifyCached(f.key), disabled);
    await settle();
    assert.equal(f.probe.count('touchKey'), 0);
  });

  test('revoked: INVALID_KEY with the record (for the audit trail)', async () => {
    const f = await setup();
    await f.revoke();
    const r = await f.verifier.verify(f.key);
    assert.ok(!r.ok);
    assert.equal(r.code, 'INVALID_KEY');
    assert.equal(r.reason, 'revoked');
    assert.equal(r.key?.id, 'key_1');
  });

  test('disabled: INVALID_KEY (reason disabled) on both paths, until disabledAt is cleared; then it verifies again', async () => {
    const f = await setup();
    const toggle = async (disabledAt: string | null) => {
      await f.probe.inner.updateKey(f.record.id, { disabledAt });
      await f.probe.inner.publish({ kind: 'key', hash: f.record.hash });
    };
    await toggle(isoSeconds(T0));
    const r = await f.verifier.verify(f.key);
    assert.ok(!r.ok);
    assert.equal(`${r.code}/${r.reason}`, 'INVALID_KEY/disabled');
    const cached = f.verifier.verifyCached(f.key);
    assert.equal(cached !== undefined && !cached.ok && cached.reason, 'disabled');
    await toggle(null);
    assert.ok((await f.verifier.verify(f.key)).ok, 'enabled again');
  });

  test('a revocation scheduled after the expiry: expired until the revocation time, then revoked', async () => {
    const f = await setup();
    await replaceRecords(f, [
      { ...f.record, expiresAt: isoSeconds(T0 + 1000), revokedAt: isoSeconds(T0 + 5000) },
    ]);
    f.clock.now = T0 + 2000;
    const expired = await f.verifier.verify(f.key);
    assert.equal(!expired.ok && `${expired.code}/${expired.reason}`, 'INVALID_KEY/expired');
    f.clock.now = T0 + 5000;
    const revoked = await f.verifier.verify(f.key);
    assert.equal(!revoked.ok && `${revoked.code}/${revoked.reason}`, 'INVALID_KEY/revoked');
  });

  test('an expiresAt that names no instant counts as ended (fail closed)', async () => {
    const f = await setup();
    await replaceRecords(f, [{ ...f.record, expiresAt: '2030-02-30T00:00:00Z' }]);
    const r = await f.verifier.verify(f.key);
    assert.equal(!r.ok && `${r.code}/${r.reason}`, 'INVALID_KEY/expired');
    assert.equal(f.verifier.verifyCached(f.key)?.ok, false);
  });

  test('the store error is the cause of STORE_UNAVAILABLE', async () => {
    const f = await setup();
    const down = new Error('connection refused');
    f.probe.fail('findKeyByHash', down);
    await assert.rejects(
      f.verifier.verify(f.key),
      (err: unknown) => err instanceof GatewayError && err.code === 'STORE_UNAVAILABLE' && err.cause === down,
    );
  });
});

describe('KeyVerifier: invalidations drop exactly what they name', () => {
  test('a key invalidation drops that key only: the company stays cached', async () => {
    const f = await setup();
    assert.ok((await f.verifier.verify(f.key)).ok);
    await f.probe.inner.publish({ kind: 'key', hash: f.record.hash });
    assert.equal(f.verifier.verifyCached(f.key), undefined, 'the key must be read again');
    assert.ok((await f.verifier.verify(f.key)).ok);
    assert.equal(f.probe.count('findKeyByHash'), 2);
    assert.equal(f.probe.count('getCompany'), 1);
  });

  test('a company invalidation drops that company only: a suspension applies at once', async () => {
    const f = await setup();
    assert.ok((await f.verifier.verify(f.key)).ok);
    await f.probe.inner.updateCompany('acme', { status: 'suspended' }, isoSeconds(T0));
    await f.probe.inner.publish({ kind: 'company', id: 'acme' });
    f.cacheEvents.length = 0;
    assert.equal(f.verifier.verifyCached(f.key), undefined, 'the company must be read again');
    assert.deepEqual(f.cacheEvents, [], 'an undefined answer counts nothing');
    assert.deepEqual(await f.verifier.verify(f.key), {
      ok: false,
      code: 'COMPANY_INACTIVE',
      reason: 'company_inactive',
    });
    assert.equal(f.probe.count('findKeyByHash'), 1, 'the key stayed cached');
    assert.equal(f.probe.count('getCompany'), 2);
  });

  test('an "all" invalidation drops every key and company', async () => {
    const f = await setup();
    assert.ok((await f.verifier.verify(f.key)).ok);
    await f.probe.inner.publish({ kind: 'all' });
    assert.equal(f.verifier.cachedKeys, 0);
    assert.ok((await f.verifier.verify(f.key)).ok);
    assert.equal(f.probe.count('findKeyByHash'), 2);
    assert.equal(f.probe.count('getCompany'), 2);
  });
});

describe('KeyVerifier: cache bookkeeping', () => {
  test('cache events: a miss per store read, a hit per cached answer, on both paths', async () => {
    const f = await setup();
    assert.ok((await f.verifier.verify(f.key)).ok);
    assert.ok((await f.verifier.verify(f.key)).ok);
    assert.deepEqual(f.cacheEvents, ['key:miss', 'company:miss', 'key:hit', 'company:hit']);
    const unknown = generateApiKey('live');
    assert.equal((await f.verifier.verify(unknown)).ok, false);
    f.cacheEvents.length = 0;
    assert.deepEqual(f.verifier.verifyCached(unknown), { ok: false, code: 'INVALID_KEY', reason: 'unknown' });
    assert.deepEqual(f.cacheEvents, ['key:hit'], 'a cached unknown key: one key hit, no company');
  });

  test('works without observability hooks (each one is optional)', async () => {
    const f = await setup({ onCache: undefined, onStoreError: undefined });
    const unhandled: unknown[] = [];
    const onUnhandled = (err: unknown) => unhandled.push(err);
    process.on('unhandledRejection', onUnhandled);
    try {
      f.probe.fail('touchKey');
      assert.ok((await f.verifier.verify(f.key)).ok, 'store reads');
      assert.ok((await f.verifier.verify(f.key)).ok, 'cache hits');
      assert.equal(f.verifier.verifyCached(f.key)?.ok, true);
      const unknown = generateApiKey('live');
      assert.equal((await f.verifier.verify(unknown)).ok, false);
      assert.equal(f.verifier.verifyCached(unknown)?.ok, false);
      f.probe.fail('findKeyByHash');
      f.probe.fail('getCompany');
      f.clock.now += POSITIVE_TTL;
      assert.ok((await f.verifier.verify(f.key)).ok, 'stale copies');
      await assertStoreUnavailable(f.verifier.verify(generateApiKey('live')), 'no copy');
      await settle();
      assert.equal(f.probe.count('touchKey'), 1, 'the failed lastUsedAt write was tried');
      assert.deepEqual(unhandled, [], 'the failed write is swallowed');
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  test('the company cache holds a quarter as many entries as the key cache, and at least 100', async () => {
    const small = await setup({ maxEntries: 4 });
    const two = [small.key, await addCompanyWithKey(small, 'c2')];
    for (const k of [...two, ...two]) assert.ok((await small.verifier.verify(k)).ok);
    assert.equal(small.probe.count('getCompany'), 2, '2 companies fit although 4 / 4 = 1');

    const big = await setup({ maxEntries: 800 }); // 200 companies
    const keys = [big.key];
    for (let i = 1; i <= 200; i++) keys.push(await addCompanyWithKey(big, `c${i}`));
    for (const k of keys) assert.ok((await big.verifier.verify(k)).ok);
    assert.equal(big.probe.count('getCompany'), 201);
    assert.ok((await big.verifier.verify(keys[200]!)).ok);
    assert.equal(big.probe.count('getCompany'), 201, 'the last 200 companies are cached');
    assert.ok((await big.verifier.verify(keys[0]!)).ok);
    assert.equal(big.probe.count('getCompany'), 202, 'the 201st company pushed out the oldest');
    assert.equal(big.probe.count('findKeyByHash'), 201, 'every key stayed cached');
  });

  test('a record object whose revokedAt or expiresAt changes in place is re-checked', async () => {
    // The instants are parsed once per record object; a store that updates its objects in place
    // must not leave the verifier with the old parse.
    const f = await setup({}, sharedRecords);
    const first = await f.verifier.verify(f.key);
    assert.ok(first.ok);
    await f.revoke();
    const revoked = await f.verifier.verify(f.key);
    assert.ok(!revoked.ok);
    assert.equal(revoked.reason, 'revoked');
    assert.equal(revoked.key, first.key, 'the same object, changed in place');

    const g = await setup({}, sharedRecords);
    const before = await g.verifier.verify(g.key);
    assert.ok(before.ok);
    await g.probe.inner.updateKey(g.record.id, { expiresAt: isoSeconds(T0) });
    await g.probe.inner.publish({ kind: 'key', hash: g.record.hash });
    const expired = await g.verifier.verify(g.key);
    assert.ok(!expired.ok);
    assert.equal(expired.reason, 'expired');
    assert.equal(expired.key, before.key);
  });
});

describe('KeyVerifier: a stored record that breaks the field rules fails closed (INVARIANTS 1, 15)', () => {
  const KEY_AS_TEXT = generateApiKey('live');
  const refusedBy = async (f: Fixture, refused: RefusedRecord[], key: string) => {
    const want = { ok: false, code: 'INVALID_KEY', reason: 'invalid_record' };
    assert.deepEqual(await f.verifier.verify(key), want);
    assert.deepEqual(f.verifier.verifyCached(key), want);
    assert.deepEqual(await f.verifier.verify(key), want);
    assert.equal(refused.length, 1, 'reported once per cached record');
    assert.ok(!JSON.stringify(refused).includes(KEY_AS_TEXT), 'a report never quotes the value');
  };

  for (const [what, over, fields, shown] of [
    ['a key as its id', { id: KEY_AS_TEXT }, ['id'], { companyId: 'acme' }],
    [
      'a key in its label',
      { label: `backup ${KEY_AS_TEXT}` },
      ['label'],
      { keyId: 'key_1', companyId: 'acme' },
    ],
    ['a forged prefix', { prefix: 'nk_test_AbC123' }, ['prefix'], { keyId: 'key_1', companyId: 'acme' }],
    ['a prefix holding the key', { prefix: KEY_AS_TEXT }, ['prefix'], { keyId: 'key_1', companyId: 'acme' }],
    [
      'a free-text environment',
      { environment: 'Live Prod' },
      ['environment', 'prefix'],
      { keyId: 'key_1', companyId: 'acme' },
    ],
    [
      'an environment its prefix does not name',
      { environment: 'test' },
      ['prefix'],
      { keyId: 'key_1', companyId: 'acme' },
    ],
    [
      'a createdAt that is no instant',
      { createdAt: '1970-13-01T00:00:00Z' },
      ['createdAt'],
      { keyId: 'key_1', companyId: 'acme' },
    ],
  ] as const) {
    test(`a key record with ${what}: INVALID_KEY (invalid_record) on both paths, reported by field name`, async () => {
      const refused: RefusedRecord[] = [];
      const f = await setup({ onRecordRefused: (r) => refused.push(r) });
      await replaceRecords(f, [{ ...f.record, ...over }]);
      await refusedBy(f, refused, f.key);
      assert.deepEqual(refused[0], { kind: 'key', reason: 'invalid_record', ...shown, fields: [...fields] });
      await settle();
      assert.equal(f.probe.count('touchKey'), 0, 'a refused record records no use');
    });
  }

  test('a key whose company id, or whose company, holds a key: refused, the id never reported', async () => {
    const refused: RefusedRecord[] = [];
    const f = await setup({ onRecordRefused: (r) => refused.push(r) });
    const acme = (await f.probe.inner.getCompany('acme'))!;
    await replaceRecords(f, [{ ...f.record, companyId: KEY_AS_TEXT }], [{ ...acme, id: KEY_AS_TEXT }]);
    await refusedBy(f, refused, f.key);
    assert.deepEqual(refused[0], {
      kind: 'key',
      reason: 'invalid_record',
      keyId: 'key_1',
      fields: ['companyId'],
    });

    const named: RefusedRecord[] = [];
    const g = await setup({ onRecordRefused: (r) => named.push(r) });
    await replaceRecords(g, [{ ...g.record }], [{ ...acme, name: `Acme ${KEY_AS_TEXT}` }]);
    await refusedBy(g, named, g.key);
    assert.deepEqual(named[0], {
      kind: 'company',
      reason: 'invalid_record',
      companyId: 'acme',
      fields: ['name'],
    });
  });

  test('a company on a tier the config lacks: TIER_NOT_CONFIGURED on both paths, reported with its tier', async () => {
    const refused: RefusedRecord[] = [];
    const f = await setup({ tiers: new Set(['free']), onRecordRefused: (r) => refused.push(r) });
    const want = { ok: false, code: 'TIER_NOT_CONFIGURED', reason: 'tier_missing' };
    assert.deepEqual(await f.verifier.verify(f.key), want);
    assert.deepEqual(f.verifier.verifyCached(f.key), want);
    assert.deepEqual(refused, [
      { kind: 'company', reason: 'tier_missing', companyId: 'acme', tier: 'standard', fields: ['tier'] },
    ]);
    // Moved to a configured tier (an admin PATCH publishes the change): it works at once.
    await f.probe.inner.updateCompany('acme', { tier: 'free' }, isoSeconds(T0));
    await f.probe.inner.publish({ kind: 'company', id: 'acme' });
    assert.equal((await f.verifier.verify(f.key)).ok, true);
    // Without a tier list the verifier leaves tiers to the limiter.
    const g = await setup();
    assert.equal((await g.verifier.verify(g.key)).ok, true);
  });
});

describe('KeyVerifier: the negative cache is bounded apart from the records', () => {
  test('a flood of unknown keys never pushes a valid key out, and holds at most maxEntries of them', async () => {
    const f = await setup({ maxEntries: 100 });
    assert.ok((await f.verifier.verify(f.key)).ok);
    const lookups = f.probe.count('findKeyByHash');
    for (let i = 0; i < 350; i++) {
      const r = await f.verifier.verify(generateApiKey('live'));
      assert.equal(!r.ok && r.reason, 'unknown');
    }
    assert.equal(f.verifier.unknownKeys, 100, 'bounded by maxEntries');
    assert.ok(f.verifier.verifyCached(f.key)?.ok, 'the valid key is still cached');
    assert.ok((await f.verifier.verify(f.key)).ok);
    assert.equal(f.probe.count('findKeyByHash'), lookups + 350, 'no store lookup for the valid key');
  });
});
