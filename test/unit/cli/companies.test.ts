import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { COMPANY_COLUMNS, companyFields, newCompany } from '../../../src/cli/companies.js';
import { runCliHere, writeFileStoreSetup } from '../../helpers/cli-run.js';

describe('companies on the file store', () => {
  const s = writeFileStoreSetup();
  const run = (...args: string[]) => runCliHere([...args, '--config', s.config]);

  test('list: the table, and on stderr what the key file does not record', async () => {
    const r = await run('companies', 'list');
    assert.equal(r.code, 0);
    assert.deepEqual(r.stdout.split('\n')[0]!.split(/\s+/), [...COMPANY_COLUMNS]);
    // No time in the key file: createdAt and updatedAt are when the command read it.
    assert.match(
      r.stdout.split('\n')[1]!,
      /^acme\s+Acme\s+free\s+active\s+true\s+-\s+-\s+(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)\s+\1$/,
    );
    assert.match(r.stderr, /^note: the key file records no creation or update time/);
  });

  test('get --json: the record as JSON on stdout; the note stays on stderr', async () => {
    const r = await run('companies', 'get', 'acme', '--json');
    assert.equal(r.code, 0);
    const c = JSON.parse(r.stdout) as Record<string, unknown>;
    assert.match(String(c.createdAt), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.notEqual(c.createdAt, '1970-01-01T00:00:00Z');
    assert.deepEqual(c, {
      id: 'acme',
      name: 'Acme',
      tier: 'free',
      status: 'active',
      apiAccess: true,
      createdAt: c.createdAt,
      updatedAt: c.createdAt,
      scopes: null,
      limits: null,
    });
    assert.match(r.stderr, /^note: /);
  });

  test('get of an unknown company: exit 1; with --json the error body on stderr too', async () => {
    const r = await run('companies', 'get', 'nope', '--json');
    assert.equal(r.code, 1);
    assert.equal(r.stdout, '');
    assert.equal(
      r.stderr,
      '{"error":"Not Found","details":"company nope not found"}\nnotify-gateway: Not Found: company nope not found\n',
    );
  });

  test('create and update: the file store is read-only (exit 1); an invalid value is exit 2 first', async () => {
    const created = await run('companies', 'create', 'newco');
    assert.equal(created.code, 1);
    assert.match(created.stderr, /read-only \(file store\): change the YAML file instead/);
    const bad = await run('companies', 'update', 'acme', '--tier', 'gold');
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /^notify-gateway: Bad Request: --tier: "gold" is not a configured tier/);
  });
});

describe('the fields companies create and update send', () => {
  test('create: the defaults of the options; a name, scopes and limits only when given', () => {
    assert.deepEqual(newCompany('acme', { tier: 'free', status: 'active', apiAccess: true }), {
      id: 'acme',
      tier: 'free',
      status: 'active',
      apiAccess: true,
    });
    assert.deepEqual(
      newCompany('acme', {
        name: 'Acme',
        tier: 'free',
        status: 'pending',
        apiAccess: false,
        scopes: { set: null },
        limits: { set: [{ points: 1, duration: 1 }] },
      }),
      {
        id: 'acme',
        tier: 'free',
        status: 'pending',
        apiAccess: false,
        name: 'Acme',
        scopes: null,
        limits: [{ points: 1, duration: 1 }],
      },
    );
  });

  test('update: only what an option set, null kept (`--scopes all`), an empty name kept', () => {
    assert.deepEqual(companyFields({}), {});
    assert.deepEqual(companyFields({ scopes: { set: null }, name: '', apiAccess: false }), {
      scopes: null,
      name: '',
      apiAccess: false,
    });
  });
});
