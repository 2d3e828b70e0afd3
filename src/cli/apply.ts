import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { ApplyFailure, ApplyPlan, Change } from '../admin/apply.js';
import { EXIT_FAIL, EXIT_USAGE, fail, type CliContext, type CliIo } from './io.js';
import { manageStore, refuseAdminApi } from './session.js';

interface ApplyOptions {
  file: string;
  dryRun?: boolean;
  prune?: boolean;
  pruneRevoke?: boolean;
  yes?: boolean;
  json?: boolean;
}

/** `apply -f FILE [--dry-run] [--prune] [--prune-revoke] [--yes]` and `export [-o FILE]`: the Redis store and a key file. */
export function registerApplyCommands(program: Command, ctx: CliContext): void {
  program
    .command('apply')
    .description('make the Redis store match a key file (companies, keys by hash); prints the diff')
    .requiredOption('-f, --file <file>', 'key file (the file store format)')
    .option('--dry-run', 'print the plan, change nothing')
    .option(
      '--prune',
      'also handle what the file leaves out: suspend companies, disable keys (both undone by declaring them again)',
    )
    .option('--prune-revoke', 'like --prune, but revoke the keys the file leaves out (final)')
    .option('-y, --yes', 'make the changes of --prune without asking')
    .option('--json')
    .action((o: ApplyOptions) => applyFile(ctx, o));
  program
    .command('export')
    .description('write the store as a key file (hashes only, no secrets)')
    .option('-o, --output <file>', 'write here (atomically) instead of stdout')
    .action((o: { output?: string }) => exportFile(ctx, o.output));
}

/**
 * Plans the changes that make the store hold what the file says, prints them, and (without
 * `--dry-run`) makes them. A plan that suspends, disables or revokes anything (`--prune`) runs
 * only with `--yes` or a "yes" typed at a terminal; otherwise exit 2, nothing changed. Exit 2 for
 * an unusable file or store type, exit 1 listing the changes that failed, or when the store
 * changed while the question was asked.
 */
async function applyFile(ctx: CliContext, o: ApplyOptions): Promise<void> {
  refuseAdminApi(ctx);
  const [{ loadConfigOrFail }, { applyKeyFile, formatPlan, isPruneChange, planView }] = await Promise.all([
    import('./load-config.js'),
    import('../admin/apply.js'),
  ]);
  const config = loadConfigOrFail(ctx);
  if (config.store.type !== 'redis')
    fail('apply needs the redis store (REDIS_URL); the file store reads its key file by itself', EXIT_USAGE);
  let text: string;
  try {
    text = readFileSync(o.file, 'utf8');
  } catch (err) {
    fail(`cannot read ${o.file}: ${(err as Error).message}`, EXIT_USAGE);
  }
  const dryRun = !!o.dryRun;
  const prune = o.pruneRevoke ? 'revoke' : o.prune ? 'disable' : 'off';
  let asked = false;
  await manageStore(
    ctx,
    async (s) => {
      const r = await applyKeyFile(text, {
        store: s.store,
        tiers: new Set(config.rateLimit.tiers.map((t) => t.name)),
        routes: config.routes,
        maxActiveKeys: config.keys.maxActiveKeys,
        actor: s.actor,
        audit: (e) => s.service.audit(e),
        prune,
        dryRun,
        confirm: async (plan) => {
          if (o.yes) return true;
          if (!ctx.io.interactive || o.json) return false;
          asked = true;
          // The changes first (stdout), then the question (stderr); the summary comes after the answer.
          const planned = formatPlan(plan, false);
          ctx.io.stdout(planned.slice(0, planned.search(/^Summary/m)));
          return ask(ctx.io, `${pruneWords(plan)}. Make these changes? [y/N] `);
        },
      });
      if (!r.ok) fail(`${o.file} is invalid:\n  - ${r.problems.join('\n  - ')}`, EXIT_USAGE);
      return { ok: true as const, value: r };
    },
    {
      json: !!o.json,
      // Not applied: printed as a dry run (nothing changed), then the reason below. After a
      // question, the changes are on the screen already: only the summary, or nothing on a "no".
      text: (r) => {
        const printed = formatPlan(r.plan, !r.applied);
        if (!asked || r.stale) return printed;
        return r.applied ? printed.slice(printed.search(/^Summary/m)) : '';
      },
      toJson: (r) => ({ ...planView(r.plan), dryRun: !r.applied, failures: r.failures.map(failureText) }),
      after: (r) => {
        if (r.stale)
          fail(
            'the store changed while the question was asked; nothing changed. The plan above is the current one: run apply again to make it',
          );
        if (!r.applied && !dryRun && r.plan.changes.some(isPruneChange)) {
          if (asked) fail('nothing changed', EXIT_FAIL);
          fail(
            `${pruneWords(r.plan)} (the plan above); nothing changed. Run again with --yes to make these changes${
              ctx.io.interactive ? '' : ' (no terminal to ask on)'
            }`,
            EXIT_USAGE,
          );
        }
        if (r.failures.length)
          fail(`${r.failures.length} change(s) failed:\n  - ${r.failures.map(failureText).join('\n  - ')}`);
      },
    },
  );
}

/** What a plan's prune does, in words: `apply would suspend 1 company and disable 2 keys`. */
function pruneWords(plan: ApplyPlan): string {
  const words: [Change['op'], string, string][] = [
    ['suspend', 'company', 'companies'],
    ['disable', 'key', 'keys'],
    ['revoke', 'key (final)', 'keys (final)'],
  ];
  const parts = words.flatMap(([op, one, many]) => {
    const n = plan.changes.filter((c) => c.op === op).length;
    return n ? [`${op} ${n} ${n === 1 ? one : many}`] : [];
  });
  return `apply would ${parts.join(' and ')}`;
}

/** Asks on stderr and reads one line from stdin: true for `y` or `yes` (any case). */
async function ask(io: CliIo, question: string): Promise<boolean> {
  io.stderr(question);
  let line = '';
  for await (const chunk of io.stdin) {
    line += chunk.toString();
    if (line.includes('\n')) break;
  }
  return /^\s*y(es)?\s*$/i.test(line.split('\n')[0] ?? '');
}

/** The store as a key file on stdout, or written atomically (a temporary file, then a rename), mode 0600. */
async function exportFile(ctx: CliContext, output: string | undefined): Promise<void> {
  const { exportState, readStoreState } = await import('../admin/apply.js');
  await manageStore(
    ctx,
    async (s) => ({ ok: true as const, value: exportState(await readStoreState(s.store)) }),
    {
      json: false,
      text: (yaml) => {
        if (!output) return yaml;
        writeFileSync(`${output}.tmp`, yaml, { mode: 0o600 });
        renameSync(`${output}.tmp`, output);
        return `wrote ${output}\n`;
      },
    },
  );
}

/** One failed change of `apply`: `create key k1: <reason>`. */
export function failureText(f: ApplyFailure): string {
  return `${f.change.op} ${f.change.kind} ${f.change.id}: ${f.reason}`;
}
