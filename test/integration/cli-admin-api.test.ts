import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sha256Hex } from '../../src/admin/roles.js';
import { runCli, runCliHere, type CliRun } from '../helpers/cli-run.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { freePort } from '../helpers/redis.js';

// The management commands through a running gateway's admin API (--admin-url/ADMIN_URL and a
// token): the token's role applies and the audit trail names it, not the OS user (`cli:<user>`).

const TOKENS = {
  reader: 'cli-reader-token-0123456789abcdef',
  keyops: 'cli-keyops-token-0123456789abcdef',
  root: 'cli-root-token-0123456789abcdef00',
};

describe('the CLI through the admin API', () => {
  let t: TestGateway;
  let url: string;
  const files: Record<keyof typeof TOKENS, string> = { reader: '', keyops: '', root: '' };
  const runs: CliRun[] = [];
  /** One command line in process, as the token of `who`, through `--admin-url`. */
  const as = async (who: keyof typeof TOKENS, ...args: string[]) => {
    const r = await runCliHere(['--admin-url', url, '--token-file', files[who], ...args]);
    runs.push(r);
    return r;
  };
  const auditOf = async (companyId: string) => {
    const a = await t.gw.service.readAudit({ limit: 50, companyId });
    assert.ok(a.ok);
    return a.value;
  };

  before(async () => {
    // The memory store lives inside the gateway: only its admin API can manage it.
    t = await startTestGateway({
      store: { type: 'memory' },
      keys: { maxActiveKeys: 0 },
      admin: {
        tokens: [
          { name: 'reader', role: 'read', sha256: sha256Hex(TOKENS.reader) },
          { name: 'keyops', role: 'keys', sha256: sha256Hex(TOKENS.keyops) },
          { name: 'root', role: 'admin', sha256: sha256Hex(TOKENS.root) },
        ],
      },
      log: { level: 'silent' },
    });
    url = `http://127.0.0.1:${t.adminPort}`;
    const dir = mkdtempSync(join(tmpdir(), 'ng-cli-api-'));
    for (const who of Object.keys(TOKENS) as (keyof typeof TOKENS)[]) {
      files[who] = join(dir, `${who}.token`);
      writeFileSync(files[who], `${TOKENS[who]}\n`, { mode: 0o600 });
    }
  });
  after(async () => {
    // No token in anything any command printed (INVARIANTS 12).
    for (const r of runs)
      for (const token of Object.values(TOKENS)) {
        assert.ok(!r.stdout.includes(token), 'no token on stdout');
        assert.ok(!r.stderr.includes(token), 'no token on stderr');
      }
    await t.close();
  });

  test('an admin token creates a company; the audit trail names the token, not the OS user', async () => {
    const r = await as('root', 'companies', 'create', 'acme', '--name', 'Acme', '--tier', 'standard');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^id\s+name\s+tier/);
    assert.match(r.stdout, /^acme\s+Acme\s+standard\s+active/m);
    assert.equal((await t.gw.store.getCompany('acme'))?.tier, 'standard');
    const [created] = (await auditOf('acme')).filter((e) => e.event === 'company.created');
    assert.equal(created?.actor, 'root');
  });

  test('a keys-role token creates keys but not companies: 403 naming the role, exit 1, nothing created', async () => {
    const refused = await as('keyops', 'companies', 'create', 'nope');
    assert.equal(refused.code, 1);
    assert.equal(
      refused.stderr,
      'notify-gateway: Forbidden: this route needs the admin role; this token has keys\n',
    );
    assert.equal(refused.stdout, '');
    assert.equal(await t.gw.store.getCompany('nope'), null);

    const made = await as('keyops', 'keys', 'create', 'acme', '--label', 'ci');
    assert.equal(made.code, 0, made.stderr);
    const key = /^(nk_live_\S+)$/m.exec(made.stdout)?.[1];
    assert.ok(key, made.stdout);
    const id = /^key id:\s+(\S+)$/m.exec(made.stdout)?.[1];
    const [audit] = (await auditOf('acme')).filter((e) => e.event === 'key.created' && e.keyId === id);
    assert.equal(audit?.actor, 'keyops');
    // The key works at once through the gateway.
    const res = await fetch(`http://127.0.0.1:${t.port}/notify/v1/x`, { headers: { 'X-API-Key': key } });
    await res.arrayBuffer();
    assert.notEqual(res.status, 401);

    const rotated = await as('keyops', 'keys', 'rotate', id!, '--json');
    assert.equal(rotated.code, 0, rotated.stderr);
    assert.equal((JSON.parse(rotated.stdout) as { replaces: string }).replaces, id);
    const revoked = await as('keyops', 'keys', 'revoke', id!);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, new RegExp(`^revoked ${id} `));
    const update = await as('keyops', 'keys', 'update', id!, '--limits', '5/1');
    assert.equal(update.code, 1);
    assert.match(update.stderr, /needs the admin role; this token has keys/);
  });

  test('a read token reads (companies, keys, audit, usage) and writes nothing', async () => {
    const list = await as('reader', 'companies', 'list', '--json');
    assert.equal(list.code, 0, list.stderr);
    assert.deepEqual(
      (JSON.parse(list.stdout) as { id: string }[]).map((c) => c.id),
      ['acme'],
    );
    const keys = await as('reader', 'keys', 'list', 'acme');
    assert.equal(keys.code, 0, keys.stderr);
    assert.match(keys.stdout, /^id\s+prefix/);
    const audit = await as('reader', 'audit', '--company', 'acme', '--limit', '3', '--json');
    assert.equal(audit.code, 0, audit.stderr);
    assert.equal((JSON.parse(audit.stdout) as unknown[]).length, 3);
    const usage = await as('reader', 'usage', 'acme', '--granularity', 'day', '--json');
    assert.equal(usage.code, 0, usage.stderr);
    assert.equal((JSON.parse(usage.stdout) as { granularity: string }).granularity, 'day');
    const denied = await as('reader', 'keys', 'create', 'acme');
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /Forbidden: this route needs the keys role; this token has read/);
  });

  test('the exit codes and messages of the store: 400 is exit 2 in the CLI words, 404 exit 1', async () => {
    const bad = await as('root', 'companies', 'update', 'acme', '--name', 'x'.repeat(201));
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^notify-gateway: Bad Request: --name: /);
    const range = await as('reader', 'usage', 'acme', '--from', 'yesterday');
    assert.equal(range.code, 2);
    assert.match(range.stderr, /--from: /);
    const missing = await as('reader', 'companies', 'get', 'ghost');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /^notify-gateway: Not Found: .*ghost/);
    const json = await as('reader', 'companies', 'get', 'ghost', '--json');
    assert.equal(json.code, 1);
    assert.deepEqual(Object.keys(JSON.parse(json.stderr.split('\n')[0]!) as object), ['error', 'details']);
  });

  test('a wrong token: 401, exit 1, the token not echoed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ng-cli-api-bad-'));
    const wrong = join(dir, 'wrong.token');
    writeFileSync(wrong, 'not-the-token-0123456789abcdef');
    const r = await runCliHere(['--admin-url', url, '--token-file', wrong, 'companies', 'list']);
    runs.push(r);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^notify-gateway: Unauthorized: /);
    assert.ok(!r.stderr.includes('not-the-token'));
  });

  test('ADMIN_URL and ADMIN_TOKEN from the environment do the same as the options', async () => {
    const r = await runCliHere(['companies', 'get', 'acme', '--json'], {
      ADMIN_URL: url,
      ADMIN_TOKEN: TOKENS.reader,
    });
    runs.push(r);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((JSON.parse(r.stdout) as { id: string }).id, 'acme');
    // --token-file wins over ADMIN_TOKEN.
    const w = await runCliHere(['--token-file', files.reader, 'companies', 'create', 'x'], {
      ADMIN_URL: url,
      ADMIN_TOKEN: TOKENS.root,
    });
    runs.push(w);
    assert.equal(w.code, 1);
    assert.match(w.stderr, /this token has read/);
  });

  test('bad usage is exit 2 before any call; an unreachable API exit 1 naming it', async () => {
    const cases: [string[], Record<string, string>, RegExp][] = [
      [
        ['--token-file', files.root, 'companies', 'list'],
        {},
        /--token-file needs --admin-url \(or ADMIN_URL\)/,
      ],
      [
        ['--admin-url', url, '--token-file', '/no/such/token', 'companies', 'list'],
        {},
        /cannot read --token-file \/no\/such\/token: ENOENT/,
      ],
      [
        ['companies', 'list'],
        { ADMIN_URL: 'http://user:s3cret@127.0.0.1:1' },
        /must not carry credentials \(http:\/\/\[credentials\]@127\.0\.0\.1:1\)/,
      ],
      [['--admin-url', 'redis://127.0.0.1:1', 'companies', 'list'], {}, /must be http:\/\/ or https:\/\//],
      [
        ['--admin-url', url, 'apply', '-f', '/tmp/x.yaml'],
        {},
        /apply and export work on the store itself \(root\)/,
      ],
      [['--admin-url', url, 'export'], {}, /apply and export work on the store itself \(root\)/],
    ];
    for (const [args, env, message] of cases) {
      const r = await runCliHere(args, env);
      runs.push(r);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.ok(!r.stderr.includes('s3cret'));
    }
    const closed = await freePort();
    const down = await runCliHere(['--admin-url', `http://127.0.0.1:${closed}`, 'companies', 'list']);
    assert.equal(down.code, 1);
    assert.equal(
      down.stderr,
      `notify-gateway: cannot reach the admin API at http://127.0.0.1:${closed}: ECONNREFUSED\n`,
    );
  });

  test('the built bin: the same through ADMIN_URL, and it exits at once', async () => {
    const r = await runCli(['keys', 'list', 'acme', '--json'], {
      ADMIN_URL: url,
      ADMIN_TOKEN: TOKENS.reader,
    });
    runs.push(r);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(Array.isArray(JSON.parse(r.stdout)));
  });
});
