import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hashApiKey } from '../../../src/auth/api-key.js';
import { createdKeyText, KEY_COLUMNS, rotatedKeyText } from '../../../src/cli/keys.js';
import { runCliHere, writeFileStoreSetup } from '../../helpers/cli-run.js';

describe('keys on the file store', () => {
  const s = writeFileStoreSetup();
  const run = (...args: string[]) => runCliHere([...args, '--config', s.config]);

  test('list: the table, never the key or its hash; where lastUsedAt is, on stderr', async () => {
    const r = await run('keys', 'list', 'acme');
    assert.equal(r.code, 0);
    assert.deepEqual(r.stdout.split('\n')[0]!.split(/\s+/), [...KEY_COLUMNS]);
    assert.match(r.stdout.split('\n')[1]!, new RegExp(`^k1\\s+${s.key.slice(0, 14)}\\s+ci\\s+`));
    assert.ok(!r.stdout.includes(s.key.slice(14)) && !r.stdout.includes(hashApiKey(s.key)));
    assert.match(r.stderr, /^note: lastUsedAt is kept in the running gateway's memory/);
    const json = await run('keys', 'list', 'acme', '--json');
    assert.deepEqual(
      (JSON.parse(json.stdout) as { id: string }[]).map((k) => k.id),
      ['k1'],
    );
  });

  test('create, revoke, rotate: read-only store, exit 1; bad options, exit 2 before the store is opened', async () => {
    for (const args of [
      ['keys', 'create', 'acme'],
      ['keys', 'revoke', 'k1'],
      ['keys', 'rotate', 'k1'],
    ]) {
      const r = await run(...args);
      assert.equal(r.code, 1, args.join(' '));
      assert.match(r.stderr, /read-only \(file store\)/);
    }
    assert.equal((await run('keys', 'rotate', 'k1', '--grace', '-1')).code, 2);
    assert.equal((await run('keys', 'update', 'k1', '--scopes', '[')).code, 2);
  });
});

describe('keys hash', () => {
  test('the SHA-256 record hash of the key on stdin, surrounding whitespace ignored', async () => {
    const key = 'nk_live_0123456789abcdefghijABCDEFGHIJ01';
    const r = await runCliHere(['keys', 'hash'], {}, { stdin: `  ${key}\n` });
    assert.equal(r.code, 0);
    assert.equal(r.stdout, `${hashApiKey(key)}\n`);
  });

  test('nothing on stdin: exit 2 with an example', async () => {
    const r = await runCliHere(['keys', 'hash'], {}, { stdin: ' \n' });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /^notify-gateway: no key on stdin \(e\.g\. printf %s "\$KEY" \| notify-gateway keys hash\)/,
    );
  });
});

describe('the texts of a new key', () => {
  const key = {
    id: 'key_2',
    key: 'nk_live_NEW',
    prefix: 'nk_live_NEW',
    companyId: 'acme',
    label: null,
    environment: 'live',
    createdAt: '2026-01-01T00:00:00Z',
    expiresAt: null,
  };

  test('create: the key once, on a line of its own between blank lines', () => {
    assert.equal(
      createdKeyText(key),
      'key id:  key_2\nprefix:  nk_live_NEW\ncompany: acme\n\nnk_live_NEW\n\nStore this key now: it is not shown again.\n',
    );
  });

  test('rotate: when the old key stops, or how to revoke it', () => {
    assert.match(
      rotatedKeyText({ ...key, replaces: 'key_1', oldKeyRevokesAt: '2026-01-02T00:00:00Z' }),
      /^new key id: key_2 \(replaces key_1\)\n[^]*\n\nnk_live_NEW\n\n[^]*The old key stops working at 2026-01-02T00:00:00Z; to stop it sooner: notify-gateway keys revoke key_1\n$/,
    );
    assert.match(
      rotatedKeyText({ ...key, replaces: 'key_1', oldKeyRevokesAt: null }),
      /The old key keeps working until you revoke it: notify-gateway keys revoke key_1\n$/,
    );
  });
});
