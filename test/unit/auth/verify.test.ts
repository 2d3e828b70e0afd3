import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { generateApiKey, hashApiKey } from '../../../src/auth/api-key.js';
import { KeyVerifier, type CacheOutcome, type VerifierOptions } from '../../../src/auth/verify.js';
import { GatewayError } from '../../../src/errors.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';
import type { KeyRecord } from '../../../src/store/types.js';
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

async function setup(over: Partial<VerifierOptions> = {}): Promise<Fixture> {
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
    store: probe,
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
