import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { ApplyFailure } from '../admin/apply.js';
import { EXIT_USAGE, fail, type CliContext } from './io.js';
import { manage } from './session.js';

interface ApplyOptions {
  file: string;
  dryRun?: boolean;
  prune?: boolean;
  json?: boolean;
}

/** `apply -f FILE [--dry-run] [--prune]` and `export [-o FILE]`: the Redis store and a key file. */
export function registerApplyCommands(program: Command, ctx: CliContext): void {
  program
    .command('apply')
    .description('make the Redis store match a key file (companies, keys by hash); prints the diff')
    .requiredOption('-f, --file <file>', 'key file (the file store format)')
    .option('--dry-run', 'print the diff, change nothing')
    .option('--prune', 'also delete what the file does not hold: revoke keys, suspend companies')
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
 * `--dry-run`) makes them. Exit 2 for an unusable file or store type, exit 1 listing the changes
 * that failed.
 */
async function applyFile(ctx: CliContext, o: ApplyOptions): Promise<void> {
  const [{ loadConfigOrFail }, { applyKeyFile, formatPlan, planView }] = await Promise.all([
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
  await manage(
    ctx,
    async (s) => {
      const r = await applyKeyFile(text, {
        store: s.store,
        tiers: new Set(config.rateLimit.tiers.map((t) => t.name)),
        routes: config.routes,
        maxActiveKeys: config.keys.maxActiveKeys,
        actor: s.actor,
        audit: (e) => s.audit.audit(e),
        prune: !!o.prune,
        dryRun,
      });
      if (!r.ok) fail(`${o.file} is invalid:\n  - ${r.problems.join('\n  - ')}`, EXIT_USAGE);
      return { ok: true as const, value: r };
    },
    {
      json: !!o.json,
      text: (r) => formatPlan(r.plan, dryRun),
      toJson: (r) => ({ ...planView(r.plan), dryRun, failures: r.failures.map(failureText) }),
      after: (r) => {
        if (r.failures.length)
          fail(`${r.failures.length} change(s) failed:\n  - ${r.failures.map(failureText).join('\n  - ')}`);
      },
    },
  );
}

/** The store as a key file on stdout, or written atomically (a temporary file, then a rename), mode 0600. */
async function exportFile(ctx: CliContext, output: string | undefined): Promise<void> {
  const { exportState, readStoreState } = await import('../admin/apply.js');
  await manage(ctx, async (s) => ({ ok: true as const, value: exportState(await readStoreState(s.store)) }), {
    json: false,
    text: (yaml) => {
      if (!output) return yaml;
      writeFileSync(`${output}.tmp`, yaml, { mode: 0o600 });
      renameSync(`${output}.tmp`, output);
      return `wrote ${output}\n`;
    },
  });
}

/** One failed change of `apply`: `create key k1: <reason>`. */
export function failureText(f: ApplyFailure): string {
  return `${f.change.op} ${f.change.kind} ${f.change.id}: ${f.reason}`;
}
