import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { keyViewSchema } from '../../src/admin/schemas.js';
import { hashApiKey } from '../../src/auth/api-key.js';
import { createKeyRecord } from '../../src/auth/key-record.js';
import { createCompanyAndKey } from '../helpers/admin.js';
import { runCli, runCliHere, type CliRun } from '../helpers/cli-run.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

const newKey = (id: string) => {
  const { key, record } = createKeyRecord({
    companyId: '',
    environment: 'live',
    label: null,
    expiresAt: null,
    createdAt: '2026-01-01T00:00:00Z',
  });
  return { key, id, hash: record.hash, prefix: record.prefix };
};

/** Every Redis key and value but the audit stream: what a dry run must leave exactly as it was. */
async function snapshot(client: Redis): Promise<string> {
  const out: string[] = [];
  for (const k of (await client.keys('*')).sort()) {
    // Rate-limit counters expire on their own clock (a 60 s window may end between two snapshots);
    // apply never writes them, and they are not state it could change.
    if (k.includes(':rl:')) continue;
    const type = await client.type(k);
    if (type === 'hash') out.push(k, JSON.stringify(await client.hgetall(k)));
    else if (type === 'string') out.push(k, (await client.get(k)) ?? '');
    else if (type === 'set') out.push(k, (await client.smembers(k)).sort().join());
    else if (type === 'zset') out.push(k, (await client.zrange(k, 0, -1, 'WITHSCORES')).join());
    else if (type === 'stream') out.push(k, String(await client.xlen(k)));
  }
  return out.join('\n');
}

describe('apply and export on real Redis', () => {
  let redis: TestRedis;
  let client: Redis;
  let upstream: RecordingUpstream;
  let t: TestGateway;
  let dir: string;
  let env: Record<string, string>;
  const k1 = newKey('acme-1');
  const k2 = newKey('acme-2');
  const k3 = newKey('beta-1');
  let oldKey: string;
  const actor = `cli:${userInfo().username}`;

  const file = (acme: { tier: string; k2Revoked?: string }) => `companies:
  - id: acme
    name: Acme
    tier: ${acme.tier}
    keys:
      - id: ${k1.id}
        hash: sha256:${k1.hash}
        prefix: ${k1.prefix}
        label: primary
      - id: ${k2.id}
        hash: ${k2.hash}
${acme.k2Revoked ? `        revokedAt: ${acme.k2Revoked}\n` : ''}  - id: beta
    tier: free
    status: active
    keys:
      - id: ${k3.id}
        hash: ${k3.hash}
`;
  const write = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const apply = (path: string, ...flags: string[]): Promise<CliRun> =>
    runCli(['apply', '-f', path, ...flags], env);
  const call = async (key: string) => {
    const r = await fetch(`http://127.0.0.1:${t.port}/notify/v1/x`, { headers: { 'X-API-Key': key } });
    await r.arrayBuffer();
    return r.status;
  };
  const auditLength = () => client.xlen('ng:audit');
  const noChanges = /Created: 0\n {2}Updated: 0\n {2}Suspended: 0\n {2}Disabled: 0\n {2}Revoked: 0/;

  before(async () => {
    redis = await startRedis();
    client = new Redis(redis.url);
    upstream = await startUpstream();
    t = await startTestGateway({
      store: { type: 'redis', redis: { url: redis.url } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      cache: { positiveTtlMs: 60_000, negativeTtlMs: 60_000 },
    });
    oldKey = (await createCompanyAndKey(t.gw.service, 'old-co')).key;
    dir = mkdtempSync(join(tmpdir(), 'ng-apply-'));
    env = { REDIS_URL: redis.url };
  });
  after(async () => {
    client.disconnect();
    await t.close();
    await upstream.close();
    await redis.stop();
  });

  test('dry run prints the diff and changes nothing', async () => {
    // Cached as unknown first: a create must publish so the negative cache entry goes.
    assert.equal(await call(k1.key), 401);
    const before = await snapshot(client);
    const r = await apply(write('v1.yaml', file({ tier: 'standard' })), '--dry-run');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^creating company acme$/m);
    assert.match(r.stdout, /^creating company beta$/m);
    assert.match(r.stdout, new RegExp(`^creating key ${k1.id} \\(company acme\\)$`, 'm'));
    assert.match(
      r.stdout,
      /Summary \(dry run: nothing changed\):\n {2}Created: 5\n {2}Updated: 0\n {2}Suspended: 0\n/,
    );
    assert.doesNotMatch(r.stdout, new RegExp(k1.hash));
    assert.equal(await snapshot(client), before);
  });

  test('apply creates, audits with the actor and propagates; a second apply changes nothing', async () => {
    const path = join(dir, 'v1.yaml');
    const r = await apply(path);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Created: 5/);
    assert.equal(await call(k1.key), 200);
    assert.equal(await call(k3.key), 200);
    const audit = await t.gw.service.readAudit({ limit: 10 });
    assert.ok(audit.ok);
    const created = audit.value.filter((e) => e.companyId === 'acme' || e.companyId === 'beta');
    assert.equal(created.length, 5);
    for (const e of created) {
      assert.equal(e.actor, actor);
      assert.equal(e.details?.via, 'apply');
    }
    const len = await auditLength();
    const again = await apply(path);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, noChanges);
    assert.equal(await auditLength(), len, 'an idempotent apply writes no audit entry');
  });

  test('updates: only the changed fields, revocation reaches the gateway within 1 s', async () => {
    assert.equal(await call(k2.key), 200);
    const path = write('v2.yaml', file({ tier: 'enterprise', k2Revoked: '2026-01-02T00:00:00Z' }));
    const dry = await apply(path, '--dry-run');
    assert.match(dry.stdout, /^updating company acme: tier "standard" -> "enterprise"$/m);
    assert.match(
      dry.stdout,
      new RegExp(`^updating key ${k2.id} \\(company acme\\): revokedAt null -> "2026-01-02T00:00:00Z"$`, 'm'),
    );
    const r = await apply(path);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Updated: 2/);
    const start = Date.now();
    while ((await call(k2.key)) !== 401) {
      assert.ok(Date.now() - start < 1000, 'revocation not seen within 1 s');
      await new Promise((res) => setTimeout(res, 50));
    }
    assert.equal((await t.gw.store.getCompany('acme'))?.tier, 'enterprise');
    assert.match((await apply(path)).stdout, noChanges);
  });

  test('a key revoked in Redis but unrevoked in the file is reported, never un-revoked', async () => {
    const revoked = await t.gw.service.revokeKey(k3.id, 'admin');
    assert.ok(revoked.ok);
    const r = await apply(join(dir, 'v2.yaml'));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`note: key ${k3.id}: revoked at .* revocation is final, kept`));
    assert.match(r.stdout, noChanges);
    assert.notEqual((await t.gw.store.getKey(k3.id))?.revokedAt, null);
    assert.equal(await call(k3.key), 401);
  });

  test('--prune with no --yes and no terminal: the plan, exit 2, nothing changed', async () => {
    const path = join(dir, 'v2.yaml');
    assert.equal(await call(oldKey), 200);
    assert.match((await apply(path)).stdout, noChanges, 'without --prune nothing left out is touched');
    // The call above is counted once a second: written now, so only apply could change Redis.
    await t.gw.usage?.recorder.flush();
    const before = await snapshot(client);
    const r = await apply(path, '--prune');
    assert.equal(r.code, 2, r.stderr);
    assert.match(
      r.stdout,
      /^suspending company old-co \(not in the file\): status "active" -> "suspended", apiAccess true -> false \(undone by declaring it again\)$/m,
    );
    assert.match(
      r.stdout,
      /^disabling key key_\S+ \(company old-co\) \(not in the file\): disabled \(undone by declaring it again\)$/m,
    );
    assert.match(r.stdout, /Summary \(dry run: nothing changed\)/);
    assert.equal(
      r.stderr,
      'notify-gateway: apply would suspend 1 company and disable 1 key (the plan above); nothing changed. Run again with --yes to make these changes (no terminal to ask on)\n',
    );
    const json = await apply(path, '--prune', '--json');
    assert.equal(json.code, 2);
    const plan = JSON.parse(json.stdout) as { dryRun: boolean; changes: { op: string }[] };
    assert.equal(plan.dryRun, true);
    assert.deepEqual(
      plan.changes.map((c) => c.op),
      ['suspend', 'disable'],
    );
    assert.equal(await snapshot(client), before);
    assert.equal(await call(oldKey), 200, 'the key still works');
  });

  test('--prune --yes makes exactly the plan --dry-run shows: company suspended, key disabled (not revoked), audited', async () => {
    const path = join(dir, 'v2.yaml');
    const dry = await apply(path, '--prune', '--dry-run');
    assert.equal(dry.code, 0, dry.stderr);
    const r = await apply(path, '--prune', '--yes');
    assert.equal(r.code, 0, r.stderr);
    const changeLines = (text: string) => text.slice(0, text.indexOf('Summary'));
    assert.equal(changeLines(r.stdout), changeLines(dry.stdout));
    assert.match(r.stdout, /Suspended: 1\n {2}Disabled: 1\n {2}Revoked: 0/);
    const [old] = await t.gw.store.listKeys('old-co');
    assert.equal(old?.revokedAt, null, 'not revoked');
    assert.match(old?.disabledAt ?? '', /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.equal((await t.gw.store.getCompany('old-co'))?.status, 'suspended');
    assert.equal(await call(oldKey), 401);
    const views = await t.gw.service.listKeys('old-co');
    assert.ok(views.ok);
    const view = keyViewSchema.parse(views.value[0]);
    assert.equal(view.status, 'disabled');
    assert.equal(view.disabledAt, old?.disabledAt);
    const audit = await t.gw.service.readAudit({ limit: 5, companyId: 'old-co' });
    assert.ok(audit.ok);
    const disabled = audit.value.find((e) => e.event === 'key.disabled');
    assert.equal(disabled?.actor, actor);
    assert.equal(disabled?.details?.via, 'apply --prune');
    // Nothing left to prune: no question, no change.
    const again = await apply(path, '--prune');
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, noChanges);
  });

  test('a prune is undone by declaring them again; --prune-revoke revokes, and that is final', async () => {
    const [old] = await t.gw.store.listKeys('old-co');
    const withOld = write(
      'with-old.yaml',
      readFileSync(join(dir, 'v2.yaml'), 'utf8') +
        `  - id: old-co\n    tier: standard\n    keys:\n      - id: ${old!.id}\n        hash: ${hashApiKey(oldKey)}\n`,
    );
    const back = await apply(withOld);
    assert.equal(back.code, 0, back.stderr);
    assert.match(
      back.stdout,
      /^updating company old-co: status "suspended" -> "active", apiAccess false -> true/m,
    );
    assert.match(
      back.stdout,
      new RegExp(`^updating key ${old!.id} \\(company old-co\\): disabledAt "[^"]+" -> null$`, 'm'),
    );
    assert.equal(await call(oldKey), 200, 'the same key works again');

    const revoke = await apply(join(dir, 'v2.yaml'), '--prune-revoke', '--yes');
    assert.equal(revoke.code, 0, revoke.stderr);
    assert.match(
      revoke.stdout,
      /^revoking key \S+ \(company old-co\) \(not in the file\): revoked \(final\)$/m,
    );
    assert.equal(await call(oldKey), 401);
    const again = await apply(withOld);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /revocation is final, kept/);
    assert.equal(await call(oldKey), 401, 'declaring a revoked key does not bring it back');
  });

  test('export writes the state without secrets; export → apply --prune changes nothing', async () => {
    const out = join(dir, 'exported.yaml');
    const e = await runCli(['export', '-o', out], env);
    assert.equal(e.code, 0, e.stderr);
    const text = readFileSync(out, 'utf8');
    for (const k of [k1, k2, k3]) {
      assert.ok(!text.includes(k.key), 'no plaintext key');
      assert.ok(text.includes(k.hash));
    }
    assert.doesNotMatch(text, /lastUsedAt|exposedAt|rotatedTo/);
    const stdout = await runCli(['export'], env);
    assert.equal(stdout.stdout, text);
    const len = await auditLength();
    const r = await apply(out, '--prune');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, noChanges);
    assert.equal(await auditLength(), len);
  });

  test('a bad file: exit 2 with every problem, nothing changed', async () => {
    const before = await snapshot(client);
    const r = await apply(write('bad.yaml', 'companies:\n  - id: x\n    tier: gold\n  - id: y\n'));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /unknown tier "gold"/);
    assert.match(r.stderr, /companies\.1\.tier/);
    assert.equal(await snapshot(client), before);
    const json = await apply(join(dir, 'v2.yaml'), '--dry-run', '--json');
    assert.equal(json.code, 0);
    assert.deepEqual(JSON.parse(json.stdout), {
      changes: [],
      notes: JSON.parse(json.stdout).notes,
      dryRun: true,
      failures: [],
    });
  });

  test('scopes and limits apply like any field: enforced, idempotent, exported, changed', async () => {
    const g = newKey('gamma-1');
    const scoped = (points: number) => `companies:
  - id: gamma
    tier: free
    scopes: [{ route: /notify/v1, paths: [/notify/v1/otps] }]
    limits: [{ points: ${points}, duration: 60 }]
    keys:
      - id: ${g.id}
        hash: ${g.hash}
        scopes: [{ route: /notify/v1, methods: [GET] }]
`;
    const send = async (method: string, path: string) => {
      const r = await fetch(`http://127.0.0.1:${t.port}${path}`, { method, headers: { 'X-API-Key': g.key } });
      await r.arrayBuffer();
      return r.status;
    };
    const path = write('scoped.yaml', scoped(3));
    const r = await apply(path);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(await send('GET', '/notify/v1/otps'), 200);
    assert.equal(await send('GET', '/notify/v1/sms'), 403, "outside the company's paths");
    assert.equal(await send('POST', '/notify/v1/otps'), 403, "outside the key's methods");
    const again = await apply(path);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, noChanges);
    const e = await runCli(['export'], env);
    assert.match(e.stdout, /paths:\s*\n?\s*-?\s*\/notify\/v1\/otps|paths: \[\/notify\/v1\/otps\]/);
    assert.match(e.stdout, /points: 3/);
    // Two of 3 used (the 403s took none); the limit lowered to 2 through the file: the next is 429.
    assert.equal(await send('GET', '/notify/v1/otps'), 200);
    const lower = await apply(write('scoped.yaml', scoped(2)));
    assert.equal(lower.code, 0, lower.stderr);
    assert.match(lower.stdout, /^updating company gamma: limits/m);
    // Changes reach every instance within 1 s; under the old limit (3) this request would pass.
    await new Promise((r) => setTimeout(r, 1000));
    const status = await send('GET', '/notify/v1/otps');
    assert.equal(status, 429, 'the lowered limit is enforced within 1 s');
  });

  test('scopes naming a route that is not configured: exit 2, nothing changed', async () => {
    // The previous test's traffic is counted once a second: write it now, so only apply could change Redis.
    await t.gw.usage?.recorder.flush();
    const before = await snapshot(client);
    const r = await apply(
      write(
        'bad-scopes.yaml',
        'companies:\n  - id: omega\n    tier: free\n    scopes: [{ route: /video }]\n',
      ),
    );
    assert.equal(r.code, 2, r.stdout);
    assert.match(r.stderr, /scopes\.0\.route: not a configured route prefix/);
    assert.equal(await snapshot(client), before);
  });

  test('a name, label or scope path the admin API would refuse: exit 2 naming each, nothing changed', async () => {
    await t.gw.usage?.recorder.flush();
    const before = await snapshot(client);
    const k = newKey('sigma-1');
    const r = await apply(
      write(
        'bad-text.yaml',
        'companies:\n  - id: sigma\n    tier: free\n    name: "Sigma\\u202e"\n' +
          '    scopes: [{ route: /notify/v1, paths: [/notify/v1/../media] }]\n' +
          `    keys:\n      - { id: ${k.id}, hash: ${k.hash}, label: "line\\nbreak" }\n`,
      ),
    );
    assert.equal(r.code, 2, r.stdout);
    assert.match(r.stderr, /companies\.0\.name: must not contain control characters/);
    assert.match(r.stderr, /companies\.0\.keys\.0\.label: must not contain control characters/);
    assert.match(r.stderr, /companies\.0\.scopes\.0\.paths\.0: must not hold an empty/);
    assert.equal(await snapshot(client), before);
  });
});

describe('apply --prune at a terminal', () => {
  let redis: TestRedis;
  let client: Redis;
  let env: Record<string, string>;
  let path: string;
  before(async () => {
    redis = await startRedis();
    client = new Redis(redis.url);
    env = { REDIS_URL: redis.url };
    for (const id of ['kept', 'left']) {
      const r = await runCliHere(['companies', 'create', id], env);
      assert.equal(r.code, 0, r.stderr);
    }
    const dir = mkdtempSync(join(tmpdir(), 'ng-apply-tty-'));
    path = join(dir, 'kept.yaml');
    writeFileSync(path, 'companies:\n  - id: kept\n    tier: free\n');
  });
  after(async () => {
    client.disconnect();
    await redis.stop();
  });
  const status = async (id: string) => (await client.hget(`ng:c:${id}`, 'status')) ?? null;

  test('asks on stderr after the plan; anything but yes: exit 1, nothing changed', async () => {
    const before = await snapshot(client);
    for (const answer of ['n\n', '\n', 'yess\n', '']) {
      const r = await runCliHere(['apply', '-f', path, '--prune'], env, { interactive: true, stdin: answer });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stdout, /^suspending company left \(not in the file\)/m);
      assert.match(r.stderr, /apply would suspend 1 company\. Make these changes\? \[y\/N\] /);
      assert.match(r.stderr, /notify-gateway: nothing changed\n$/);
    }
    assert.equal(await snapshot(client), before);
  });

  test('yes: the plan runs; the changes printed once, then the summary', async () => {
    const r = await runCliHere(['apply', '-f', path, '--prune'], env, { interactive: true, stdin: 'y\n' });
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      r.stdout,
      /^suspending company left \(not in the file\)[^\n]*\nSummary:\n {2}Created: 0\n {2}Updated: 0\n {2}Suspended: 1\n/,
    );
    assert.equal(r.stdout.match(/suspending company left/g)?.length, 1);
    assert.equal(await status('left'), 'suspended');
    assert.equal((await runCliHere(['companies', 'update', 'left', '--status', 'active'], env)).code, 0);
  });

  test('check-and-set: the store changes while the question waits: exit 1, the current plan shown, nothing changed', async () => {
    async function* answerAfterAChange() {
      // Another operator, while this one reads the plan: one more company the file does not hold.
      const made = await runCliHere(['companies', 'create', 'meanwhile'], env);
      assert.equal(made.code, 0, made.stderr);
      yield 'y\n';
    }
    const r = await runCliHere(['apply', '-f', path, '--prune'], env, {
      interactive: true,
      stdin: answerAfterAChange(),
    });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /the store changed while the question was asked; nothing changed/);
    assert.match(r.stdout, /^suspending company meanwhile /m, 'the current plan');
    assert.equal(await status('left'), 'active');
    assert.equal(await status('meanwhile'), 'active');
  });
});
