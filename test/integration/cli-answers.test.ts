import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MemoryKeyStore } from '../../src/store/memory-store.js';
import { adminApi } from '../helpers/admin.js';
import { runCli as cli } from '../helpers/cli-run.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

// What the CLI answers, in which words, with which exit code.
function dirWith(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'ng-cli-answers-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

describe('config check is the pre-flight of serve', () => {
  test('what serve refuses, config check refuses: exit 2, the same list, every problem named by its key', async () => {
    const dir = dirWith({
      'gateway.yaml':
        'admin: { host: 0.0.0.0, tls: { certFile: admin-cert.pem, keyFile: admin-key.pem } }\n' +
        'server: { port: 0, tls: { certFile: cert.pem, keyFile: key.pem } }\n',
    });
    const file = join(dir, 'gateway.yaml');
    const check = await cli(['config', 'check', '--config', file], { ADMIN_PORT: '0' });
    const serve = await cli(['serve', '--config', file], { ADMIN_PORT: '0' });
    assert.equal(check.code, 2, check.stderr);
    assert.equal(serve.code, 2, serve.stderr);
    assert.equal(serve.stderr, check.stderr, 'serve and config check list the same problems');
    for (const needle of [
      `invalid configuration (${file})`,
      '- admin.token: required because admin.host 0.0.0.0 is not loopback',
      `- store.file.path: ${join(dir, 'keys.yaml')} does not exist (store.file.path defaults to keys.yaml in the config file's folder`,
      `- server.tls.certFile: ${join(dir, 'cert.pem')} does not exist`,
      `- server.tls.keyFile: ${join(dir, 'key.pem')} does not exist`,
      `- admin.tls.certFile: ${join(dir, 'admin-cert.pem')} does not exist`,
      `- admin.tls.keyFile: ${join(dir, 'admin-key.pem')} does not exist`,
    ])
      assert.ok(check.stderr.includes(needle), `${needle}\nnot in:\n${check.stderr}`);
    assert.ok(!/ENOENT/.test(check.stderr));
    assert.equal(serve.stdout, '', 'serve started nothing');
  });

  test('a key file that opens but does not parse: both exit 2 with its problems', async () => {
    const dir = dirWith({
      'gateway.yaml': 'server: { port: 0 }\nadmin: { port: 0 }\n',
      'keys.yaml': 'companies:\n  - { id: acme, tier: gold, keys: [{ id: k1, hash: nope }] }\n',
    });
    const file = join(dir, 'gateway.yaml');
    const check = await cli(['config', 'check', '--config', file]);
    const serve = await cli(['serve', '--config', file]);
    assert.equal(check.code, 2, check.stderr);
    assert.equal(serve.code, 2, serve.stderr);
    assert.equal(serve.stderr, check.stderr);
    assert.ok(check.stderr.includes(`store.file.path (${join(dir, 'keys.yaml')}): `), check.stderr);
    assert.match(check.stderr, /gold/);
    assert.match(check.stderr, /must be the 64-hex SHA-256/);
  });

  test('scopes in the key file are checked against the configured routes, as serve and a reload do', async () => {
    const dir = dirWith({
      'gateway.yaml': 'server: { port: 0 }\nadmin: { port: 0 }\n',
      'keys.yaml': 'companies:\n  - { id: acme, tier: free, scopes: [{ route: /video }] }\n',
    });
    const file = join(dir, 'gateway.yaml');
    const check = await cli(['config', 'check', '--config', file]);
    const serve = await cli(['serve', '--config', file]);
    assert.equal(check.code, 2, check.stderr);
    assert.equal(serve.code, 2, serve.stderr);
    assert.equal(serve.stderr, check.stderr);
    assert.match(check.stderr, /scopes\.0\.route: not a configured route prefix/);
  });

  test('a minimal custom config passes once its key file exists', async () => {
    const dir = dirWith({ 'gateway.yaml': '{}\n', 'keys.yaml': 'companies: []\n' });
    const r = await cli(['config', 'check', '--config', join(dir, 'gateway.yaml')]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /configuration OK/);
  });
});

describe('exit codes and CLI words', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => redis?.stop());

  test('usage errors exit 2; help exits 0', async () => {
    for (const args of [
      ['keys', 'create'],
      ['no-such-command'],
      ['companies', 'list', '--no-such-option'],
      ['audit', '--limit', 'abc'],
      ['audit', '--limit', '0'],
      ['serve', '--workers', 'two'],
      ['keys'],
    ]) {
      const r = await cli(args, { REDIS_URL: 'redis://127.0.0.1:1' });
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.ok(r.stderr.length > 0, `${args.join(' ')} says why`);
    }
    assert.match(
      (await cli(['audit', '--limit', 'abc'])).stderr,
      /--limit <n>.*must be a positive whole number/,
    );
    const help = await cli(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Usage: notify-gateway/);
    assert.equal((await cli(['keys', '--help'])).code, 0);
    // The help states the real default (1 without Redis).
    const serveHelp = await cli(['serve', '--help']);
    assert.match(serveHelp.stdout.replace(/\s+/g, ' '), /default: CPU count with the redis store, else 1/);
  });

  test('errors speak the options the user typed, not the API field types', async () => {
    const env = { REDIS_URL: redis.url };
    const access = await cli(['companies', 'create', 'words', '--api-access', 'maybe'], env);
    assert.equal(access.code, 2);
    assert.match(access.stderr, /--api-access <on\|off>.*must be on or off/);
    assert.ok(!/boolean/i.test(access.stderr), access.stderr);
    const status = await cli(['companies', 'create', 'words', '--status', 'paused'], env);
    assert.equal(status.code, 2);
    assert.match(status.stderr, /--status <status>.*must be active, pending or suspended/);
    assert.equal((await cli(['companies', 'get', 'words'], env)).code, 1, 'nothing was created');
    assert.equal((await cli(['companies', 'create', 'words', '--api-access', 'off'], env)).code, 0);
    const tier = await cli(['companies', 'update', 'words', '--tier', 'gold'], env);
    assert.equal(tier.code, 2);
    assert.match(tier.stderr, /Bad Request: --tier: "gold" is not a configured tier/);
    const past = await cli(['keys', 'create', 'words', '--expires-at', '2020-01-01T00:00:00Z'], env);
    assert.equal(past.code, 2);
    assert.match(past.stderr, /--expires-at: must be in the future/);
  });
});

describe('admin API query input', () => {
  let t: TestGateway;
  before(async () => {
    t = await startTestGateway({}, { store: new MemoryKeyStore() });
  });
  after(async () => t?.close());

  test('GET /admin/v1/audit?limit=abc: 400 naming limit; a good limit still answers', async () => {
    const api = adminApi(t.adminPort);
    for (const q of ['limit=abc', 'limit=0', 'limit=-1', 'limit=1.5', 'limit=']) {
      const r = await api('GET', `/admin/v1/audit?${q}`);
      assert.equal(r.status, 400, q);
      assert.equal(r.body.error, 'Bad Request', q);
      assert.match(String(r.body.details), /^limit: must be a whole number/, q);
    }
    // A repeated limit: refused before its value is read.
    const twice = await api('GET', '/admin/v1/audit?limit=1&limit=2');
    assert.deepEqual([twice.status, twice.body.details], [400, 'limit: must be given once, as limit=value']);
    assert.equal((await api('POST', '/admin/v1/companies', { id: 'aud', tier: 'free' })).status, 201);
    assert.equal((await api('POST', '/admin/v1/companies', { id: 'aud2', tier: 'free' })).status, 201);
    const one = await api('GET', '/admin/v1/audit?limit=1');
    assert.equal(one.status, 200);
    assert.equal(one.list.length, 1);
    assert.equal((await api('GET', '/admin/v1/audit?limit=5000')).list.length, 2, 'capped, not refused');
    assert.equal((await api('GET', '/admin/v1/audit')).status, 200);
  });
});

describe('file store outputs', () => {
  test('no 1970 createdAt, and a note where the CLI cannot see what the running gateway has', async () => {
    const dir = dirWith({
      'gateway.yaml': '{}\n',
      'keys.yaml': [
        'companies:',
        '  - id: acme',
        '    tier: free',
        '    keys:',
        `      - { id: k1, hash: ${'a'.repeat(64)}, prefix: nk_live_abcdef }`,
        '',
      ].join('\n'),
    });
    const env = { GATEWAY_CONFIG: join(dir, 'gateway.yaml') };
    const companies = await cli(['companies', 'list'], env);
    assert.equal(companies.code, 0, companies.stderr);
    assert.ok(!companies.stdout.includes('1970'), companies.stdout);
    // Not recorded in the file: when this command read it (a real instant, not an invented past).
    const at = '\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}Z';
    assert.match(
      companies.stdout,
      new RegExp(`^acme\\s+acme\\s+free\\s+active\\s+true\\s+-\\s+-\\s+${at}\\s+${at}$`, 'm'),
    );
    assert.match(companies.stderr, /^note: the key file records no creation or update time of companies/m);
    assert.equal(companies.stdout.split('\n').length, 3, 'header, one row, final newline');
    const keys = await cli(['keys', 'list', 'acme', '--json'], env);
    assert.equal(keys.code, 0, keys.stderr);
    const [k1] = JSON.parse(keys.stdout) as { createdAt: string; rotationDue: boolean }[];
    assert.ok(Math.abs(Date.parse(k1!.createdAt) - Date.now()) < 60_000, k1!.createdAt);
    assert.equal(k1!.rotationDue, false, 'an unrecorded createdAt is no reason to rotate');
    assert.match(keys.stderr, /lastUsedAt is kept in the running gateway's memory.*admin API/);
    const audit = await cli(['audit'], env);
    assert.equal(audit.code, 0, audit.stderr);
    assert.equal(audit.stdout, '(none)\n');
    assert.match(audit.stderr, /the audit trail is stored in Redis/);
    const json = await cli(['audit', '--json'], env);
    assert.deepEqual(JSON.parse(json.stdout), [], 'stdout stays parseable');
  });

  test('a key file with a name that would clear the screen and forge a table row is refused, naming it', async () => {
    const dir = dirWith({
      'gateway.yaml': '{}\n',
      'keys.yaml': 'companies:\n  - { id: evil, tier: free, name: "Evil\\e[2J\\nforged  row" }\n',
    });
    const r = await cli(['companies', 'list'], { GATEWAY_CONFIG: join(dir, 'gateway.yaml') });
    assert.equal(r.code, 1, r.stdout); // the store cannot be opened, as for any broken key file
    assert.match(r.stderr, /companies\.0\.name: must not contain control characters/);
    assert.equal(r.stdout, '', 'nothing printed');
  });
});
