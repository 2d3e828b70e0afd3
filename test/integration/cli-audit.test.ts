import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runCliHere } from '../helpers/cli-run.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

// `audit` takes the admin API's filters (--event, --from, --to, --before, --after) the same way on
// the store (root, REDIS_URL) and through a running gateway's admin API (--admin-url): one Redis
// store behind both, so both sessions must print the same entries.

interface Entry {
  id: string;
  event: string;
  keyId?: string;
}

describe('audit filters, on the store and through the admin API', () => {
  let redis: TestRedis;
  let t: TestGateway;
  const sessions: Record<string, (...args: string[]) => ReturnType<typeof runCliHere>> = {};

  before(async () => {
    redis = await startRedis();
    t = await startTestGateway({
      store: { type: 'redis', redis: { url: redis.url } },
      log: { level: 'silent' },
    });
    const env = { REDIS_URL: redis.url };
    const apiEnv = { ADMIN_URL: `http://127.0.0.1:${t.adminPort}`, ADMIN_TOKEN };
    sessions.store = (...args) => runCliHere(args, env);
    sessions.api = (...args) => runCliHere(args, apiEnv);
    // company.created, key.created ×2, key.revoked: four entries, oldest first.
    assert.equal((await sessions.store('companies', 'create', 'aud')).code, 0);
    const keys: string[] = [];
    for (const label of ['one', 'two']) {
      const k = await sessions.store('keys', 'create', 'aud', '--label', label, '--json');
      assert.equal(k.code, 0, k.stderr);
      keys.push((JSON.parse(k.stdout) as { id: string }).id);
    }
    assert.equal((await sessions.store('keys', 'revoke', keys[0]!)).code, 0);
  });
  after(async () => {
    await t?.close();
    await redis?.stop();
  });

  for (const via of ['store', 'api']) {
    const entries = async (...args: string[]): Promise<Entry[]> => {
      const r = await sessions[via]!('audit', '--company', 'aud', '--json', ...args);
      assert.equal(r.code, 0, r.stderr);
      return JSON.parse(r.stdout) as Entry[];
    };

    test(`${via}: --event keeps only the named events; --from and --to bound the time`, async () => {
      assert.deepEqual(
        (await entries('--event', 'key.revoked')).map((e) => e.event),
        ['key.revoked'],
      );
      assert.deepEqual(
        (await entries('--event', 'key.created,company.created')).map((e) => e.event),
        ['key.created', 'key.created', 'company.created'],
      );
      assert.deepEqual(await entries('--from', '2999-01-01'), []);
      assert.deepEqual(await entries('--to', '2000-01-01T00:00:00Z'), []);
      assert.equal((await entries('--from', '2000-01-01', '--to', '2999-01-01')).length, 4);
    });

    test(`${via}: --before and --after page through the trail by entry id`, async () => {
      const all = await entries();
      assert.deepEqual(
        all.map((e) => e.event),
        ['key.revoked', 'key.created', 'key.created', 'company.created'],
      );
      const [first] = await entries('--limit', '1');
      assert.deepEqual(
        (await entries('--before', first!.id, '--limit', '2')).map((e) => e.id),
        all.slice(1, 3).map((e) => e.id),
      );
      // Newer entries, oldest first (to follow the trail).
      assert.deepEqual(
        (await entries('--after', all[2]!.id)).map((e) => e.id),
        all
          .slice(0, 2)
          .reverse()
          .map((e) => e.id),
      );
    });

    test(`${via}: a bad filter is exit 2, naming the option typed`, async () => {
      for (const [args, message] of [
        [['--event', 'key.nope'], /--event: must be one or more of/],
        [['--from', 'yesterday'], /--from: must be a UTC timestamp/],
        [['--from', '2026-02-01', '--to', '2026-01-01'], /--from: must be before to/],
        [['--before', 'x'], /--before: must be the id of an audit entry/],
        [['--before', '1', '--after', '1'], /--before: give before/],
      ] as const) {
        const r = await sessions[via]!('audit', ...args);
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, message);
      }
    });
  }
});
