import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateApiKey, hashApiKey, parseApiKey } from '../../../src/auth/api-key.js';
import { generateKeyEntry } from '../../../src/cli/key-entry.js';
import { CliExit } from '../../../src/cli/io.js';
import { parseKeyFile } from '../../../src/store/file-store.js';
import { runCliHere } from '../../helpers/cli-run.js';

const TIERS = new Set(['free']);

test("the printed entry loads in a key file as is, and its hash is the printed key's", () => {
  const out = generateKeyEntry({ environment: 'test', id: 'ci-key', label: 'CI: #1 - "nightly"' });
  const [key, , ...rest] = out.split('\n');
  assert.deepEqual(parseApiKey(key!, { maxLength: 256, acceptLegacy: false }), {
    ok: true,
    environment: 'test',
  });
  assert.match(key!, /^nk_test_/);
  const entry = rest.slice(rest.findIndex((l) => l.startsWith('      - '))).join('\n');
  const parsed = parseKeyFile(`companies:\n  - id: acme\n    tier: free\n    keys:\n${entry}`, TIERS);
  assert.ok(parsed.ok, JSON.stringify(parsed));
  assert.match(entry, new RegExp(`hash: ${hashApiKey(key!)}`));
  assert.match(entry, /label: "CI: #1 - \\"nightly\\""/);
  assert.match(entry, /^ {6}- id: ci-key$/m);
});

test('--json: the key with the entry fields', () => {
  const v = JSON.parse(generateKeyEntry({ environment: 'live', json: true })) as Record<string, string>;
  assert.deepEqual(Object.keys(v), ['key', 'id', 'hash', 'prefix', 'environment', 'createdAt']);
  assert.equal(v.hash, hashApiKey(v.key!));
  assert.equal(v.prefix, v.key!.slice(0, v.prefix!.length));
  assert.match(v.createdAt!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});

test('what the key file would refuse is refused here, exit 2', () => {
  const usage = (pattern: RegExp) => (e: unknown) =>
    e instanceof CliExit && e.exitCode === 2 && pattern.test(e.message);
  assert.throws(
    () => generateKeyEntry({ environment: 'Live' }),
    usage(/^--environment: must be 2-16 lowercase/),
  );
  assert.throws(() => generateKeyEntry({ environment: 'live', id: '-x' }), usage(/^--id: must be 1-64/));
  assert.throws(() => generateKeyEntry({ environment: 'live', id: generateApiKey('live') }), usage(/^--id:/));
  assert.throws(
    () => generateKeyEntry({ environment: 'live', label: 'x'.repeat(201) }),
    usage(/^--label: at most 200/),
  );
  assert.throws(
    () => generateKeyEntry({ environment: 'live', label: generateApiKey('live') }),
    usage(/^--label: must not contain an API key/),
  );
  assert.throws(() => generateKeyEntry({ environment: 'live', label: 'a\u001bb' }), usage(/^--label: /));
});

test('keys generate prints it and needs no config or store', async () => {
  const r = await runCliHere(['keys', 'generate', '--environment', 'test'], {
    GATEWAY_CONFIG: '/does/not/exist.yaml',
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^nk_test_\w+\n\nHand this key to the company now/);
});
