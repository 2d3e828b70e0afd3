import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The code blocks of a markdown page and how the docs test treats each one (docs/testing.md, "Docs
 * that run"). A block's directive is an HTML comment on the lines just before its fence:
 * `<!-- docs-test: skip: REASON -->`, `<!-- docs-test: run NAME -->` (a scenario of
 * test/docs/scenarios.ts runs it), `<!-- docs-test: type-check only: REASON -->` (a `ts` block),
 * `<!-- docs-test: output -->` (a `text` block: what the shell block above it prints).
 */
export interface DocBlock {
  page: string;
  /** The line of the opening fence (1-based), as an editor shows it. */
  line: number;
  /** The line of the closing fence. */
  endLine: number;
  lang: string;
  body: string;
  directive: Directive | null;
}

export type Directive =
  | { kind: 'skip'; reason: string }
  | { kind: 'run'; scenario: string }
  | { kind: 'type-check-only'; reason: string }
  | { kind: 'output' };

/** Languages whose blocks a user types into a shell. */
export const SHELL_LANGS = new Set(['sh', 'bash', 'shell', 'console']);
/** Languages whose blocks are programs. */
export const TS_LANGS = new Set(['ts', 'typescript']);

const FENCE = /^(`{3,}|~{3,})(.*)$/;
const DIRECTIVE = /^<!-- docs-test: (.*?) -->$/;

/**
 * Every fenced block of `page` (a path from `root`), with its directive. Throws on what would let a
 * command block slip past the test: a fence without a language, an unknown or misplaced directive,
 * a skip without a reason, an unclosed fence.
 */
export function readDocBlocks(root: string, page: string): DocBlock[] {
  return parseDocBlocks(page, readFileSync(join(root, page), 'utf8'));
}

/** The blocks of markdown `text`, named `page` in errors: see readDocBlocks. */
export function parseDocBlocks(page: string, text: string): DocBlock[] {
  const lines = text.split('\n');
  const blocks: DocBlock[] = [];
  let pending: { directive: Directive; line: number } | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const d = DIRECTIVE.exec(line.trim());
    if (d) {
      if (pending) throw new Error(`${page}:${pending.line}: a docs-test directive with no block after it`);
      pending = { directive: parseDirective(page, i + 1, d[1]!), line: i + 1 };
      continue;
    }
    const open = FENCE.exec(line);
    if (!open) {
      if (pending && line.trim() !== '')
        throw new Error(`${page}:${pending.line}: a docs-test directive must stand just before a fence`);
      continue;
    }
    const lang = open[2]!.trim().split(/\s+/)[0] ?? '';
    if (lang === '') throw new Error(`${page}:${i + 1}: a fence without a language (say text, sh, ts, ...)`);
    const close = lines.findIndex((l, j) => j > i && l.trim() === open[1]);
    if (close < 0) throw new Error(`${page}:${i + 1}: this fence is never closed`);
    const block: DocBlock = {
      page,
      line: i + 1,
      endLine: close + 1,
      lang,
      body: lines.slice(i + 1, close).join('\n'),
      directive: pending?.directive ?? null,
    };
    checkDirective(block, blocks);
    blocks.push(block);
    pending = null;
    i = close;
  }
  if (pending) throw new Error(`${page}:${pending.line}: a docs-test directive with no block after it`);
  return blocks;
}

function parseDirective(page: string, line: number, text: string): Directive {
  const skip = /^skip: (\S.*)$/.exec(text);
  if (skip) return { kind: 'skip', reason: skip[1]! };
  const only = /^type-check only: (\S.*)$/.exec(text);
  if (only) return { kind: 'type-check-only', reason: only[1]! };
  const run = /^run ([\w-]+)$/.exec(text);
  if (run) return { kind: 'run', scenario: run[1]! };
  if (text === 'output') return { kind: 'output' };
  throw new Error(
    `${page}:${line}: unknown docs-test directive "${text}" (skip: REASON, run NAME, type-check only: REASON, output)`,
  );
}

function checkDirective(b: DocBlock, before: DocBlock[]): void {
  const at = `${b.page}:${b.line}`;
  const runnable = SHELL_LANGS.has(b.lang) || TS_LANGS.has(b.lang);
  if (b.directive?.kind === 'output') {
    if (b.lang !== 'text') throw new Error(`${at}: "output" is for text blocks`);
    const above = before.findLast((p) => p.lang !== 'text');
    if (!above || !SHELL_LANGS.has(above.lang) || above.directive)
      throw new Error(`${at}: an "output" block needs a shell block that runs as written above it`);
    return;
  }
  if (b.directive && !runnable) throw new Error(`${at}: a docs-test directive on a ${b.lang} block`);
  if (b.directive?.kind === 'type-check-only' && !TS_LANGS.has(b.lang))
    throw new Error(`${at}: "type-check only" is for ts blocks`);
  if (TS_LANGS.has(b.lang) && (!b.directive || b.directive.kind === 'skip'))
    throw new Error(`${at}: a ts block needs "run NAME" or "type-check only: REASON"`);
}

/** The commands of a block as a shell runs them; a `console` block's `$ ` lines only, the rest blank. */
function commandLines(b: DocBlock): string[] {
  const lines = b.body.split('\n');
  if (b.lang !== 'console') return lines;
  let continued = false;
  return lines.map((l) => {
    const cmd = continued ? l : l.startsWith('$ ') ? l.slice(2) : '';
    continued = cmd !== '' && cmd.endsWith('\\');
    return cmd;
  });
}

/** The marker lines the session prints on fd 9, the test's own stream (kept out of `$(...)`). */
const MARK = '\x1edocs-test';

/**
 * Opens every session: errors and unset variables stop it, and the failing command is reported
 * with its line, its status and the end of every log the blocks wrote to /tmp. A curl that does
 * not show its status (no -i, -I, -w, -f) must get a 2xx or 3xx: it runs with --fail-with-body.
 */
const PRELUDE = [
  'exec 9>&1 2>&1',
  'set -uo pipefail',
  // \036 is MARK's first character.
  '__docs_mark() { printf \'\\n\\036docs-test %s\\n\' "$*" >&9; }',
  '__docs_fail() {',
  '  trap - ERR',
  '  local command=$3',
  // A failed curl of the wrapper below ends on its `return`: name the curl instead.
  '  [ "$command" = \'return $s\' ] && command=${__docs_curl:-$command}',
  '  __docs_mark "fail $2 $1 $(printf %s "$command" | base64 -w0)"',
  '  for f in /tmp/*.log; do [ -f "$f" ] && { echo "--- the end of $f:"; tail -n 15 "$f"; }; done',
  '  exit 97',
  '}',
  'trap \'__docs_fail $? $LINENO "$BASH_COMMAND"\' ERR',
  'curl() {',
  '  local a s shown=',
  '  for a in "$@"; do',
  '    case $a in --include | --head | --write-out | --fail* | -[iIwf]* | -[!-]*[iIwf]*) shown=1 ;; esac',
  '  done',
  '  [ -n "$shown" ] && { command curl "$@"; return; }',
  '  command curl --fail-with-body "$@" && return',
  '  s=$?',
  '  __docs_curl="curl $*"',
  "  printf '\\n(docs test: curl exited %s; a curl that does not show its status must get a 2xx or 3xx)\\n' $s",
  '  return $s',
  '}',
].join('\n');
/** The lines of the prelude: a failure's line minus these is the line of the page. */
const PRELUDE_LINES = PRELUDE.split('\n').length;

/**
 * The session script of a page: its shell blocks without a directive, each at the lines it has
 * in the page (so `$LINENO` is the page's line), everything else blank.
 */
export function pageScript(lineCount: number, blocks: DocBlock[]): string {
  const lines: string[][] = Array.from({ length: lineCount }, () => []);
  for (const b of blocks) {
    lines[b.line - 1]!.push(`__docs_mark begin ${b.line}`);
    commandLines(b).forEach((l, k) => lines[b.line + k]!.push(l));
    lines[b.endLine - 1]!.push(`__docs_mark end ${b.line}`);
  }
  return `${PRELUDE}\n${lines.map((l) => l.join('; ')).join('\n')}`;
}

/** The session script of one block run by a scenario (a bash script of test/docs/scenarios.ts). */
export function scenarioScript(b: DocBlock, scenario: string): string {
  // The scenario's first line is the script's second: a failure's line minus one is the scenario's.
  return [PRELUDE, `__docs_mark begin ${b.line}`, scenario.trim(), `__docs_mark end ${b.line}`].join('\n');
}

/** What happened to one block of a session. */
export interface BlockOutcome {
  line: number;
  status: 'passed' | 'failed' | 'timed out' | 'not reached';
  output: string;
  seconds: number;
  /** The command that failed: its line (of the page, or of the scenario plus one) and exit status. */
  failure: { line: number; status: number; command: string } | null;
}

export interface SessionOptions {
  root: string;
  /** The lines of the blocks, in the order the script runs them. */
  blockLines: number[];
  /** Time bound of one block. */
  blockTimeoutMs: number;
  /** Extra environment (on top of PATH, HOME and LANG). */
  env?: Record<string, string>;
}

/**
 * Runs `script` with bash in a network namespace of its own (a loopback only, so the default
 * ports are free), a PID namespace (everything a block left running dies with the session) and a
 * private /tmp, from `root` (read-only), with PATH, HOME and LANG only. Stops at the first failing command; a
 * block over its bound kills the session.
 */
export function runSession(script: string, opts: SessionOptions): Promise<BlockOutcome[]> {
  // The checkout is read-only inside: a block writes under /tmp, and pages cannot clobber each other.
  // The checkout is held at /mnt while /tmp is replaced: a checkout under /tmp (a clone made with
  // mktemp -d) would otherwise vanish under the new /tmp.
  const setup = [
    'ip link set lo up',
    'mount --bind "$2" /mnt',
    'mount -t tmpfs -o mode=1777,size=512m tmpfs /tmp',
    'mkdir -p "$2"',
    'mount --bind /mnt "$2"',
    'umount /mnt',
    'mount -o remount,bind,ro "$2"',
    'cd "$2"',
    'exec bash -c "$1"',
  ].join(' && ');
  const bound = Math.ceil((opts.blockTimeoutMs * opts.blockLines.length) / 1000) + 30;
  // `timeout` bounds the whole session even if this process dies. A process group of its own, so
  // that one kill reaches timeout and unshare; unshare's death kills the namespace's first process
  // (--kill-child), and with it every process of the namespace.
  const child = spawn(
    'timeout',
    ['-s', 'KILL', `${bound}s`, 'unshare', '--net', '--pid', '--fork', '--mount-proc', '--kill-child'].concat(
      ['bash', '-c', setup, 'docs-test', script, opts.root],
    ),
    { env: sessionEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let killed = false;
  const kill = () => {
    killed = true;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const outcomes = new Map<number, BlockOutcome>();
  for (const line of opts.blockLines)
    outcomes.set(line, { line, status: 'not reached', output: '', seconds: 0, failure: null });
  let current: BlockOutcome | null = null;
  let started = 0;
  let rest = '';
  let preamble = '';
  let timer: NodeJS.Timeout | undefined;
  const append = (text: string) => {
    if (current) current.output += text;
    else preamble += text;
  };
  const onLine = (line: string) => {
    if (killed) return;
    if (!line.startsWith(MARK)) return append(line + '\n');
    const [verb = '', a = '', b = '', c = ''] = line.slice(MARK.length + 1).split(' ');
    if (verb === 'begin') {
      current = outcomes.get(Number(a)) ?? null;
      started = Date.now();
      clearTimeout(timer);
      timer = setTimeout(() => {
        if (current) current.status = 'timed out';
        kill();
      }, opts.blockTimeoutMs);
    } else if (verb === 'end' && current) {
      current.status = 'passed';
      current.seconds = (Date.now() - started) / 1000;
      current = null;
      clearTimeout(timer);
    } else if (verb === 'fail' && current) {
      current.status = 'failed';
      current.failure = {
        line: Number(a) - PRELUDE_LINES,
        status: Number(b),
        command: Buffer.from(c, 'base64').toString('utf8'),
      };
    }
  };
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (chunk: string) => {
    const parts = (rest + chunk).split('\n');
    rest = parts.pop() ?? '';
    parts.forEach(onLine);
  });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk: string) => append(chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (rest) onLine(rest);
      const open = current as BlockOutcome | null;
      if (open) {
        // The session ended inside this block: a failed command, `set -u`, a syntax error, a kill.
        if (open.status === 'not reached') open.status = 'failed';
        open.seconds = (Date.now() - started) / 1000;
        open.output += `\n(the session ended: ${signal ?? `exit ${code}`})\n`;
      } else if (code !== 0 && code !== null) {
        const first = opts.blockLines[0];
        if (first !== undefined && outcomes.get(first)!.status === 'not reached') {
          const o = outcomes.get(first)!;
          o.status = 'failed';
          o.output = `the session did not start (exit ${code}):\n${preamble}`;
        }
      }
      resolve(opts.blockLines.map((l) => outcomes.get(l)!));
    });
  });
}

/**
 * A user's shell, not this test's: no variables of the runner (NODE_TEST_CONTEXT, npm_*, a
 * REDIS_URL of CI), no node_modules/.bin on PATH (npm run puts it there; a user's shell has not).
 */
function sessionEnv(extra: Record<string, string> = {}): Record<string, string> {
  const path = (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin')
    .split(':')
    .filter((p) => p !== '' && !p.includes('node_modules'));
  for (const sbin of ['/usr/local/sbin', '/usr/sbin', '/sbin']) if (!path.includes(sbin)) path.push(sbin);
  return { PATH: path.join(':'), HOME: process.env.HOME ?? '/root', LANG: 'C.UTF-8', ...extra };
}

/** A failed block as the test reports it: the page, the block's line, the command and its output. */
export function describeFailure(page: string, o: BlockOutcome, scenario?: string, tailLines = 60): string {
  const out = o.output.trimEnd().split('\n');
  const shown = out.length > tailLines ? ['...', ...out.slice(-tailLines)] : out;
  const f = o.failure;
  const where = f && (scenario ? `line ${f.line - 1} of the scenario "${scenario}"` : `line ${f.line}`);
  const what =
    o.status === 'timed out'
      ? 'did not finish within its time bound'
      : f
        ? `failed at ${where}: \`${f.command}\` exited ${f.status}`
        : 'failed';
  return `${page}:${o.line}: the block ${what}\n--- its output:\n${shown.join('\n')}`;
}

/**
 * The lines of an `output` block that `output` lacks: each non-blank line of the block, trailing
 * spaces aside, must be a line of the output, in the block's order (other lines may come between;
 * a `...` line stands for what the page leaves out).
 */
export function missingOutput(expected: string, output: string): string[] {
  const got = output.split('\n').map((l) => l.trimEnd());
  let at = 0;
  const missing: string[] = [];
  for (const want of expected.split('\n').map((l) => l.trimEnd())) {
    if (want === '' || want === '...') continue;
    const found = got.indexOf(want, at);
    if (found < 0) missing.push(want);
    else at = found + 1;
  }
  return missing;
}
