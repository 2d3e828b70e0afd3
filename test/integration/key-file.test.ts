import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { generateApiKey, hashApiKey } from '../../src/auth/api-key.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, send } from '../helpers/http.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

/** One sample of a metric from the admin port's `/metrics`, or null when the series is absent. */
async function metric(t: TestGateway, series: string): Promise<number | null> {
  const r = await send(t.adminPort, '/metrics', { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  assert.equal(r.status, 200);
  const line = r.body.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
}

describe('key file: a broken or truncated file keeps the last good keys, is logged and counted', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ng-keyfile-'));
  const path = join(dir, 'keys.yaml');
  const [used, fresh, revoked] = [generateApiKey('live'), generateApiKey('live'), generateApiKey('live')];
  const file = (revokedAt: string | null) =>
    `companies:\n  - id: acme\n    tier: standard\n    keys:\n` +
    `      - id: acme-used\n        hash: ${hashApiKey(used)}\n` +
    `      - id: acme-revoked\n        hash: ${hashApiKey(revoked)}\n` +
    (revokedAt ? `        revokedAt: ${revokedAt}\n` : '') +
    `      - id: acme-fresh\n        hash: ${hashApiKey(fresh)}\n`;
  let upstream: RecordingUpstream;
  let t: TestGateway;
  const call = (key: string) => send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': key } });
  const rejected = 'gateway_key_file_reloads_total{result="rejected"}';

  before(async () => {
    upstream = await startUpstream();
    writeFileSync(path, file('2026-01-01T00:00:00Z'));
    t = await startTestGateway({
      store: { type: 'file', file: { path } },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
    });
  });
  after(async () => {
    await t?.close();
    await upstream?.close();
  });

  test('emptied, then half-written: every key keeps working, each rejection is counted and logged', async () => {
    assert.equal((await call(used)).status, 200);
    assert.equal((await call(revoked)).status, 401);
    assert.equal(await metric(t, 'gateway_key_file_last_reload_success'), 1);
    assert.equal(await metric(t, rejected), 0);

    writeFileSync(path, ''); // `: > keys.yaml`
    // Polled every second: the bound only caps a failure.
    await eventually(async () => (await metric(t, rejected)) === 1, 10_000, 100);
    assert.equal(await metric(t, 'gateway_key_file_last_reload_success'), 0);
    // `fresh` was never looked up, so no cache hides a wiped store: it must come from the store.
    assert.equal((await call(fresh)).status, 200);
    assert.equal((await call(used)).status, 200);

    const good = file('2026-01-01T00:00:00Z');
    writeFileSync(path, good.slice(0, good.indexOf('acme-fresh') + 4)); // a half-written copy
    await eventually(async () => (await metric(t, rejected)) === 2, 10_000, 100);
    assert.equal((await call(fresh)).status, 200);
    assert.equal((await call(revoked)).status, 401, 'the revocation stays');

    // Cut at a line boundary, just before the revocation: valid YAML, refused as a cut-short copy.
    writeFileSync(path, good.slice(0, good.indexOf('        revokedAt')));
    await eventually(async () => (await metric(t, rejected)) === 3, 10_000, 100);
    assert.equal((await call(revoked)).status, 401, 'a truncation must not un-revoke a key');

    const lines = t.logs().filter((l) => l.msg === 'key file rejected; keeping the last good content');
    assert.equal(lines.length, 3);
    assert.match(String((lines[0]!.problems as string[])[0]), /the key file is empty/);
    assert.match((lines[1]!.problems as string[]).join('\n'), /companies\.0\.keys\.2/);
    assert.match((lines[2]!.problems as string[]).join('\n'), /cut short/);
    const logText = t.logText();
    for (const k of [used, fresh, revoked]) {
      assert.ok(!logText.includes(k), 'a key in the logs');
      assert.ok(!logText.includes(hashApiKey(k)), 'a hash in the logs');
    }
  });

  test('a reload that drops a revocation applies, with a warning and a count', async () => {
    // The file is the source of truth (INVARIANTS #2): written atomically, the change applies.
    writeFileSync(`${path}.tmp`, file(null));
    renameSync(`${path}.tmp`, path);
    await eventually(
      async () => (await metric(t, 'gateway_key_file_revocations_undone_total')) === 1,
      10_000,
      100,
    );
    assert.equal(await metric(t, 'gateway_key_file_last_reload_success'), 1);
    await eventually(async () => (await call(revoked)).status === 200, 5000, 50);
    const warn = t.logs().find((l) => l.msg === 'key file reload removes a revocation: the key works again');
    assert.ok(warn, 'the warning is logged');
    assert.equal(warn.level, 'warn');
    assert.equal(warn.keyId, 'acme-revoked');
    assert.equal(warn.revokedAtBefore, '2026-01-01T00:00:00Z');
    assert.ok(!t.logText().includes(hashApiKey(revoked)));
  });
});
