import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hashApiKey } from '../../src/auth/api-key.js';
import { createRedisClient, waitForReady } from '../../src/redis/connection.js';
import { RedisKeyStore } from '../../src/store/redis-store.js';
import { runCli as cli, spawnCli, stopCli, type CliRun } from '../helpers/cli-run.js';
import { eventually } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

/** Runs `serve` until stdout matches `ready` (or 20 s pass), then stops it with SIGTERM. */
async function serveUntil(args: string[], env: Record<string, string>, ready: RegExp): Promise<CliRun> {
  const s = spawnCli(args, env);
  await eventually(async () => ready.test(s.stdout()) || s.proc.exitCode !== null, 20_000, 20).catch(
    () => undefined,
  );
  const code = await stopCli(s.proc);
  await s.closed;
  return { code, stdout: s.stdout(), stderr: s.stderr() };
}

describe('CLI', () => {
  let redis: TestRedis;
  let env: Record<string, string>;
  before(async () => {
    redis = await startRedis();
    env = { REDIS_URL: redis.url };
  });
  after(async () => redis?.stop());

  test('companies and keys against Redis: create, list, update, rotate, revoke, audit; --json everywhere', async () => {
    const created = await cli(
      ['companies', 'create', 'acme', '--name', 'Acme', '--tier', 'standard', '--json'],
      env,
    );
    assert.equal(created.code, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).tier, 'standard');
    const dup = await cli(['companies', 'create', 'acme'], env);
    assert.equal(dup.code, 1);
    assert.match(dup.stderr, /already exists/);
    const badTier = await cli(['companies', 'create', 'x', '--tier', 'gold'], env);
    assert.equal(badTier.code, 2);
    assert.match(badTier.stderr, /--tier: "gold" is not a configured tier/);

    const table = await cli(['companies', 'list'], env);
    assert.equal(table.code, 0);
    assert.match(table.stdout, /^id\s+name\s+tier/m);
    assert.match(table.stdout, /acme\s+Acme\s+standard\s+active\s+true/);

    const upd = await cli(
      ['companies', 'update', 'acme', '--status', 'suspended', '--api-access', 'off', '--json'],
      env,
    );
    assert.equal(upd.code, 0, upd.stderr);
    assert.equal(JSON.parse(upd.stdout).status, 'suspended');
    assert.equal(JSON.parse(upd.stdout).apiAccess, false);
    const got = await cli(['companies', 'get', 'acme', '--json'], env);
    assert.equal(JSON.parse(got.stdout).status, 'suspended');
    assert.equal((await cli(['companies', 'get', 'nope'], env)).code, 1);

    const key = await cli(['keys', 'create', 'acme', '--label', 'primary', '--json'], env);
    assert.equal(key.code, 0, key.stderr);
    const k = JSON.parse(key.stdout) as { id: string; key: string; prefix: string };
    assert.match(k.key, /^nk_live_/);
    const human = await cli(['keys', 'create', 'acme', '--environment', 'test'], env);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /nk_test_\w+/);
    assert.match(human.stdout, /not shown again/);
    const capped = await cli(['keys', 'create', 'acme'], env);
    assert.equal(capped.code, 1);
    assert.match(capped.stderr, /Conflict: company acme already has 2 active keys/);

    const list = await cli(['keys', 'list', 'acme'], env);
    assert.equal(list.code, 0);
    assert.ok(list.stdout.includes(k.prefix));
    assert.ok(!list.stdout.includes(k.key), 'list shows the key');
    assert.ok(!list.stdout.includes(hashApiKey(k.key)), 'list shows the hash');
    assert.match(list.stdout, /rotationDue/);

    // At the cap of 2 a rotation still works: the old key is on its way out (7 days by default).
    const rot = await cli(['keys', 'rotate', k.id, '--json'], env);
    assert.equal(rot.code, 0, rot.stderr);
    const rotated = JSON.parse(rot.stdout) as { id: string; replaces: string; oldKeyRevokesAt: string };
    assert.equal(rotated.replaces, k.id);
    assert.ok(Date.parse(rotated.oldKeyRevokesAt) > Date.now() + 6 * 86_400_000);
    assert.equal((await cli(['keys', 'create', 'acme'], env)).code, 1, 'creates still stop at the cap');
    assert.match((await cli(['keys', 'rotate', k.id], env)).stderr, /was rotated to /, 'once per key');
    const revokeOther = JSON.parse((await cli(['keys', 'list', 'acme', '--json'], env)).stdout) as {
      id: string;
    }[];
    const other = revokeOther.find((x) => x.id !== k.id && x.id !== rotated.id)!;
    const rev = await cli(['keys', 'revoke', other.id], env);
    assert.equal(rev.code, 0, rev.stderr);
    assert.match(rev.stdout, /^revoked /);
    const rot2 = await cli(['keys', 'rotate', rotated.id, '--grace', '3600'], env);
    assert.equal(rot2.code, 0, rot2.stderr);
    assert.match(
      rot2.stdout,
      /The old key stops working at \S+; to stop it sooner: notify-gateway keys revoke /,
    );
    assert.equal((await cli(['keys', 'revoke', 'missing-id'], env)).code, 1);

    const audit = await cli(['audit', '--company', 'acme', '--json'], env);
    assert.equal(audit.code, 0);
    const events = (JSON.parse(audit.stdout) as { event: string; actor: string }[]).map((e) => e.event);
    for (const e of ['company.created', 'company.updated', 'key.created', 'key.revoked', 'key.rotated'])
      assert.ok(events.includes(e), e);
    assert.ok(!audit.stdout.includes(k.key));
  });

  test('scopes and limits: companies update and keys update, shown in tables and --json, audited as cli; bad input exit 2, nothing changed', async () => {
    assert.equal((await cli(['companies', 'create', 'scoped', '--tier', 'standard'], env)).code, 0);
    const key = JSON.parse((await cli(['keys', 'create', 'scoped', '--json'], env)).stdout) as { id: string };
    const up = await cli(
      [
        'companies',
        'update',
        'scoped',
        '--scopes',
        '[{"route":"/notify/v1","methods":["POST"]}]',
        '--limits',
        '10/1,600/60',
      ],
      env,
    );
    assert.equal(up.code, 0, up.stderr);
    assert.match(up.stdout, /POST \/notify\/v1/);
    assert.match(up.stdout, /10\/1s, 600\/60s/);
    const k = await cli(['keys', 'update', key.id, '--limits', '5/1', '--scopes', 'all', '--json'], env);
    assert.equal(k.code, 0, k.stderr);
    assert.deepEqual((JSON.parse(k.stdout) as { limits: unknown }).limits, [{ points: 5, duration: 1 }]);
    const bad = [
      ['companies', 'update', 'scoped', '--scopes', '[{"route":"/nope"}]'],
      ['companies', 'update', 'scoped', '--scopes', 'not json'],
      ['companies', 'update', 'scoped', '--limits', '10 per second'],
      ['keys', 'update', key.id, '--limits', '0/1'],
    ];
    for (const args of bad) {
      const r = await cli(args, env);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    }
    assert.match((await cli(bad[0]!, env)).stderr, /scopes\.0\.route: not a configured route prefix/);
    const got = JSON.parse((await cli(['companies', 'get', 'scoped', '--json'], env)).stdout) as {
      scopes: unknown;
      limits: unknown;
    };
    assert.deepEqual(got.scopes, [{ route: '/notify/v1', methods: ['POST'] }]);
    assert.deepEqual(got.limits, [
      { points: 10, duration: 1 },
      { points: 600, duration: 60 },
    ]);
    // The same at creation.
    const made = await cli(
      ['companies', 'create', 'scoped2', '--scopes', '[{"route":"/notify/v1"}]', '--limits', '7/1', '--json'],
      env,
    );
    assert.equal(made.code, 0, made.stderr);
    const born = JSON.parse(made.stdout) as { scopes: unknown; limits: unknown };
    assert.deepEqual(born.scopes, [{ route: '/notify/v1' }]);
    assert.deepEqual(born.limits, [{ points: 7, duration: 1 }]);
    const refused = await cli(['companies', 'create', 'scoped3', '--scopes', '[{"route":"/nope"}]'], env);
    assert.equal(refused.code, 2);
    assert.equal((await cli(['companies', 'get', 'scoped3'], env)).code, 1, 'nothing created');
    const audit = JSON.parse((await cli(['audit', '--company', 'scoped', '--json'], env)).stdout) as {
      event: string;
      actor: string;
    }[];
    assert.ok(
      audit.some((e) => e.event === 'key.updated' && e.actor === `cli:${userInfo().username}`),
      JSON.stringify(audit),
    );
  });

  test('keys create --expires-at with an impossible instant: exit 2 naming the field, nothing created', async () => {
    assert.equal((await cli(['companies', 'create', 'ts-cli', '--tier', 'free'], env)).code, 0);
    for (const at of [
      '2027-02-30T00:00:00Z',
      '2030-13-01T00:00:00Z',
      '2030-01-01T24:00:00Z',
      '2030-01-01T23:59:60Z',
    ]) {
      const r = await cli(['keys', 'create', 'ts-cli', '--expires-at', at], env);
      assert.equal(r.code, 2, at);
      assert.match(r.stderr, /--expires-at: must be a real UTC instant/, at);
    }
    assert.match((await cli(['keys', 'list', 'ts-cli'], env)).stdout, /\(none\)/);
  });

  test('names, labels, scopes and ids by the admin API rules: exit 2 naming the option, nothing changed', async () => {
    assert.equal((await cli(['companies', 'create', 'txt-cli', '--tier', 'free'], env)).code, 0);
    for (const bad of ['a\nb', 'a\u001b[31mb', 'a\u202eb', 'a\u200bb', 'a\u0085b']) {
      const co = await cli(['companies', 'create', 'txt-cli-2', '--tier', 'free', '--name', bad], env);
      assert.equal(co.code, 2, JSON.stringify(bad));
      assert.match(co.stderr, /--name: must not contain control characters/, JSON.stringify(bad));
      const up = await cli(['companies', 'update', 'txt-cli', '--name', bad], env);
      assert.equal(up.code, 2, JSON.stringify(bad));
      const key = await cli(['keys', 'create', 'txt-cli', '--label', bad], env);
      assert.equal(key.code, 2, JSON.stringify(bad));
      assert.match(key.stderr, /--label: must not contain control characters/, JSON.stringify(bad));
      const gen = await cli(['keys', 'generate', '--label', bad], {});
      assert.equal(gen.code, 2, JSON.stringify(bad));
      assert.match(gen.stderr, /--label: must not contain control characters/);
    }
    const scopes = '[{"route":"/notify/v1","paths":["/notify/v1/../media"]}]';
    const sc = await cli(['companies', 'update', 'txt-cli', '--scopes', scopes], env);
    assert.equal(sc.code, 2, sc.stderr);
    assert.match(sc.stderr, /scopes\.0\.paths\.0: must not hold an empty/);
    assert.equal((await cli(['companies', 'get', 'txt-cli-2'], env)).code, 1, 'not created');
    const got = JSON.parse((await cli(['companies', 'get', 'txt-cli', '--json'], env)).stdout) as {
      name: string;
      scopes: unknown;
    };
    assert.deepEqual([got.name, got.scopes], ['txt-cli', null]);
    assert.match((await cli(['keys', 'list', 'txt-cli'], env)).stdout, /\(none\)/);
    // keys generate: an id the key file would refuse, and an empty audit filter.
    for (const id of ['a b', '-x', 'x/y', ''])
      assert.equal((await cli(['keys', 'generate', '--id', id], {})).code, 2, id);
    const audit = await cli(['audit', '--company', ''], env);
    assert.equal(audit.code, 2, audit.stdout);
    assert.match(audit.stderr, /--company: must be a company id/);
  });

  test('a name stored before the character rule is shown escaped: no control character reaches the terminal', async () => {
    // Written straight to the store, as the admin API accepted it before names were checked.
    const cfg = { url: redis.url, keyPrefix: 'ng:', commandTimeoutMs: 1000, connectTimeoutMs: 2000 };
    const client = createRedisClient(cfg);
    const subscriber = createRedisClient(cfg);
    assert.ok(await waitForReady(client, 3000), 'redis client did not become ready');
    const store = new RedisKeyStore(client, subscriber, 'ng:');
    const at = '2026-01-01T00:00:00Z';
    await store.createCompany({
      id: 'evil-old',
      name: 'Evil\u001b[2J\nforged  row\u202e',
      tier: 'free',
      status: 'active',
      apiAccess: true,
      createdAt: at,
      updatedAt: at,
      scopes: null,
      limits: null,
    });
    await store.close();
    const r = await cli(['companies', 'get', 'evil-old'], env);
    assert.equal(r.code, 0, r.stderr);
    // eslint-disable-next-line no-control-regex
    assert.ok(!/[\u0000-\u0009\u000b-\u001f]/.test(r.stdout), 'a control character reached the terminal');
    assert.ok(r.stdout.includes('Evil\\u001b[2J\\u000aforged  row\\u202e'), r.stdout);
    assert.equal(r.stdout.split('\n').length, 3, 'header, one row, final newline');
  });

  test('keys generate: a label YAML would misread is printed quoted, and loads as given', async () => {
    const label = '#ops: nightly - backup';
    const r = await cli(['keys', 'generate', '--label', label], {});
    assert.equal(r.code, 0, r.stderr);
    const entry = r.stdout.slice(r.stdout.indexOf('      - id:'));
    const dir = mkdtempSync(join(tmpdir(), 'ng-gen-'));
    writeFileSync(join(dir, 'keys.yaml'), `companies:\n  - id: acme\n    tier: free\n    keys:\n${entry}`);
    writeFileSync(join(dir, 'gateway.yaml'), 'store: { type: file, file: { path: keys.yaml } }\n');
    const check = await cli(['keys', 'list', 'acme', '--json', '--config', join(dir, 'gateway.yaml')], {});
    assert.equal(check.code, 0, check.stderr);
    assert.equal((JSON.parse(check.stdout) as { label: string }[])[0]!.label, label);
  });

  test('keys hash: stdin → the SHA-256 the file store expects', async () => {
    const r = await cli(['keys', 'hash'], {}, 'nk_live_example\n');
    assert.equal(r.code, 0);
    assert.equal(r.stdout.trim(), hashApiKey('nk_live_example'));
    const empty = await cli(['keys', 'hash'], {}, '');
    assert.equal(empty.code, 2);
  });

  test('keys generate: a key for the file store, its entry, and the file store accepts it', async () => {
    const r = await cli(['keys', 'generate', '--id', 'acme-backup', '--label', 'backup', '--json'], {});
    assert.equal(r.code, 0, r.stderr);
    const g = JSON.parse(r.stdout) as { key: string; id: string; hash: string; prefix: string };
    assert.match(g.key, /^nk_live_[0-9A-Za-z]{38}$/);
    assert.equal(g.hash, hashApiKey(g.key));
    assert.equal(g.id, 'acme-backup');
    const human = await cli(['keys', 'generate', '--environment', 'test'], {});
    assert.equal(human.code, 0);
    const key = human.stdout.split('\n')[0]!;
    assert.match(key, /^nk_test_/);
    assert.ok(human.stdout.includes(`hash: ${hashApiKey(key)}`));
    // The printed entry, pasted under a company, is a valid key file.
    const entry = human.stdout.slice(human.stdout.indexOf('      - id:'));
    const dir = mkdtempSync(join(tmpdir(), 'ng-gen-'));
    writeFileSync(join(dir, 'keys.yaml'), `companies:\n  - id: acme\n    tier: free\n    keys:\n${entry}`);
    writeFileSync(join(dir, 'gateway.yaml'), 'store: { type: file, file: { path: keys.yaml } }\n');
    const check = await cli(['keys', 'list', 'acme', '--json', '--config', join(dir, 'gateway.yaml')], {});
    assert.equal(check.code, 0, check.stderr);
    assert.equal((JSON.parse(check.stdout) as { prefix: string }[])[0]!.prefix, key.slice(0, 14));
    assert.equal((await cli(['keys', 'generate', '--environment', 'BAD'], {})).code, 2);
  });

  test('management commands refuse the file store writes and an unreachable Redis, clearly', async () => {
    const ro = await cli(['companies', 'create', 'x'], {});
    assert.equal(ro.code, 1);
    assert.match(ro.stderr, /read-only/);
    const down = await cli(['companies', 'list'], { REDIS_URL: 'redis://127.0.0.1:1' });
    assert.equal(down.code, 1);
    assert.match(down.stderr, /cannot reach Redis at redis:\/\/127\.0\.0\.1:1/);
  });

  test('config check: OK on the default; every problem listed and exit 2 on a bad file or env', async () => {
    const ok = await cli(['config', 'check'], {});
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, /configuration OK/);
    const dir = mkdtempSync(join(tmpdir(), 'ng-cli-'));
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'server:\n  port: -1\nrateLimit:\n  failurePolicy: nope\nroutes: []\n');
    const r = await cli(['config', 'check', '--config', bad], { ADMIN_TOKEN: 'short' });
    assert.equal(r.code, 2);
    for (const s of ['server.port', 'rateLimit.failurePolicy', 'routes', 'admin.token (from ADMIN_TOKEN)'])
      assert.ok(r.stderr.includes(s), `${s} in ${r.stderr}`);
    const viaEnv = await cli(['config', 'check'], { GATEWAY_CONFIG: bad });
    assert.equal(viaEnv.code, 2);
    const shown = await cli(['config', 'check', '--json'], {
      ADMIN_TOKEN: 'a-secret-admin-token-value',
      REDIS_URL: 'redis://user:pw@h:1',
    });
    assert.equal(shown.code, 0);
    assert.ok(!shown.stdout.includes('a-secret-admin-token-value') && !shown.stdout.includes('pw@'));
  });

  test('config check, both modes, CLI errors and serve logs: no secret, hosts and ports still shown', async () => {
    // Each secret starts and ends with CANARY, so a partly masked one still shows up.
    const dir = mkdtempSync(join(tmpdir(), 'ng-cli-secrets-'));
    const file = join(dir, 'gateway.yaml');
    writeFileSync(
      file,
      [
        'rateLimit:',
        // A raw "/" whose left part looks like a port: WHATWG reads host "u", port 1234.
        '  redisUrl: "rediss://u:1234/CANARY-rl/slash-CANARY@ratelimit-redis.test:6391/1"',
        'routes:',
        '  - { prefix: /notify/v1, target: "http://routeuser:CANARY-route%40pw:x-CANARY@backend-host.test:9443/base" }',
        '  - { prefix: /other, target: "https://CANARY-route-user-only-CANARY@other-host.test:8443" }',
        'signing: { enabled: true, secret: CANARY-signing-secret-0123456789-CANARY }',
        '',
      ].join('\n'),
    );
    const env = {
      ADMIN_TOKEN: 'CANARY-admin-token-CANARY',
      REDIS_URL: 'redis://ruser:CANARY-p@ss%40x:y-CANARY@store-redis.test:6390/2',
    };
    const text = await cli(['config', 'check', '--config', file], env);
    const json = await cli(['config', 'check', '--json', '--config', file], env);
    for (const [mode, r] of [
      ['text', text],
      ['json', json],
    ] as const) {
      assert.equal(r.code, 0, `${mode}: ${r.stderr}`);
      assert.ok(!(r.stdout + r.stderr).includes('CANARY'), `${mode} prints a secret:\n${r.stdout}`);
      for (const visible of [
        'store-redis.test:6390',
        'ratelimit-redis.test:6391',
        'backend-host.test:9443/base',
        'other-host.test:8443',
      ])
        assert.ok(r.stdout.includes(visible), `${mode} hides ${visible}:\n${r.stdout}`);
    }
    const shown = JSON.parse(json.stdout);
    assert.equal(shown.admin.token, '[set]');
    assert.equal(shown.signing.secret, '[set]');
    assert.equal(shown.store.redis.url, 'redis://[credentials]@store-redis.test:6390/2');

    // A broken file and env: YAML excerpts, echoed enum values and URLs stay masked.
    const bad = join(dir, 'bad.yaml');
    writeFileSync(
      bad,
      'admin:\n  token: CANARY-dup-1-CANARY\n  token: CANARY-dup-2-CANARY\nlog: { level: "redis://:CANARY-enum-CANARY@h:1" }\n',
    );
    const badYaml = await cli(['config', 'check', '--config', bad], {});
    assert.equal(badYaml.code, 2);
    assert.match(badYaml.stderr, /Map keys must be unique at line 3/);
    const badEnv = join(dir, 'bad-env.yaml');
    writeFileSync(badEnv, 'log: { level: "redis://:CANARY-enum-CANARY@h:1" }\n');
    const badValues = await cli(['config', 'check', '--config', badEnv], {
      REDIS_URL: 'redis://:CANARY-a/b-CANARY@store-redis.test:6390',
    });
    assert.equal(badValues.code, 2);
    assert.match(badValues.stderr, /store\.redis\.url \(from REDIS_URL\)/);
    assert.match(badValues.stderr, /log\.level/);
    const down = await cli(['companies', 'list'], {
      REDIS_URL: 'redis://u:CANARY-down@x-CANARY@127.0.0.1:1',
    });
    assert.equal(down.code, 1);
    assert.match(down.stderr, /cannot reach Redis at redis:\/\/\[credentials\]@127\.0\.0\.1:1/);
    for (const r of [badYaml, badValues, down])
      assert.ok(!(r.stdout + r.stderr).includes('CANARY'), `a CLI error prints a secret:\n${r.stderr}`);
  });

  test('serve: startup and Redis error log lines carry no secret', async () => {
    const r = await serveUntil(
      ['serve', '--workers', '1'],
      {
        PORT: '0',
        ADMIN_PORT: '0',
        ADMIN_TOKEN: 'CANARY-admin-token-CANARY',
        REDIS_URL: 'redis://ruser:CANARY-p@ss%40x:y-CANARY@127.0.0.1:1/2',
      },
      /gateway listening/,
    );
    assert.match(r.stdout, /gateway listening/);
    assert.ok(!(r.stdout + r.stderr).includes('CANARY'), `serve logs a secret:\n${r.stdout}${r.stderr}`);
  });

  test('serve refuses --workers > 1 without Redis, with a reason', async () => {
    const r = await cli(['serve', '--workers', '2'], {});
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /needs rate limits shared between processes: the redis store \(REDIS_URL\), or the file store with rateLimit\.redisUrl/,
    );
  });
});
