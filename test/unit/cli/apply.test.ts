import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { hashApiKey } from '../../../src/auth/api-key.js';
import { failureText } from '../../../src/cli/apply.js';
import { runCliHere, writeFileStoreSetup } from '../../helpers/cli-run.js';

describe('apply', () => {
  test('needs the redis store: exit 2 with the file store, the store untouched', async () => {
    const s = writeFileStoreSetup();
    const before = readFileSync(join(s.dir, 'keys.yaml'), 'utf8');
    const r = await runCliHere(['apply', '-f', join(s.dir, 'keys.yaml'), '--config', s.config]);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      'notify-gateway: apply needs the redis store (REDIS_URL); the file store reads its key file by itself\n',
    );
    assert.equal(readFileSync(join(s.dir, 'keys.yaml'), 'utf8'), before);
  });

  test('a file that cannot be read: exit 2, before any connection', async () => {
    // Port 1 on loopback: a connection attempt would fail as exit 1, not 2.
    const r = await runCliHere(['apply', '-f', '/no/such/keys.yaml'], { REDIS_URL: 'redis://127.0.0.1:1' });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^notify-gateway: cannot read \/no\/such\/keys\.yaml: ENOENT/);
  });

  test('failureText names the change and the reason', () => {
    assert.equal(
      failureText({
        change: { op: 'create', kind: 'key', id: 'k1', companyId: 'acme' },
        reason: 'cap reached',
      } as never),
      'create key k1: cap reached',
    );
  });
});

describe('export', () => {
  test('the store as a key file on stdout: hashes, no secrets', async () => {
    const s = writeFileStoreSetup();
    const r = await runCliHere(['export', '--config', s.config]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^companies:\n {2}- id: acme\n/);
    assert.match(r.stdout, new RegExp(`hash: ${hashApiKey(s.key)}`));
    assert.ok(!r.stdout.includes(s.key));
  });

  test('-o: written through a temporary file, mode 0600, and said so', async () => {
    const s = writeFileStoreSetup();
    const out = join(s.dir, 'export.yaml');
    const r = await runCliHere(['export', '-o', out, '--config', s.config]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, `wrote ${out}\n`);
    assert.equal(statSync(out).mode & 0o777, 0o600);
    assert.match(readFileSync(out, 'utf8'), /^companies:\n/);
    assert.throws(() => statSync(`${out}.tmp`), /ENOENT/);
  });
});
