import assert from 'node:assert/strict';
import { beforeEach, describe, test } from 'node:test';
import { AdminService } from '../../../src/admin/service.js';
import type { Mail, Mailer } from '../../../src/dashboard/mail.js';
import { DashboardService, type SignedIn } from '../../../src/dashboard/service.js';
import { MemoryDashboardStore } from '../../../src/dashboard/store.js';
import { MemoryKeyStore } from '../../../src/store/memory-store.js';

// The dashboard's rules at the service boundary: whatever the page does, a session acts for one
// member of one company, and every key action goes through the admin service.

let keys: MemoryKeyStore;
let admin: AdminService;
let svc: DashboardService;
let mails: Mail[];
let dstore: MemoryDashboardStore;

const mailer: Mailer = {
  send: async (m) => void mails.push(m),
  close: () => undefined,
};

function service(
  over: Partial<ConstructorParameters<typeof DashboardService>[0]['settings']> = {},
  now?: () => number,
) {
  return new DashboardService({
    ...(now && { now }),
    admin,
    store: (dstore = new MemoryDashboardStore()),
    mailer,
    usage: null,
    settings: {
      registration: 'open',
      publicOrigin: 'http://127.0.0.1:8082',
      idleMs: 600_000,
      absoluteMs: 3_600_000,
      resendCooldownMs: 60_000,
      perAddressPerHour: 5,
      perClientPerHour: 100,
      tier: 'free',
      ...over,
    },
  });
}

/** Mails go out after the answer (setImmediate): let them. */
const flush = () => new Promise((r) => setImmediate(r));

const codeOf = async (to: string) => {
  await flush();
  const m = mails.filter((x) => x.to === to && /code/.test(x.subject)).at(-1);
  return /\b(\d{6})\b/.exec(m?.text ?? '')?.[1];
};

/** Registers, approves and signs in a company's owner; returns who. */
async function signedIn(name: string, email: string): Promise<SignedIn> {
  assert.ok((await svc.register({ companyName: name, email }, '10.0.0.1')).ok);
  const r = (await dstore.listRegistrations()).find((x) => x.email === email)!;
  assert.ok((await svc.decideRegistration(r.id, 'approved', 'op')).ok);
  assert.ok((await svc.requestCode({ email }, '10.0.0.1')).ok);
  const s = await svc.signIn({ email, code: await codeOf(email) }, '10.0.0.1');
  assert.ok(s.ok);
  const who = await svc.resolveSession(s.value.sessionId);
  assert.ok(who);
  return who;
}

describe('DashboardService', () => {
  beforeEach(() => {
    keys = new MemoryKeyStore();
    admin = new AdminService({
      store: keys,
      tiers: new Set(['free']),
      maxActiveKeys: 2,
      rotationAgeDays: 90,
    });
    svc = service();
    mails = [];
  });

  test('register: a pending company with its contact as owner; approval activates it and mails the contact', async () => {
    const r = await svc.register({ companyName: 'Acme <b>Corp</b>', email: 'Ops@Acme.test' }, '10.0.0.1');
    assert.ok(r.ok);
    const [reg] = await dstore.listRegistrations();
    assert.equal(reg?.email, 'ops@acme.test');
    assert.equal((await keys.getCompany(reg!.id))?.status, 'pending');
    assert.equal((await keys.getCompany(reg!.id))?.name, 'Acme <b>Corp</b>');
    const ok = await svc.decideRegistration(reg!.id, 'approved', 'ops-token');
    assert.ok(ok.ok);
    assert.equal((await keys.getCompany(reg!.id))?.status, 'active');
    await flush();
    assert.equal(mails.at(-1)?.to, 'ops@acme.test');
    assert.match(mails.at(-1)!.text, /approved/);
    const again = await svc.decideRegistration(reg!.id, 'rejected', 'ops-token');
    assert.equal(!again.ok && again.code, 'DASHBOARD_REGISTRATION_DECIDED');
  });

  test('registration closed: refused, nothing created', async () => {
    svc = service({ registration: 'closed' });
    const r = await svc.register({ companyName: 'X', email: 'x@x.test' }, '10.0.0.1');
    assert.equal(!r.ok && r.code, 'DASHBOARD_REGISTRATION_CLOSED');
    assert.deepEqual(await keys.listCompanies(), []);
  });

  test('a code is mailed to a member only; an unknown address gets the same answer and no mail', async () => {
    await signedIn('A', 'a@a.test');
    mails = [];
    const known = await svc.requestCode({ email: 'a@a.test' }, '10.0.0.2');
    const unknown = await svc.requestCode({ email: 'nobody@a.test' }, '10.0.0.2');
    assert.deepEqual(known, unknown);
    await flush();
    assert.deepEqual(
      mails.map((m) => m.to),
      ['a@a.test'],
    );
    assert.match(mails[0]!.text, /\b\d{6}\b/);
  });

  test('a wrong code 5 times burns it: the right one no longer works', async () => {
    await signedIn('A', 'a@a.test');
    const sent = await svc.requestCode({ email: 'a@a.test' }, '10.0.0.3');
    assert.ok(sent.ok);
    const code = await codeOf('a@a.test')!;
    const wrong = code === '000000' ? '000001' : '000000';
    for (let i = 0; i < 5; i++) {
      const r = await svc.signIn({ email: 'a@a.test', code: wrong }, '10.0.0.3');
      assert.equal(!r.ok && r.code, 'DASHBOARD_CODE_REFUSED');
    }
    const late = await svc.signIn({ email: 'a@a.test', code }, '10.0.0.3');
    assert.equal(!late.ok && late.code, 'DASHBOARD_CODE_REFUSED');
  });

  test('a member of A never reads or touches B: B ids answer as unknown ids, B keeps its keys', async () => {
    const a = await signedIn('A', 'a@a.test');
    const b = await signedIn('B', 'b@b.test');
    const bKey = await svc.createKey(b, { label: 'b-key' });
    assert.ok(bKey.ok);
    const aKeys = await svc.listKeys(a);
    assert.deepEqual(aKeys.ok && aKeys.value, []);
    const revoke = await svc.revokeKey(a, bKey.value.id);
    const rotate = await svc.rotateKey(a, bKey.value.id, {});
    const unknown = await svc.revokeKey(a, 'no-such-key');
    assert.equal(!revoke.ok && revoke.code, 'DASHBOARD_NOT_FOUND');
    assert.deepEqual(revoke, unknown);
    assert.equal(!rotate.ok && rotate.code, 'DASHBOARD_NOT_FOUND');
    const bAfter = await keys.listKeys(b.companyId);
    assert.equal(bAfter.length, 1);
    assert.equal(bAfter[0]!.revokedAt, null);
    assert.equal(bAfter[0]!.rotatedTo, null);
    const removeB = await svc.removeMember(a, 'b@b.test');
    assert.equal(!removeB.ok && removeB.code, 'DASHBOARD_NOT_FOUND');
    assert.ok(await dstore.findMember('b@b.test'));
    const act = await svc.activity(a);
    assert.ok(act.ok && act.value.every((e) => e.companyId === a.companyId));
  });

  test('key actions go through the admin service: cap with a message, audit actor member:<address>', async () => {
    const a = await signedIn('A', 'a@a.test');
    assert.ok((await svc.createKey(a, { label: 'one', environment: 'live' })).ok);
    assert.ok((await svc.createKey(a, { label: 'two', environment: 'test' })).ok);
    const third = await svc.createKey(a, { label: 'three' });
    assert.equal(!third.ok && third.code, 'ADMIN_KEY_CAP_REACHED');
    assert.match(!third.ok ? third.details : '', /Revoke a key/);
    const audit = await keys.readAudit({ limit: 100, companyId: a.companyId, events: ['key.created'] });
    assert.deepEqual(
      audit.map((e) => e.actor),
      ['member:a@a.test', 'member:a@a.test'],
    );
    const bad = await svc.createKey(a, { label: 'x', environment: 'prod' });
    assert.equal(!bad.ok && bad.code, 'ADMIN_INVALID_REQUEST');
    const expiresField = await svc.createKey(a, { companyId: 'other' });
    assert.equal(!expiresField.ok && expiresField.code, 'ADMIN_INVALID_REQUEST');
  });

  test('members: a developer cannot manage members; the last owner stays', async () => {
    const a = await signedIn('A', 'a@a.test');
    assert.ok((await svc.inviteMember(a, { email: 'dev@a.test', role: 'developer' })).ok);
    const dev: SignedIn = { ...a, email: 'dev@a.test', role: 'developer' };
    const r = await svc.inviteMember(dev, { email: 'x@a.test', role: 'owner' });
    assert.equal(!r.ok && r.code, 'DASHBOARD_OWNER_ONLY');
    const rm = await svc.removeMember(dev, 'a@a.test');
    assert.equal(!rm.ok && rm.code, 'DASHBOARD_OWNER_ONLY');
    const last = await svc.removeMember(a, 'a@a.test');
    assert.equal(!last.ok && last.code, 'DASHBOARD_LAST_OWNER');
    const taken = await svc.inviteMember(a, { email: 'dev@a.test', role: 'owner' });
    assert.equal(!taken.ok && taken.code, 'DASHBOARD_ADDRESS_TAKEN');
  });

  test('sessions end at once when the company is suspended or the member removed', async () => {
    const a = await signedIn('A', 'a@a.test');
    await svc.inviteMember(a, { email: 'dev@a.test', role: 'developer' });
    await svc.requestCode({ email: 'dev@a.test' }, '10.0.0.4');
    const dev = await svc.signIn({ email: 'dev@a.test', code: await codeOf('dev@a.test') }, '10.0.0.4');
    assert.ok(dev.ok);
    assert.ok(await svc.resolveSession(dev.value.sessionId));
    await svc.removeMember(a, 'dev@a.test');
    assert.equal(await svc.resolveSession(dev.value.sessionId), null);

    await svc.requestCode({ email: 'a@a.test' }, '10.0.0.5');
    const s = await svc.signIn({ email: 'a@a.test', code: await codeOf('a@a.test') }, '10.0.0.5');
    assert.ok(s.ok);
    assert.ok(await svc.resolveSession(s.value.sessionId));
    await admin.updateCompany(a.companyId, { status: 'suspended' }, 'op');
    assert.equal(await svc.resolveSession(s.value.sessionId), null);
    await svc.signOut(s.value.sessionId);
    assert.equal(await svc.resolveSession('not-a-session'), null);
  });

  test('asks refused by the cooldown do not use up the address: a burst cannot lock it out for the hour', async () => {
    let t = Date.UTC(2026, 0, 1);
    svc = service({}, () => t);
    const ask = () => svc.requestCode({ email: 'owner@victim.test' }, '10.0.0.7');
    assert.ok((await ask()).ok);
    for (let i = 0; i < 10; i++) {
      const r = await ask();
      assert.equal(!r.ok && r.code, 'DASHBOARD_TOO_MANY_ATTEMPTS');
      assert.ok(!r.ok && 'retryAfterSeconds' in r && r.retryAfterSeconds <= 60, 'the cooldown, not the hour');
    }
    t += 61_000;
    assert.ok((await ask()).ok, 'after the cooldown a code is issued again');
    // The hourly limit still holds for asks the cooldown let through: 5 per hour.
    for (let i = 0; i < 3; i++) {
      t += 61_000;
      assert.ok((await ask()).ok);
    }
    t += 61_000;
    const sixth = await ask();
    assert.ok(!sixth.ok && 'retryAfterSeconds' in sixth && sixth.retryAfterSeconds > 60, 'the hourly limit');
  });

  test('a rejected registration frees its contact address: another company may invite it', async () => {
    assert.ok((await svc.register({ companyName: 'Squat', email: 'newhire@acme.test' }, '10.0.0.8')).ok);
    const r = (await dstore.listRegistrations()).find((x) => x.email === 'newhire@acme.test')!;
    assert.ok((await svc.decideRegistration(r.id, 'rejected', 'op')).ok);
    assert.equal(await dstore.findMember('newhire@acme.test'), null);
    const owner = await signedIn('Acme', 'owner@acme.test');
    const invited = await svc.inviteMember(owner, { email: 'newhire@acme.test', role: 'developer' });
    assert.ok(invited.ok, JSON.stringify(invited));
  });

  test('limits: the cooldown, then the per-address limit, the same answer for any address', async () => {
    const first = await svc.requestCode({ email: 'nobody@x.test' }, '10.0.0.6');
    assert.ok(first.ok);
    const again = await svc.requestCode({ email: 'nobody@x.test' }, '10.0.0.6');
    assert.equal(!again.ok && again.code, 'DASHBOARD_TOO_MANY_ATTEMPTS');
    assert.ok(!again.ok && 'retryAfterSeconds' in again && again.retryAfterSeconds > 0);
  });
});
