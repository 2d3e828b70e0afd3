import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CliExit, type CliContext } from '../../../src/cli/io.js';
import { manage } from '../../../src/cli/session.js';
import { openStoreSession } from '../../../src/cli/store-session.js';
import { createRedisClient, type RedisClient } from '../../../src/redis/connection.js';
import { testIo, writeFileStoreSetup } from '../../helpers/cli-run.js';
import { eventually } from '../../helpers/http.js';
import { startRedis, type TestRedis } from '../../helpers/redis.js';

function context(configFile: string | undefined, env: Record<string, string> = {}): CliContext {
  return { io: testIo(env), configFile: () => configFile };
}

const exitWith = (code: number, pattern: RegExp) => (e: unknown) =>
  e instanceof CliExit && e.exitCode === code && pattern.test(e.message);

describe('openStoreSession without Redis', () => {
  test('the file store: one service serves every group; the actor is the OS user', async () => {
    const s = writeFileStoreSetup();
    const session = await openStoreSession(context(s.config, { USER: 'ignored-when-the-os-knows' }));
    try {
      assert.equal(session.companies, session.keys);
      assert.equal(session.keys, session.audit);
      assert.equal(session.store.kind, 'file');
      assert.deepEqual(
        ((await session.companies.listCompanies()) as { value: { id: string }[] }).value.map((c) => c.id),
        ['acme'],
      );
      assert.match(session.actor, /^cli:(?!ignored)\S+$/);
    } finally {
      await session.close();
    }
  });

  test('the memory store lives in a running gateway: exit 2', async () => {
    const s = writeFileStoreSetup();
    writeFileSync(s.config, 'store: { type: memory }\n');
    await assert.rejects(
      openStoreSession(context(s.config)),
      exitWith(2, /^the memory store lives inside a running gateway/),
    );
  });

  test('a key file that cannot be used: exit 1 with its problems', async () => {
    const s = writeFileStoreSetup();
    writeFileSync(join(s.dir, 'keys.yaml'), 'companies:\n  - { id: acme, tier: gold }\n');
    await assert.rejects(openStoreSession(context(s.config)), exitWith(1, /gold/));
  });

  test('a Redis that does not answer: exit 1, its URL without credentials', async () => {
    const s = writeFileStoreSetup();
    writeFileSync(
      s.config,
      'store: { type: redis, redis: { url: "redis://u:CANARY@127.0.0.1:1", connectTimeoutMs: 200 } }\n',
    );
    await assert.rejects(
      openStoreSession(context(s.config)),
      exitWith(1, /^cannot reach Redis at redis:\/\/\[credentials\]@127\.0\.0\.1:1$/),
    );
  });
});

describe('openStoreSession on Redis', () => {
  let redis: TestRedis;
  let admin: RedisClient;
  before(async () => {
    redis = await startRedis();
    admin = createRedisClient(
      { url: redis.url, keyPrefix: 'ng:', commandTimeoutMs: 2000, connectTimeoutMs: 2000 },
      'test-admin',
    );
  });
  after(async () => {
    admin?.disconnect();
    await redis?.stop();
  });

  /** Client connections to the test Redis but the test's own. */
  async function cliConnections(): Promise<string[]> {
    const list = (await admin.call('CLIENT', 'LIST')) as string;
    return list
      .split('\n')
      .filter((l) => l && !l.includes('name=test-admin'))
      .map((l) => /name=(\S*)/.exec(l)![1]!);
  }

  test('one connection (no subscriber: a command never subscribes), closed with the session', async () => {
    const ctx = context(undefined, { REDIS_URL: redis.url });
    const session = await openStoreSession(ctx);
    assert.deepEqual(await cliConnections(), ['notify-gateway']);
    const created = await session.companies.createCompany({ id: 'acme', tier: 'free' }, session.actor);
    assert.ok(created.ok);
    await session.close();
    // disconnect() closes the socket; Redis drops the client a moment later.
    await eventually(async () => (await cliConnections()).length === 0, 2000);
  });

  test('manage closes the session when the command throws', async () => {
    const ctx = context(undefined, { REDIS_URL: redis.url });
    await assert.rejects(
      manage(
        ctx,
        async () => {
          throw new Error('boom');
        },
        { json: false, text: () => '' },
      ),
      /boom/,
    );
    // disconnect() closes the socket; Redis drops the client a moment later.
    await eventually(async () => (await cliConnections()).length === 0, 2000);
  });
});
