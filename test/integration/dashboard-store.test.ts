import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { RedisDashboardStore } from '../../src/dashboard/redis-store.js';
import { MemoryDashboardStore, type DashboardStore, type Member } from '../../src/dashboard/store.js';
import { createRedisClient, waitForReady, type RedisClient } from '../../src/redis/connection.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

// One contract for every DashboardStore: each rule that depends on stored state holds when the
// calls race (all issued at once, as concurrent requests on several instances would).

const member = (companyId: string, email: string, role: Member['role'] = 'owner'): Member => ({
  companyId,
  email,
  role,
  createdAt: '2026-01-01T00:00:00Z',
  addedBy: 'test',
});

function contract(name: string, make: () => Promise<DashboardStore>) {
  describe(`DashboardStore contract: ${name}`, () => {
    let s: DashboardStore;
    before(async () => {
      s = await make();
    });

    test('a registration is decided once, whatever races', async () => {
      const r = {
        id: `reg-${name}`,
        companyName: 'Acme <b>',
        email: 'a@acme.test',
        status: 'pending' as const,
        createdAt: '2026-01-01T00:00:00Z',
        decidedAt: null,
        decidedBy: null,
      };
      assert.equal(await s.addRegistration(r), true);
      assert.equal(await s.addRegistration(r), false);
      const answers = await Promise.all([
        s.decideRegistration(r.id, 'approved', '2026-01-02T00:00:00Z', 'op1'),
        s.decideRegistration(r.id, 'rejected', '2026-01-02T00:00:00Z', 'op2'),
        s.decideRegistration(r.id, 'approved', '2026-01-02T00:00:00Z', 'op3'),
      ]);
      assert.equal(answers.filter((a) => a !== 'decided').length, 1);
      const stored = await s.getRegistration(r.id);
      assert.notEqual(stored?.status, 'pending');
      assert.equal(stored?.companyName, 'Acme <b>');
      assert.equal(await s.decideRegistration('nope', 'approved', 'x', 'y'), null);
      assert.ok((await s.listRegistrations()).some((x) => x.id === r.id));
    });

    test('an address belongs to one member; concurrent adds: exactly one wins', async () => {
      const answers = await Promise.all([
        s.addMember(member('c1', 'x@one.test')),
        s.addMember(member('c2', 'x@one.test')),
        s.addMember(member('c1', 'x@one.test')),
      ]);
      assert.deepEqual(answers.filter((a) => a === 'added').length, 1);
      const m = await s.findMember('x@one.test');
      assert.ok(m);
      assert.deepEqual(
        (await s.listMembers(m.companyId)).map((x) => x.email),
        ['x@one.test'],
      );
    });

    test('the last owner stays: two owners removed at once, one removal wins', async () => {
      await s.addMember(member('lo', 'o1@lo.test'));
      await s.addMember(member('lo', 'o2@lo.test'));
      await s.addMember(member('lo', 'd@lo.test', 'developer'));
      const answers = await Promise.all([
        s.removeMember('lo', 'o1@lo.test'),
        s.removeMember('lo', 'o2@lo.test'),
      ]);
      assert.deepEqual([...answers].sort(), ['last_owner', 'removed']);
      assert.equal(
        await s.removeMember('other', 'd@lo.test'),
        'not_found',
        'another company cannot remove it',
      );
      assert.equal(await s.removeMember('lo', 'd@lo.test'), 'removed');
      assert.equal(await s.findMember('d@lo.test'), null);
      assert.equal((await s.listMembers('lo')).length, 1);
    });

    test('releasing an address frees it, last owner or not, and only for the company that holds it', async () => {
      await s.addMember(member('rj', 'contact@rj.test'));
      await s.releaseMember('other', 'contact@rj.test');
      assert.equal(
        (await s.findMember('contact@rj.test'))?.companyId,
        'rj',
        'another company cannot release it',
      );
      await s.releaseMember('rj', 'contact@rj.test');
      assert.equal(await s.findMember('contact@rj.test'), null);
      assert.deepEqual(await s.listMembers('rj'), []);
      assert.equal(await s.addMember(member('elsewhere', 'contact@rj.test')), 'added');
    });

    test('a code allows 5 tries in all, even when 20 arrive at once, then it is burnt', async () => {
      const now = Date.now();
      await s.putCode('b@t.test', { hash: 'right', expiresAt: now + 600_000, sentAt: now }, 0, now);
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => s.checkCode('b@t.test', 'wrong', 5, now)),
      );
      assert.equal(answers.filter((a) => a === 'wrong').length, 4);
      assert.equal(answers.filter((a) => a === 'burnt').length, 1);
      assert.equal(answers.filter((a) => a === 'none').length, 15);
      assert.equal(
        await s.checkCode('b@t.test', 'right', 5, now),
        'none',
        'burnt: the right code no longer works',
      );
    });

    test('a code is single-use: 10 right answers at once, one sign-in', async () => {
      const now = Date.now();
      await s.putCode('one@t.test', { hash: 'h', expiresAt: now + 600_000, sentAt: now }, 0, now);
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => s.checkCode('one@t.test', 'h', 5, now)),
      );
      assert.equal(answers.filter((a) => a === 'ok').length, 1);
    });

    test('an expired code answers none; the resend cooldown holds, then a new code replaces the old', async () => {
      const now = Date.now();
      await s.putCode('c@t.test', { hash: 'old', expiresAt: now + 600_000, sentAt: now }, 60_000, now);
      const again = await s.putCode(
        'c@t.test',
        { hash: 'new', expiresAt: now + 600_000, sentAt: now },
        60_000,
        now + 1000,
      );
      assert.equal(again.retryAfterMs, 59_000);
      assert.equal(await s.checkCode('c@t.test', 'old', 5, now + 600_000), 'none', 'expired');
      const later = now + 61_000;
      assert.equal(
        (
          await s.putCode(
            'c@t.test',
            { hash: 'new', expiresAt: later + 600_000, sentAt: later },
            60_000,
            later,
          )
        ).retryAfterMs,
        0,
      );
      assert.equal(await s.checkCode('c@t.test', 'old', 5, later), 'wrong');
      assert.equal(await s.checkCode('c@t.test', 'new', 5, later), 'ok');
    });

    test('a counter admits exactly its limit under concurrency', async () => {
      const now = Date.now();
      const answers = await Promise.all(
        Array.from({ length: 30 }, () => s.hit(`ip-${name}`, 10, 60_000, now)),
      );
      assert.equal(answers.filter((a) => a.ok).length, 10);
      assert.ok(answers.every((a) => a.retryAfterMs > 0 && a.retryAfterMs <= 60_000));
    });

    test('a session lives server-side: touched, absolute end, deleted', async () => {
      const now = Date.now();
      await s.createSession(
        'sid1',
        { companyId: 'c', email: 'e@t.test', createdAt: now, expiresAt: now + 3_600_000 },
        600_000,
      );
      assert.equal((await s.touchSession('sid1', 600_000, now + 1000))?.email, 'e@t.test');
      assert.equal(await s.touchSession('sid1', 600_000, now + 3_600_000), null, 'past its absolute end');
      await s.createSession(
        'sid2',
        { companyId: 'c', email: 'e@t.test', createdAt: now, expiresAt: now + 3_600_000 },
        600_000,
      );
      await s.deleteSession('sid2');
      assert.equal(await s.touchSession('sid2', 600_000, now), null);
    });
  });
}

contract('memory', async () => new MemoryDashboardStore());

let redis: TestRedis;
let client: RedisClient;
before(async () => {
  redis = await startRedis();
  client = createRedisClient(
    { url: redis.url, keyPrefix: 'ngt:', commandTimeoutMs: 1000, connectTimeoutMs: 2000 },
    'dashboard-test',
  );
  assert.ok(await waitForReady(client, 3000), 'redis client did not become ready');
});
after(async () => {
  client?.disconnect();
  await redis?.stop();
});
contract('redis', async () => new RedisDashboardStore(client, 'ngt:'));

test('redis: an idle session expires in Redis itself (no sweeper needed)', async () => {
  const s = new RedisDashboardStore(client, 'ngi:');
  const now = Date.now();
  await s.createSession(
    'idle',
    { companyId: 'c', email: 'e', createdAt: now, expiresAt: now + 60_000 },
    600_000,
  );
  const ttl = await client.pttl('ngi:d:s:idle');
  assert.ok(ttl > 0 && ttl <= 600_000);
  assert.equal(await client.pttl('ngi:d:c:none'), -2);
});
