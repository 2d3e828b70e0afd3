import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CliExit, type CliContext } from '../../../src/cli/io.js';
import { manage, type Session, type StoreSession } from '../../../src/cli/session.js';
import { testIo, writeFileStoreSetup } from '../../helpers/cli-run.js';

function context(config: string): { ctx: CliContext; out: string[]; err: string[] } {
  const io = testIo();
  return { ctx: { io, configFile: () => config }, out: io.out, err: io.err };
}

describe('manage', () => {
  const s = writeFileStoreSetup();

  test('runs the command on an open session, closes it, then prints; the note only on the file store', async () => {
    const { ctx, out, err } = context(s.config);
    let seen: Session | undefined;
    const order: string[] = [];
    await manage(
      ctx,
      async (session) => {
        seen = session;
        order.push('run');
        return session.companies.listCompanies();
      },
      {
        json: false,
        text: (cs) => (order.push('text'), cs.map((c) => c.id).join(',') + '\n'),
        fileStoreNote: 'from the key file',
        after: () => void order.push('after'),
      },
    );
    assert.deepEqual(order, ['run', 'text', 'after']);
    assert.deepEqual(out, ['acme\n']);
    assert.deepEqual(err, ['note: from the key file\n']);
    assert.match(seen!.actor, /^cli:\S+$/);
    assert.equal((seen as StoreSession).config.store.type, 'file');
    assert.equal(seen!.via, 'file');
  });

  test('--json: toJson of the value, indented', async () => {
    const { ctx, out } = context(s.config);
    await manage(ctx, async () => ({ ok: true as const, value: { a: 1 } }), {
      json: true,
      text: () => 'not this',
      toJson: (v) => ({ wrapped: v }),
    });
    assert.deepEqual(out, ['{\n  "wrapped": {\n    "a": 1\n  }\n}\n']);
  });

  test('a 400 answer: exit 2 in the CLI words; any other refusal: exit 1; with --json the body on stderr', async () => {
    const refuse = (status: number, details: string) => async () =>
      ({
        ok: false as const,
        status,
        error: status === 400 ? 'Bad Request' : 'Conflict',
        details,
        code: 'X',
      }) as never;
    const { ctx, out, err } = context(s.config);
    await assert.rejects(
      manage(ctx, refuse(400, 'expiresAt: must be UTC; label: too long'), { json: true, text: () => '' }),
      (e: unknown) =>
        e instanceof CliExit &&
        e.exitCode === 2 &&
        e.message === 'Bad Request: --expires-at: must be UTC; --label: too long',
    );
    assert.deepEqual(err, ['{"error":"Bad Request","details":"expiresAt: must be UTC; label: too long"}\n']);
    await assert.rejects(
      manage(ctx, refuse(409, 'tier: in use'), { json: false, text: () => '' }),
      (e: unknown) => e instanceof CliExit && e.exitCode === 1 && e.message === 'Conflict: tier: in use',
    );
    assert.deepEqual(out, [], 'nothing on stdout for a refusal');
  });
});
