import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import {
  describeFailure,
  missingOutput,
  pageScript,
  readDocBlocks,
  runSession,
  scenarioScript,
  SHELL_LANGS,
  type BlockOutcome,
  type DocBlock,
} from '../helpers/doc-blocks.js';
import { importedPackages, SCENARIOS } from './scenarios.js';

// Every command block of README.md, docs/ and deploy/README.md runs against a real gateway, as a
// user would copy it (docs/testing.md, "Docs that run"). A page's shell blocks run in page order in
// one bash session, in a network namespace of their own; a block that cannot run as written names
// the scenario that runs it, or why it is skipped.
const ROOT = resolve(import.meta.dirname, '../..');
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`),
  'deploy/README.md',
];
/** One block's bound: a cold start of the gateway with workers, on a busy two-core machine. */
const BLOCK_TIMEOUT_MS = 120_000;
/** Sessions at once; each starts a gateway, often a Redis and a backend. */
const SESSIONS_AT_ONCE = 3;

if (!existsSync(join(ROOT, 'dist/cli.js')))
  throw new Error('dist/ is missing: run `npm run build` first (npm test does)');
for (const [tool, pkg] of [
  ['unshare', 'util-linux'],
  ['ip', 'iproute2'],
  ['redis-server', 'redis-server'],
  ['jq', 'jq'],
  ['curl', 'curl'],
  ['openssl', 'openssl'],
]) {
  try {
    execFileSync('sh', ['-c', `PATH="$PATH:/usr/sbin:/sbin" command -v ${tool}`], { stdio: 'ignore' });
  } catch {
    throw new Error(`${tool} is missing: apt-get install -y ${pkg} (.ci/run does)`);
  }
}
if (process.getuid?.() !== 0)
  throw new Error('the docs test makes network namespaces (unshare --net): run it as root, as CI does');

const pages = PAGES.map((page) => ({ page, lines: lineCount(page), blocks: readDocBlocks(ROOT, page) }));

// `npx notify-gateway` in a checkout installs the checkout into npm's npx cache (~/.npm/_npx) on
// first use. Sessions share that cache: several first uses at once race on one folder and can leave
// it broken for every later `npx` of the machine. One first use here, before any session starts.
execFileSync('npx', ['--yes', 'notify-gateway', '--help'], { cwd: ROOT, stdio: 'ignore', timeout: 180_000 });

describe('docs that run', { concurrency: SESSIONS_AT_ONCE }, () => {
  for (const { page, lines, blocks } of pages) {
    const shell = blocks.filter((b) => SHELL_LANGS.has(b.lang) && !b.directive);
    if (shell.length > 0)
      test(`${page}: ${shell.length} shell block${shell.length > 1 ? 's' : ''}, one session`, async (t) => {
        const outcomes = await runSession(pageScript(lines, shell), {
          root: ROOT,
          blockLines: shell.map((b) => b.line),
          blockTimeoutMs: BLOCK_TIMEOUT_MS,
        });
        await report(t, page, outcomes, blocks);
      });

    for (const b of blocks) {
      const d = b.directive;
      if (d?.kind === 'run')
        test(`${page}:${b.line}: a ${b.lang} block, run by the scenario "${d.scenario}"`, async (t) => {
          const scenario = SCENARIOS[d.scenario];
          assert.ok(scenario, `no scenario "${d.scenario}" in test/docs/scenarios.ts`);
          const outcomes = await runSession(scenarioScript(b, scenario), {
            root: ROOT,
            blockLines: [b.line],
            blockTimeoutMs: BLOCK_TIMEOUT_MS,
            env: { DOCS_BLOCK: b.body, DOCS_DEPS: importedPackages(b.body).join(' ') },
          });
          await report(t, page, outcomes, [], d.scenario);
        });
      else if (d?.kind === 'skip' || d?.kind === 'type-check-only')
        test(`${page}:${b.line}: a ${b.lang} block`, { skip: `${d.kind}: ${d.reason}` }, () => {});
    }
  }
});

describe('docs test', () => {
  test('every scenario runs a block of the docs', () => {
    const used = new Set(
      pages.flatMap((p) =>
        p.blocks.flatMap((b) => (b.directive?.kind === 'run' ? [b.directive.scenario] : [])),
      ),
    );
    assert.deepEqual(
      Object.keys(SCENARIOS).filter((s) => !used.has(s)),
      [],
    );
  });
});

/**
 * One subtest per block, so a failure names the page and line of its block; a block followed by
 * an `output` block must have printed its lines.
 */
async function report(
  t: TestContext,
  page: string,
  outcomes: BlockOutcome[],
  blocks: DocBlock[],
  scenario?: string,
): Promise<void> {
  for (const o of outcomes)
    await t.test(`line ${o.line} (${o.seconds.toFixed(1)} s)`, () => {
      if (o.status === 'not reached') assert.fail(`${page}:${o.line}: not run: a block before it failed`);
      if (o.status !== 'passed') assert.fail(describeFailure(page, o, scenario));
      for (const shown of outputBlocksOf(blocks, o.line)) {
        const missing = missingOutput(shown.body, o.output);
        if (missing.length > 0)
          assert.fail(
            `${page}:${shown.line}: the block at line ${o.line} did not print these lines shown as its output:\n` +
              `${missing.map((l) => `  ${l}`).join('\n')}\n--- it printed:\n${o.output}`,
          );
      }
    });
}

/** The `output` blocks that show what the block at `line` prints: the text blocks right after it. */
function outputBlocksOf(blocks: DocBlock[], line: number): DocBlock[] {
  const after = blocks.slice(blocks.findIndex((b) => b.line === line) + 1);
  const next = after.findIndex((b) => b.lang !== 'text');
  return (next < 0 ? after : after.slice(0, next)).filter((b) => b.directive?.kind === 'output');
}

function lineCount(page: string): number {
  return readFileSync(join(ROOT, page), 'utf8').split('\n').length;
}
