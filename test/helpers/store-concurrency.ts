import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AdminService } from '../../src/admin/service.js';
import {
  countsAgainstCap,
  isKeyActive,
  type Company,
  type CompanyPatch,
  type KeyPatch,
  type KeyRecord,
  type KeyStore,
  type RateWindow,
  type Scope,
} from '../../src/store/types.js';
import { isoSeconds } from '../../src/time.js';

/** 0-2 ms, or the next turn of the event loop: enough to shuffle which write lands first. */
async function jitter(): Promise<void> {
  const r = Math.random();
  if (r < 0.25) return;
  if (r < 0.5) return new Promise((resolve) => setImmediate(resolve));
  return new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 3)));
}

function pick<T>(items: readonly T[]): T {
  return items[Math.floor(Math.random() * items.length)]!;
}

/**
 * Ids of the company's keys that count against the cap now (`countsAgainstCap`: active, and not a
 * rotation's predecessor on its way out), as one listKeys call sees them.
 */
async function countedIds(store: KeyStore, companyId: string): Promise<Set<string>> {
  const now = Date.now();
  const keys = await store.listKeys(companyId);
  const ids = new Set(keys.map((k) => k.id));
  return new Set(keys.filter((k) => countsAgainstCap(k, ids, now)).map((k) => k.id));
}

/**
 * Ids of the company's keys that still work once every grace period has ended (the longest is
 * 90 days): the cap must hold for them however the writes interleaved.
 */
async function idsAfterEveryGrace(store: KeyStore, companyId: string): Promise<Set<string>> {
  const later = Date.now() + 91 * 86_400_000;
  return new Set((await store.listKeys(companyId)).filter((k) => isKeyActive(k, later)).map((k) => k.id));
}

const WIDE: Scope[] = [{ route: '/notify/v1' }, { route: '/media' }];
const NARROW: Scope[] = [{ route: '/notify/v1', methods: ['GET'], paths: ['/notify/v1/health'] }];
const LOOSE: RateWindow[] = [{ points: 100, duration: 60 }];
const TIGHT: RateWindow[] = [{ points: 2, duration: 60 }];

/**
 * The store, with `hook` run once right after the first call that matches `when` (a write, or the
 * read of a key by id): a write of another request lands exactly there (no timing involved).
 * Everything else passes through.
 */
function interleaved(
  store: KeyStore,
  when: (op: 'createKey' | 'updateKey' | 'getKey', arg: KeyRecord | KeyPatch | string) => boolean,
  hook: () => Promise<void>,
): KeyStore {
  let fired = false;
  const fire = async (op: 'createKey' | 'updateKey' | 'getKey', arg: KeyRecord | KeyPatch | string) => {
    if (fired || !when(op, arg)) return;
    fired = true;
    await hook();
  };
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'createKey')
        return async (rec: KeyRecord, cap: number, now: string, replaces?: string) => {
          const r = await target.createKey(rec, cap, now, replaces);
          await fire('createKey', rec);
          return r;
        };
      if (prop === 'updateKey')
        return async (id: string, patch: KeyPatch) => {
          const r = await target.updateKey(id, patch);
          await fire('updateKey', patch);
          return r;
        };
      if (prop === 'getKey')
        return async (id: string) => {
          const r = await target.getKey(id);
          await fire('getKey', id);
          return r;
        };
      const v = Reflect.get(target, prop, receiver) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * The concurrency section of the KeyStore contract (issue 10; INVARIANTS 2, 3, 5), for every
 * writable store: memory, Redis single node, Redis Cluster. Call it inside the store's `describe`;
 * `getStore` is read when the tests run (after the suite's `before`). `tag` keeps ids apart when
 * several suites share one store.
 */
export function storeConcurrencySuite(getStore: () => KeyStore, tag = 'cc'): void {
  const service = (maxActiveKeys = 2) =>
    new AdminService({
      store: getStore(),
      tiers: new Set(['free', 'standard']),
      maxActiveKeys,
      rotationAgeDays: 90,
    });

  test('rotation hands over what restricts the old key: scopes, limits, expiry, environment', async () => {
    const store = getStore();
    const svc = service(0);
    const co = `${tag}-rot-keep`;
    assert.ok((await svc.createCompany({ id: co, tier: 'free' })).ok);
    const expiresAt = isoSeconds(Date.now() + 86_400_000);
    const k = await svc.createKey(co, { environment: 'test', label: 'ci', expiresAt });
    assert.ok(k.ok);
    assert.ok((await svc.updateKey(k.value.id, { scopes: NARROW, limits: TIGHT })).ok);
    const r = await svc.rotateKey(k.value.id, { gracePeriodSeconds: 3600 });
    assert.ok(r.ok, JSON.stringify(r));
    const next = await store.getKey(r.value.id);
    assert.ok(next);
    assert.deepEqual(
      [next.scopes, next.limits, next.expiresAt, next.environment, next.label, next.companyId],
      [NARROW, TIGHT, expiresAt, 'test', 'ci', co],
      'the new key lost a restriction of the old one',
    );
    // What belongs to the old material or to its retirement stays behind.
    assert.deepEqual(
      [next.revokedAt, next.exposedAt, next.rotatedTo, next.lastUsedAt],
      [null, null, null, null],
    );
    const view = await svc.getKey(r.value.id);
    assert.ok(view.ok);
    assert.deepEqual([view.value.scopes, view.value.limits], [NARROW, TIGHT]);
    // A key without restrictions of its own hands over none (null stays null, not []).
    const plain = await svc.createKey(co, {});
    assert.ok(plain.ok);
    const rp = await svc.rotateKey(plain.value.id, {});
    assert.ok(rp.ok);
    const np = await store.getKey(rp.value.id);
    assert.deepEqual([np?.scopes, np?.limits], [null, null]);
    // The rotate body cannot set restrictions (only PATCH, which needs the admin role, can).
    for (const body of [{ scopes: null }, { limits: null }, { scopes: WIDE }]) {
      const bad = await svc.rotateKey(k.value.id, body);
      assert.equal(bad.ok, false, JSON.stringify(body));
      assert.equal(bad.ok ? 0 : bad.status, 400);
    }
  });

  test('rotation reads the restrictions in the same atomic step that marks the old key rotated', async () => {
    const store = getStore();
    const co = `${tag}-rot-cas`;
    const plain = service(0);
    assert.ok((await plain.createCompany({ id: co, tier: 'free' })).ok);
    const withHook = (when: Parameters<typeof interleaved>[1], hook: () => Promise<void>) =>
      new AdminService({
        store: interleaved(store, when, hook),
        tiers: new Set(['free']),
        maxActiveKeys: 0,
        rotationAgeDays: 90,
      });

    // 1. A narrowing PATCH lands after the rotation read the old key, before its claim marked the
    //    old key rotated: the new key gets the narrowed restrictions.
    const a = await plain.createKey(co, {});
    assert.ok(a.ok);
    assert.ok((await plain.updateKey(a.value.id, { scopes: WIDE, limits: LOOSE })).ok);
    let patched: Awaited<ReturnType<AdminService['updateKey']>> | undefined;
    const svcA = withHook(
      (op, arg) => op === 'getKey' && arg === a.value.id,
      async () => {
        patched = await plain.updateKey(a.value.id, { scopes: NARROW, limits: TIGHT });
      },
    );
    const ra = await svcA.rotateKey(a.value.id, { gracePeriodSeconds: 3600 });
    assert.ok(ra.ok, JSON.stringify(ra));
    assert.ok(patched?.ok, `the PATCH before the rotation's commit: ${JSON.stringify(patched)}`);
    const oldA = await store.getKey(a.value.id);
    const newA = await store.getKey(ra.value.id);
    assert.deepEqual([oldA?.scopes, oldA?.limits], [NARROW, TIGHT]);
    assert.deepEqual(
      [newA?.scopes, newA?.limits],
      [NARROW, TIGHT],
      'the new key is wider than the old key became',
    );

    // 2. A PATCH that lands right after the claim marked the old key rotated (before the new key
    //    is stored) is refused (409) and changes nothing: the old key's restrictions are the ones
    //    the new key takes over.
    const b = await plain.createKey(co, {});
    assert.ok(b.ok);
    assert.ok((await plain.updateKey(b.value.id, { scopes: WIDE, limits: LOOSE })).ok);
    let late: Awaited<ReturnType<AdminService['updateKey']>> | undefined;
    const svcB = withHook(
      (op, arg) => op === 'updateKey' && typeof arg === 'object' && 'rotation' in arg,
      async () => {
        late = await plain.updateKey(b.value.id, { scopes: NARROW });
      },
    );
    const rb = await svcB.rotateKey(b.value.id, { gracePeriodSeconds: 3600 });
    assert.ok(rb.ok, JSON.stringify(rb));
    assert.equal(late?.ok, false, 'a PATCH of a rotated key was applied to it alone');
    assert.equal(late?.ok === false ? late.status : 0, 409);
    assert.match(late?.ok === false ? late.details : '', new RegExp(`rotated to ${rb.value.id}`));
    const oldB = await store.getKey(b.value.id);
    const newB = await store.getKey(rb.value.id);
    assert.deepEqual([oldB?.scopes, oldB?.limits], [WIDE, LOOSE], 'the refused PATCH changed the old key');
    assert.deepEqual([newB?.scopes, newB?.limits], [WIDE, LOOSE]);
    // The successor is where restrictions change now; other fields of the old key still may.
    assert.ok((await plain.updateKey(rb.value.id, { scopes: NARROW })).ok);
    assert.equal((await store.updateKey(b.value.id, { label: 'retiring' }))?.label, 'retiring');
    assert.deepEqual((await store.updateKey(b.value.id, { limits: null }))?.limits, LOOSE);
  });

  test('concurrency: a PATCH of scopes racing a rotation never leaves the new key wider than the old key (40 interleavings)', async () => {
    const store = getStore();
    const svc = service(0);
    const co = `${tag}-rot-race`;
    assert.ok((await svc.createCompany({ id: co, tier: 'free' })).ok);
    for (let trial = 0; trial < 40; trial++) {
      const k = await svc.createKey(co, {});
      assert.ok(k.ok);
      assert.ok((await svc.updateKey(k.value.id, { scopes: WIDE, limits: LOOSE })).ok);
      const [patched, rotated] = await Promise.all([
        jitter().then(() => svc.updateKey(k.value.id, { scopes: NARROW, limits: TIGHT })),
        jitter().then(() => svc.rotateKey(k.value.id, { gracePeriodSeconds: 3600 })),
      ]);
      assert.ok(rotated.ok, `trial ${trial}: ${JSON.stringify(rotated)}`);
      const old = await store.getKey(k.value.id);
      const next = await store.getKey(rotated.value.id);
      assert.ok(old && next);
      // The PATCH either landed before the rotation (and the new key has it), or it was refused.
      if (patched.ok) assert.deepEqual([old.scopes, old.limits], [NARROW, TIGHT], `trial ${trial}`);
      else assert.equal(patched.status, 409, `trial ${trial}: ${patched.details}`);
      assert.deepEqual(
        [next.scopes, next.limits],
        [old.scopes, old.limits],
        `trial ${trial}: the new key's restrictions differ from the old key's final ones`,
      );
    }
  });

  test('concurrency: concurrent PATCHes of different fields all apply, each with its own exact before/after', async () => {
    const store = getStore();
    const patches: CompanyPatch[] = [
      { status: 'suspended' },
      { tier: 'standard' },
      { apiAccess: false },
      { name: 'renamed' },
    ];
    for (let trial = 0; trial < 10; trial++) {
      const id = `${tag}-patch-${trial}`;
      const original: Company = {
        id,
        name: id,
        tier: 'free',
        status: 'active',
        apiAccess: true,
        createdAt: '2026-01-01T00:00:00Z',
        updatedAt: '2026-01-01T00:00:00Z',
        scopes: null,
        limits: null,
      };
      assert.equal(await store.createCompany(original), true);
      const results = await Promise.all(
        patches.map(async (p) => {
          await jitter();
          return store.updateCompany(id, p, isoSeconds());
        }),
      );
      const final = await store.getCompany(id);
      assert.deepEqual(
        { name: final?.name, tier: final?.tier, status: final?.status, apiAccess: final?.apiAccess },
        { name: 'renamed', tier: 'standard', status: 'suspended', apiAccess: false },
        `trial ${trial}: a change was lost`,
      );
      results.forEach((r, i) => {
        const [field, value] = Object.entries(patches[i]!)[0]! as [keyof Company, unknown];
        assert.ok(r, `trial ${trial}: update ${field} found no company`);
        // Each field changes once, so the write that changed it saw the original value before it.
        assert.equal(r.before[field], original[field], `trial ${trial}: ${field} before`);
        assert.equal(r.after[field], value, `trial ${trial}: ${field} after`);
      });
    }
    assert.equal(await store.updateCompany(`${tag}-no-such-company`, { tier: 'free' }, isoSeconds()), null);
    assert.equal(await store.getCompany(`${tag}-no-such-company`), null, 'an update creates nothing');
  });

  test('concurrency: revoke racing rotate with a grace period ends revoked (50 interleavings)', async () => {
    const store = getStore();
    const svc = service(2);
    for (let trial = 0; trial < 50; trial++) {
      const co = `${tag}-race-${trial}`;
      assert.ok((await svc.createCompany({ id: co, tier: 'free' })).ok);
      const k = await svc.createKey(co, {});
      assert.ok(k.ok);
      const [revoked, rotated] = await Promise.all([
        jitter().then(() => svc.revokeKey(k.value.id)),
        jitter().then(() => svc.rotateKey(k.value.id, { gracePeriodSeconds: 86_400 })),
      ]);
      assert.ok(revoked.ok, `trial ${trial}: revoke failed`);
      assert.equal(revoked.value.status, 'revoked');
      const old = await store.getKey(k.value.id);
      assert.ok(old?.revokedAt, `trial ${trial}: the revocation was undone`);
      assert.ok(Date.parse(old.revokedAt) <= Date.now(), `trial ${trial}: revokedAt moved later`);
      assert.equal(isKeyActive(old, Date.now()), false, `trial ${trial}: the old key works again`);
      if (rotated.ok) {
        // Never an answer that promises the old key longer than it really works.
        assert.ok(rotated.value.oldKeyRevokesAt !== null);
      } else {
        assert.equal(rotated.status, 409, `trial ${trial}: ${rotated.details}`);
      }
      // The cap still counts right: at most 2 counted keys, whatever more we try to create, and at
      // most 2 that work once the grace periods have ended.
      for (let i = 0; i < 3; i++) await svc.createKey(co, {});
      assert.ok((await countedIds(store, co)).size <= 2, `trial ${trial}: cap exceeded`);
      assert.ok((await idsAfterEveryGrace(store, co)).size <= 2, `trial ${trial}: cap exceeded later`);
    }
  });

  test('concurrency: 20 concurrent creates, rotations and revocations keep the cap at every observed point', async () => {
    const store = getStore();
    const cap = 2;
    const svc = service(cap);
    for (let round = 0; round < 8; round++) {
      const co = `${tag}-cap-${round}`;
      assert.ok((await svc.createCompany({ id: co, tier: 'free' })).ok);
      const first = await svc.createKey(co, {});
      assert.ok(first.ok);
      const ids = [first.value.id];
      let done = false;
      let samples = 0;
      // Two listKeys one after the other: a key active in both was active the whole time in
      // between (a key never comes back, see the next test), so the keys active in both were all
      // active at once at some instant. A non-atomic listKeys cannot make this count too high.
      const sampler = (async () => {
        while (!done) {
          const a = await countedIds(store, co);
          const b = await countedIds(store, co);
          const both = [...a].filter((id) => b.has(id));
          assert.ok(both.length <= cap, `round ${round}: ${both.length} keys active at once`);
          samples++;
          // The memory store answers in microtasks only: let timers (and the writers) run.
          await new Promise((r) => setImmediate(r));
        }
      })();
      // Half the operations race on the first key (revoke against rotate with a grace period:
      // the old code brought such a key back to life outside the cap's count), the other half
      // create, rotate and revoke at random, a little later.
      const ops = Array.from({ length: 20 }, async (_, i) => {
        await jitter();
        const racing = i < 10;
        if (!racing) await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 5)));
        const target = racing ? first.value.id : pick(ids);
        const kind = racing ? (i % 2) + 1 : i % 3;
        if (kind === 0) {
          const c = await svc.createKey(co, {});
          if (c.ok) ids.push(c.value.id);
          else assert.equal(c.status, 409);
        } else if (kind === 1) {
          const grace = racing ? 86_400 : pick([undefined, 0, 1, 86_400]);
          const r = await svc.rotateKey(target, grace === undefined ? {} : { gracePeriodSeconds: grace });
          if (r.ok) ids.push(r.value.id);
          else assert.equal(r.status, 409);
        } else {
          assert.ok((await svc.revokeKey(target)).ok);
        }
      });
      try {
        await Promise.all(ops);
      } finally {
        done = true;
        await sampler;
      }
      assert.ok(samples > 0);
      // Fill up to the cap: whatever the interleaving left behind, the store still counts right.
      for (let i = 0; i < cap + 1; i++) await svc.createKey(co, {});
      assert.ok((await countedIds(store, co)).size <= cap, `round ${round}: cap exceeded at the end`);
      assert.ok(
        (await idsAfterEveryGrace(store, co)).size <= cap,
        `round ${round}: more than ${cap} keys still work once every grace period has ended`,
      );
    }
  });

  test('concurrency: at the cap, racing rotations and creates: each key rotates once, no create gets past the cap (10 rounds)', async () => {
    const store = getStore();
    const cap = 2;
    const svc = service(cap);
    for (let round = 0; round < 10; round++) {
      const co = `${tag}-atcap-${round}`;
      assert.ok((await svc.createCompany({ id: co, tier: 'free' })).ok);
      const live = await svc.createKey(co, { environment: 'live' });
      const test = await svc.createKey(co, { environment: 'test' });
      assert.ok(live.ok && test.ok);
      let done = false;
      const sampler = (async () => {
        while (!done) {
          const a = await countedIds(store, co);
          const b = await countedIds(store, co);
          assert.ok([...a].filter((id) => b.has(id)).length <= cap, `round ${round}: over the cap`);
          await new Promise((r) => setImmediate(r));
        }
      })();
      // Two rotations of the live key (one wins), one of the test key that revokes it at once (its
      // place is held for its successor), and creates that must all find the cap full.
      const [liveA, liveB, test2, ...creates] = await Promise.all([
        jitter().then(() => svc.rotateKey(live.value.id, {})),
        jitter().then(() => svc.rotateKey(live.value.id, { gracePeriodSeconds: 3600 })),
        jitter().then(() => svc.rotateKey(test.value.id, { gracePeriodSeconds: 0 })),
        ...Array.from({ length: 4 }, () => jitter().then(() => svc.createKey(co, {}))),
      ]);
      done = true;
      await sampler;
      assert.equal([liveA, liveB].filter((r) => r.ok).length, 1, `round ${round}: the live key rotated once`);
      for (const r of [liveA, liveB]) if (!r.ok) assert.equal(r.status, 409, `round ${round}: ${r.details}`);
      assert.ok(test2.ok, `round ${round}: rotation at the cap with no grace: ${JSON.stringify(test2)}`);
      for (const c of creates)
        assert.equal(c.ok ? 201 : c.status, 409, `round ${round}: a create got past the cap`);
      assert.equal((await countedIds(store, co)).size, cap, `round ${round}`);
      assert.ok((await idsAfterEveryGrace(store, co)).size <= cap, `round ${round}: cap exceeded later`);
      // The old live key still works during its grace period; the old test key does not.
      const now = Date.now();
      assert.equal(isKeyActive((await store.getKey(live.value.id))!, now), true);
      assert.equal(isKeyActive((await store.getKey(test.value.id))!, now), false);
    }
  });

  test('concurrency: a PATCH, a rotation or a retry never moves revokedAt later, never un-revokes', async () => {
    const store = getStore();
    const svc = service(0);
    const co = `${tag}-final`;
    assert.ok((await svc.createCompany({ id: co, tier: 'free' })).ok);
    const k = await svc.createKey(co, {});
    assert.ok(k.ok);
    const rev = await svc.revokeKey(k.value.id);
    assert.ok(rev.ok);
    const at = rev.value.revokedAt!;
    const later = isoSeconds(Date.parse(at) + 3_600_000);
    assert.equal((await store.updateKey(k.value.id, { revokedAt: later }))?.revokedAt, at);
    const relabelled = await store.updateKey(k.value.id, { revokedAt: null, label: 'x' });
    assert.equal(relabelled?.revokedAt, at, 'null un-revoked the key');
    assert.equal(relabelled?.label, 'x', 'other fields still change');
    assert.equal((await svc.rotateKey(k.value.id, { gracePeriodSeconds: 3600 })).ok, false);
    await new Promise((r) => setTimeout(r, 1100)); // the retry runs a second later
    const retry = await svc.revokeKey(k.value.id);
    assert.ok(retry.ok);
    assert.equal((await store.getKey(k.value.id))?.revokedAt, at, 'a retry moved revokedAt');

    // A revocation that is only scheduled (grace period) can come earlier, never later.
    const b = await svc.createKey(co, {});
    assert.ok(b.ok);
    const r1 = await svc.rotateKey(b.value.id, { gracePeriodSeconds: 60 });
    assert.ok(r1.ok);
    const scheduled = r1.value.oldKeyRevokesAt!;
    const r2 = await svc.rotateKey(b.value.id, { gracePeriodSeconds: 86_400 });
    assert.equal(r2.ok ? 0 : r2.status, 409, 'a key is rotated once while its successor works');
    assert.equal((await store.getKey(b.value.id))?.revokedAt, scheduled, 'a second rotation postponed it');
    assert.equal((await store.getKey(b.value.id))?.rotatedTo, r1.value.id);
    // A claim that loses writes nothing; one that wins still cannot postpone the revocation.
    const postponed = isoSeconds(Date.now() + 7_200_000);
    const lost = await store.updateKey(b.value.id, {
      rotation: { to: 'key_x', from: null },
      revokedAt: later,
    });
    assert.deepEqual([lost?.rotatedTo, lost?.revokedAt], [r1.value.id, scheduled]);
    const won = await store.updateKey(b.value.id, {
      rotation: { to: 'key_y', from: r1.value.id },
      revokedAt: postponed,
    });
    assert.deepEqual([won?.rotatedTo, won?.revokedAt], ['key_y', scheduled]);
    assert.equal(
      (await store.updateKey(b.value.id, { revokedAt: isoSeconds(Date.now() + 7_200_000) }))?.revokedAt,
      scheduled,
    );
    const now = await svc.revokeKey(b.value.id);
    assert.ok(now.ok);
    assert.ok(Date.parse(now.value.revokedAt!) < Date.parse(scheduled), 'DELETE brings it forward');

    // An expiry is never extended either (that would bring an expired key back past the cap).
    const e = await svc.createKey(co, { expiresAt: isoSeconds(Date.now() + 60_000) });
    assert.ok(e.ok);
    const extended = await store.updateKey(e.value.id, { expiresAt: '2099-01-01T00:00:00Z' });
    assert.equal(extended?.expiresAt, e.value.expiresAt);
  });

  test('concurrency: concurrent creates of one company: exactly one wins, readers see all of it or nothing', async () => {
    const store = getStore();
    const id = `${tag}-dup`;
    const names = Array.from({ length: 10 }, (_, i) => `name-${i}`);
    let done = false;
    const seen: (Company | null)[] = [];
    const reader = (async () => {
      while (!done) {
        seen.push(await store.getCompany(id));
        await new Promise((r) => setImmediate(r));
      }
    })();
    const created = await Promise.all(
      names.map(async (name) => {
        await jitter();
        return store.createCompany({
          id,
          name,
          tier: 'standard',
          status: 'suspended',
          apiAccess: false,
          createdAt: '2026-01-01T00:00:00Z',
          updatedAt: '2026-01-01T00:00:00Z',
          scopes: null,
          limits: null,
        });
      }),
    );
    done = true;
    await reader;
    assert.equal(created.filter(Boolean).length, 1);
    const winner = names[created.indexOf(true)];
    const final = await store.getCompany(id);
    assert.equal(final?.name, winner);
    for (const c of [...seen, final]) {
      if (c === null) continue;
      assert.deepEqual(
        [c.name, c.tier, c.status, c.apiAccess, c.createdAt],
        [winner, 'standard', 'suspended', false, '2026-01-01T00:00:00Z'],
        'a reader saw part of a company',
      );
    }
  });
}
