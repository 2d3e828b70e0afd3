import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  CliExit,
  EXIT_FAIL,
  EXIT_OK,
  EXIT_USAGE,
  exitWith,
  fail,
  failureLine,
  type CliIo,
} from '../../../src/cli/io.js';
import { testIo } from '../../helpers/cli-run.js';

test('the exit codes of DESIGN.md', () => {
  assert.deepEqual([EXIT_OK, EXIT_FAIL, EXIT_USAGE], [0, 1, 2]);
});

test('fail throws a CliExit with the message and the code (1 unless given)', () => {
  assert.throws(
    () => fail('no'),
    (e: unknown) => e instanceof CliExit && e.message === 'no' && e.exitCode === 1,
  );
  assert.throws(
    () => fail('bad', EXIT_USAGE),
    (e: unknown) => e instanceof CliExit && e.exitCode === 2,
  );
});

test('failureLine: one line, prefixed, the credentials of every URL masked', () => {
  assert.equal(
    failureLine('cannot reach redis://user:s3cret@db.test:6379/0 nor https://a:b@h.test/x'),
    'notify-gateway: cannot reach redis://[credentials]@db.test:6379/0 nor https://[credentials]@h.test/x\n',
  );
});

test('exitWith prints the failure, then ends the process through io.exit', () => {
  const seen: string[] = [];
  const io: CliIo = {
    ...testIo(),
    stdout: (t) => void seen.push(`out ${t}`),
    stderr: (t) => void seen.push(`err ${t}`),
    exit: (c) => void seen.push(`exit ${c}`),
  };
  exitWith(io, 'listen EADDRINUSE rediss://x:y@h');
  exitWith(io, 'bad port', EXIT_USAGE);
  assert.deepEqual(seen, [
    'err notify-gateway: listen EADDRINUSE rediss://[credentials]@h\n',
    'exit 1',
    'err notify-gateway: bad port\n',
    'exit 2',
  ]);
});
