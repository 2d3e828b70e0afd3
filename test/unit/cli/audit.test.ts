import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AUDIT_COLUMNS } from '../../../src/cli/audit.js';
import { runCliHere, writeFileStoreSetup } from '../../helpers/cli-run.js';

test('an empty or malformed --company is refused (exit 2), not read as every company', async () => {
  const s = writeFileStoreSetup();
  for (const id of ['', 'a b', '../x']) {
    const r = await runCliHere(['audit', '--company', id, '--config', s.config]);
    assert.equal(r.code, 2, id);
    assert.match(r.stderr, /^notify-gateway: --company: must be a company id/);
  }
});

test('with the file store: no entries, and on stderr where the trail is', async () => {
  const s = writeFileStoreSetup();
  const r = await runCliHere(['audit', '--config', s.config]);
  assert.equal(r.code, 0);
  assert.equal(r.stdout, '(none)\n');
  assert.match(r.stderr, /^note: the audit trail is stored in Redis/);
  const json = await runCliHere(['audit', '--json', '--company', 'acme', '--config', s.config]);
  assert.deepEqual(JSON.parse(json.stdout), []);
});

test('the columns', () => {
  assert.deepEqual(
    [...AUDIT_COLUMNS],
    ['at', 'event', 'companyId', 'keyId', 'keyPrefix', 'actor', 'details'],
  );
});
