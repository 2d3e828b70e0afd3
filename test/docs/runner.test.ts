import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, test } from 'node:test';
import { missingOutput, pageScript, parseDocBlocks, runSession, SHELL_LANGS } from '../helpers/doc-blocks.js';

// The docs test's own parts: what would let a block slip past it, and that a session reports the
// right line, stops at a failure, bounds a block's time and leaves no process behind.
const ROOT = resolve(import.meta.dirname, '../..');

/** Runs the shell blocks of a page given as text, as blocks.test.ts runs a page. */
function runPage(text: string, blockTimeoutMs = 30_000) {
  const shell = parseDocBlocks('page.md', text).filter((b) => SHELL_LANGS.has(b.lang) && !b.directive);
  return runSession(pageScript(text.split('\n').length, shell), {
    root: ROOT,
    blockLines: shell.map((b) => b.line),
    blockTimeoutMs,
  });
}

describe('docs test: reading a page', () => {
  test('every fence, its language, its lines and its directive', () => {
    const blocks = parseDocBlocks(
      'page.md',
      [
        '# A page', // 1
        '<!-- docs-test: skip: needs a cluster -->', // 2
        '', // 3
        '```sh', // 4
        'kubectl apply -k .', // 5
        '```', // 6
        '```console', // 7
        '$ echo one \\', // 8
        '  two', // 9
        'one two', // 10
        '```', // 11
        '<!-- docs-test: output -->', // 12
        '```text', // 13
        'one two', // 14
        '```', // 15
      ].join('\n'),
    );
    assert.deepEqual(
      blocks.map((b) => [b.line, b.endLine, b.lang, b.directive]),
      [
        [4, 6, 'sh', { kind: 'skip', reason: 'needs a cluster' }],
        [7, 11, 'console', null],
        [13, 15, 'text', { kind: 'output' }],
      ],
    );
  });

  test('refuses what would hide a command block from the test', () => {
    const refused: [string, RegExp][] = [
      ['```\nnpm ci\n```', /page.md:1: a fence without a language/],
      ['<!-- docs-test: skip -->\n```sh\nnpm ci\n```', /unknown docs-test directive "skip"/],
      ['<!-- docs-test: skip: why -->\nsome prose\n```sh\nx\n```', /must stand just before a fence/],
      ['<!-- docs-test: skip: why -->\n', /with no block after it/],
      ['<!-- docs-test: skip: why -->\n```yaml\na: 1\n```', /a docs-test directive on a yaml block/],
      ['```ts\nconst a = 1;\n```', /page.md:1: a ts block needs "run NAME" or "type-check only: REASON"/],
      ['```yaml\na: 1\n```\n<!-- docs-test: output -->\n```text\na\n```', /needs a shell block/],
      ['```sh\necho', /never closed/],
    ];
    for (const [text, error] of refused) assert.throws(() => parseDocBlocks('page.md', text), error, text);
  });

  test('an output block: its lines in order, other lines between, `...` for what it leaves out', () => {
    assert.deepEqual(missingOutput('a\n...\nc', 'a\nb\nc\r\n'), []);
    assert.deepEqual(missingOutput('a\nc', 'c\na'), ['c']);
    assert.deepEqual(missingOutput('201 429', '201 201 429'), ['201 429']);
  });
});

describe('docs test: running a page', () => {
  test('blocks run in page order in one shell; the first failure stops it, named by its page line', async () => {
    const page = [
      '```sh', // 1
      'A=one', // 2
      'sleep 987654 &', // 3
      '```', // 4
      '```console', // 5
      '$ B="$A two"', // 6
      'not a command', // 7
      '```', // 8
      '```sh', // 9
      'echo "$B"', // 10
      'ls /no/such/dir', // 11
      'echo never', // 12
      '```', // 13
      '```sh', // 14
      'echo never either', // 15
      '```', // 16
    ].join('\n');
    const [first, second, third, fourth] = await runPage(page);
    assert.equal(first!.status, 'passed');
    assert.equal(second!.status, 'passed');
    assert.equal(third!.status, 'failed');
    assert.deepEqual(third!.failure, { line: 11, status: 2, command: 'ls /no/such/dir' });
    assert.match(third!.output, /^one two$/m);
    assert.doesNotMatch(third!.output, /never/);
    assert.equal(fourth!.status, 'not reached');
    // The PID namespace died with the session, and what the page left running with it.
    assert.throws(
      () => execFileSync('pgrep', ['-f', 'sleep 987654']),
      (e: { status?: number }) => e.status === 1,
    );
  });

  test('an unset variable fails its block (a variable of a block that never ran, a typo)', async () => {
    const [o] = await runPage('```sh\necho "$KEY_FROM_NOWHERE"\n```');
    assert.equal(o!.status, 'failed');
    assert.match(o!.output, /KEY_FROM_NOWHERE: unbound variable/);
  });

  test('the network is the session’s own: port 8080 is free, and a curl without a shown status must get a 2xx', async () => {
    const server =
      "node -e \"require('http').createServer((q, s) => { s.statusCode = q.url === '/ok' ? 200 : 404; s.end(q.url); }).listen(8080)\" &";
    const page = [
      '```sh', // 1
      server, // 2
      'until curl -sf http://127.0.0.1:8080/ok >/dev/null; do sleep 0.1; done', // 3
      "curl -s -o /dev/null -w '%{http_code}\\n' http://127.0.0.1:8080/missing", // 4
      'curl -si http://127.0.0.1:8080/missing | head -1', // 5
      'curl -s http://127.0.0.1:8080/ok; echo', // 6
      '```', // 7
      '```sh', // 8
      'curl -s http://127.0.0.1:8080/missing', // 9
      '```', // 10
    ].join('\n');
    const [shown, hidden] = await runPage(page);
    assert.equal(shown!.status, 'passed', shown!.output);
    assert.match(shown!.output, /^404\nHTTP\/1.1 404 Not Found\r?\n\/ok$/m);
    assert.equal(hidden!.status, 'failed');
    assert.deepEqual(hidden!.failure, {
      line: 9,
      status: 22,
      command: 'curl -s http://127.0.0.1:8080/missing',
    });
    assert.match(hidden!.output, /a curl that does not show its status must get a 2xx or 3xx/);
  });

  test('the checkout is read-only to a page: its files go under /tmp', async () => {
    const [o] = await runPage('```sh\ntouch /tmp/fine\ntouch docs-test-probe\n```');
    assert.equal(o!.status, 'failed');
    assert.match(o!.output, /docs-test-probe.*Read-only file system/);
    assert.ok(!existsSync(resolve(ROOT, 'docs-test-probe')));
  });

  test('a block over its time bound ends the session', async () => {
    const started = Date.now();
    const [o, next] = await runPage('```sh\nsleep 600\n```\n```sh\necho after\n```', 1000);
    assert.equal(o!.status, 'timed out');
    assert.equal(next!.status, 'not reached');
    assert.ok(Date.now() - started < 30_000);
  });
});
