import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { buildProgram } from '../../../src/cli/main.js';
import { runCliHere, testIo, writeFileStoreSetup } from '../../helpers/cli-run.js';

const ROOT = join(import.meta.dirname, '..', '..', '..');

// Parsing and exit codes of the whole command line, in process: 0 success, 1 runtime failure,
// 2 bad usage or invalid input (DESIGN.md, "Command line").

describe('runCli: parsing and exit codes', () => {
  test('--help: exit 0, the usage and every command on stdout, nothing on stderr', async () => {
    const r = await runCliHere(['--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^Usage: notify-gateway \[options\] \[command\]/);
    for (const c of [
      'serve',
      'demo',
      'example-backend',
      'config',
      'companies',
      'keys',
      'audit',
      'usage',
      'apply',
      'export',
    ])
      assert.match(r.stdout, new RegExp(`^  ${c}\\b`, 'm'), c);
    assert.equal(r.stderr, '');
    assert.deepEqual(r.exits, [], 'a short command never ends the process itself');
  });

  test("a subcommand's --help: exit 0, its options", async () => {
    const r = await runCliHere(['keys', 'rotate', '--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /Usage: notify-gateway keys rotate \[options\] <keyId>/);
    assert.match(r.stdout, /--grace <seconds>/);
  });

  test('no command: the help on stderr, exit 2', async () => {
    const r = await runCliHere([]);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^Usage: notify-gateway/);
  });

  for (const [args, message] of [
    [['nope'], /error: unknown command 'nope'/],
    [['keys', 'nope'], /error: unknown command 'nope'/],
    [['keys', 'list'], /error: missing required argument 'companyId'/],
    [['companies', 'list', '--colour'], /error: unknown option '--colour'/],
    [
      ['audit', '--limit', '0'],
      /error: option '--limit <n>' argument '0' is invalid\. must be a positive whole number/,
    ],
    [
      ['companies', 'create', 'x', '--status', 'gone'],
      /argument 'gone' is invalid\. must be active, pending or suspended/,
    ],
    [['apply'], /error: required option '-f, --file <file>' not specified/],
  ] as const) {
    test(`bad usage (${args.join(' ')}): exit 2, commander's words and the help after them`, async () => {
      const r = await runCliHere([...args]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, message);
      assert.match(r.stderr, /Usage: notify-gateway/);
      assert.equal(r.stdout, '');
    });
  }

  test('an option parser that fails with its own words: exit 2, `notify-gateway: ...`, no help', async () => {
    const r = await runCliHere(['companies', 'update', 'acme', '--limits', '5']);
    assert.equal(r.code, 2);
    assert.equal(
      r.stderr,
      'notify-gateway: --limits: must be "tier", "none" or POINTS/SECONDS[,...] such as 10/1,600/60\n',
    );
  });

  test('invalid input the service refuses: exit 2, in the CLI words', async () => {
    const s = writeFileStoreSetup();
    const r = await runCliHere(['companies', 'update', 'acme', '--tier', 'gold', '--config', s.config]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^notify-gateway: Bad Request: --tier: "gold" is not a configured tier/);
  });

  test('a refused operation: exit 1', async () => {
    const s = writeFileStoreSetup();
    const r = await runCliHere(['companies', 'get', 'nope', '--config', s.config]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'notify-gateway: Not Found: company nope not found\n');
  });

  test('an unexpected error (not a refusal): exit 1 with its message', async () => {
    const s = writeFileStoreSetup();
    const r = await runCliHere(['export', '-o', `${s.dir}/no/such/folder/keys.yaml`, '--config', s.config]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^notify-gateway: ENOENT: no such file or directory/);
  });

  test('an invalid config: exit 2, every problem listed', async () => {
    const s = writeFileStoreSetup('server: { port: -1 }\nrateLimit: { failurePolicy: maybe }\n');
    const r = await runCliHere(['companies', 'list', '--config', s.config]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, new RegExp(`^notify-gateway: invalid configuration \\(${s.config}\\):\\n  - `));
    assert.match(r.stderr, /server\.port/);
    assert.match(r.stderr, /rateLimit\.failurePolicy/);
  });

  test('--config is read before or after the subcommand; GATEWAY_CONFIG when it is not given', async () => {
    const s = writeFileStoreSetup();
    for (const [args, env] of [
      [['--config', s.config, 'companies', 'list'], {}],
      [['companies', 'list', '--config', s.config], {}],
      [['companies', 'list'], { GATEWAY_CONFIG: s.config }],
    ] as const) {
      const r = await runCliHere([...args], env);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^acme\s+Acme\s+free/m);
    }
  });

  test('a failure message never shows the credentials of a URL, whatever quotes it', async () => {
    // An unexpected error quoting a URL: writing to a path that looks like one.
    const s = writeFileStoreSetup();
    const r = await runCliHere([
      'export',
      '-o',
      'redis://u:CANARY@example.test/keys.yaml',
      '--config',
      s.config,
    ]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /^notify-gateway: ENOENT/);
    assert.match(r.stderr, /redis:\/\/\[credentials\]@example\.test/);
    assert.ok(!r.stderr.includes('CANARY'), r.stderr);
  });
});

describe('buildProgram', () => {
  test('a fresh command tree each time: option values of one run do not leak into the next', async () => {
    const io = testIo();
    const a = buildProgram(io);
    await a.parseAsync(['--config', '/a.yaml', 'keys', '--help'], { from: 'user' }).catch(() => undefined);
    assert.equal(a.opts().config, '/a.yaml');
    assert.equal(buildProgram(io).opts().config, undefined);
    assert.deepEqual(
      buildProgram(io).commands.map((c) => c.name()),
      [
        'serve',
        'demo',
        'example-backend',
        'config',
        'companies',
        'keys',
        'audit',
        'usage',
        'apply',
        'export',
      ],
    );
  });
});

describe('what a command loads, seen from a real process', () => {
  /** The packages of node_modules a run of src/cli.ts (under tsx) resolves, tsx's own left out. */
  function packagesLoaded(args: string[]): string[] {
    const dir = mkdtempSync(join(tmpdir(), 'ng-cli-loads-'));
    const log = join(dir, 'resolved.txt');
    const hook = join(dir, 'hook.mjs');
    writeFileSync(
      hook,
      `import { register } from 'node:module';\n` +
        `register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(
          `import { appendFileSync } from 'node:fs';\n` +
            `export async function resolve(s, c, next) { const r = await next(s, c); appendFileSync(${JSON.stringify(log)}, r.url + '\\n'); return r; }\n`,
        )}));\n`,
    );
    writeFileSync(log, '');
    execFileSync(process.execPath, ['--import', 'tsx', '--import', hook, join(ROOT, 'src/cli.ts'), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '' },
      stdio: 'ignore',
    });
    const packages = readFileSync(log, 'utf8')
      .split('\n')
      .map((url) => /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)?.[1])
      .filter((p): p is string => p !== undefined && !['tsx', 'esbuild', 'get-tsconfig'].includes(p));
    return [...new Set(packages)].sort();
  }

  test('--help loads commander only', () => {
    assert.deepEqual(packagesLoaded(['--help']), ['commander']);
  });

  test('keys list on the file store loads the config and store libraries, nothing of the serving path', () => {
    const s = writeFileStoreSetup();
    assert.deepEqual(packagesLoaded(['keys', 'list', 'acme', '--config', s.config]), [
      'commander',
      'yaml',
      'zod',
    ]);
  });
});
