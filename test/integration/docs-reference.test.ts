import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { ADMIN_OPERATIONS } from '../../src/admin/schemas.js';
import { createKeyFileMetrics, createMetrics, createUsageMetrics } from '../../src/observability/metrics.js';
import { runCli } from '../helpers/cli-run.js';

// The reference pages name every admin route, CLI command and option, and metric the code has:
// a route, command or metric added without a line in docs/ fails here.

const page = (name: string) => readFileSync(new URL(`../../docs/${name}`, import.meta.url), 'utf8');

/** Commands and options of `notify-gateway <args> --help`: `{commands, options}`. */
async function helpOf(args: string[]): Promise<{ commands: string[]; options: string[] }> {
  const run = await runCli([...args, '--help']);
  assert.equal(run.code, 0, run.stderr);
  const section = (title: string) =>
    (run.stdout.split(`${title}:\n`)[1] ?? '')
      .split('\n\n')[0]!
      .split('\n')
      .filter((l) => /^ {2}\S/.test(l));
  return {
    commands: section('Commands')
      .map((l) => l.trim().split(/\s+/)[0]!)
      .filter((c) => c !== 'help'),
    options: section('Options')
      .flatMap((l) => [...l.matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]))
      .filter((o) => o !== '--help'),
  };
}

describe('reference pages', () => {
  test('docs/admin.md lists every admin route with its role', () => {
    const rows = page('admin.md')
      .split('\n')
      .filter((l) => l.startsWith('| `'));
    const missing = ADMIN_OPERATIONS.filter((op) => {
      const route = `${op.method.toUpperCase()} ${op.path}`;
      const row = rows.find((r) => [' ', '`', '?'].some((end) => r.includes(`\`${route}${end}`)));
      const role = op.role === 'none' ? '| none ' : `| \`${op.role}\``;
      return !row?.includes(role);
    }).map((op) => `${op.method.toUpperCase()} ${op.path} (${op.role})`);
    assert.ok(ADMIN_OPERATIONS.length >= 14, 'the operation table shrank: is the import right?');
    assert.deepEqual(missing, []);
  });

  test('docs/admin.md names every CLI command and every option', async () => {
    const doc = page('admin.md');
    const missing: string[] = [];
    const top = await helpOf([]);
    for (const o of top.options) if (!doc.includes(o)) missing.push(o);
    for (const command of top.commands) {
      const sub = await helpOf([command]);
      const leaves = sub.commands.length ? sub.commands.map((s) => [command, s]) : [[command]];
      for (const leaf of leaves) {
        if (!doc.includes(`\`${leaf.join(' ')}`)) missing.push(leaf.join(' '));
        const opts = leaf.length > 1 ? (await helpOf(leaf)).options : sub.options;
        for (const o of opts) if (!doc.includes(o)) missing.push(`${leaf.join(' ')} ${o}`);
      }
    }
    assert.ok(top.commands.length >= 8, `only ${top.commands.length} commands read from --help`);
    assert.deepEqual(missing, []);
  });

  test('docs/operations.md names every metric the gateway registers', async () => {
    const metrics = createMetrics({ processMetrics: false });
    createKeyFileMetrics(metrics.registry);
    createUsageMetrics(metrics.registry);
    const names = (await metrics.registry.getMetricsAsJSON()).map((m) => m.name);
    assert.ok(names.length >= 12, names.join());
    const doc = page('operations.md');
    assert.deepEqual(
      names.filter((n) => !doc.includes(`\`${n}`)),
      [],
    );
  });
});
