import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runCliHere, writeFileStoreSetup } from '../../helpers/cli-run.js';

test('without a Redis the counts are in each gateway: exit 2, naming the admin route', async () => {
  const s = writeFileStoreSetup();
  const r = await runCliHere(['usage', 'acme', '--config', s.config]);
  assert.equal(r.code, 2);
  assert.equal(
    r.stderr,
    "notify-gateway: with the file store and no rateLimit.redisUrl, usage is counted in each gateway's memory: read it with GET /admin/v1/companies/acme/usage\n",
  );
});

test('a bad range is refused first, in the words of the options', async () => {
  const s = writeFileStoreSetup();
  for (const [args, pattern] of [
    [['--from', 'yesterday'], /^notify-gateway: --from: /],
    [['--granularity', 'minute'], /^notify-gateway: --granularity: /],
    [['--from', '2026-01-02', '--to', '2026-01-01'], /^notify-gateway: /],
  ] as const) {
    const r = await runCliHere(['usage', 'acme', ...args, '--config', s.config]);
    assert.equal(r.code, 2, args.join(' '));
    assert.match(r.stderr, pattern);
  }
});
