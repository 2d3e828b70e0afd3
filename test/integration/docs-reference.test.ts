import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { ADMIN_OPERATIONS } from '../../src/admin/schemas.js';
import { parser as promqlParser } from '@prometheus-io/lezer-promql';
import { parse as parseYaml } from 'yaml';
import { createEventMetrics } from '../../src/events/metrics.js';
import { createKeyFileMetrics, createMetrics, createUsageMetrics } from '../../src/observability/metrics.js';
import { createUpstreamMetrics } from '../../src/observability/upstream-metrics.js';
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
    createUpstreamMetrics(metrics.registry, () => []);
    const names = (await metrics.registry.getMetricsAsJSON()).map((m) => m.name);
    assert.ok(names.length >= 12, names.join());
    const doc = page('operations.md');
    assert.deepEqual(
      names.filter((n) => !doc.includes(`\`${n}`)),
      [],
    );
  });

  test('docs/operations.md: every alert rule parses as PromQL and names only metrics the gateway registers', async () => {
    const doc = page('operations.md');
    const section = doc.slice(doc.indexOf('### Alerts worth setting'), doc.indexOf('## Traces'));
    const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(block, 'a yaml block of rules in the alerts section');
    const rules = (
      parseYaml(block) as { groups: { rules: { alert: string; expr: string }[] }[] }
    ).groups.flatMap((g) => g.rules);
    const metrics = createMetrics({ processMetrics: true });
    createKeyFileMetrics(metrics.registry);
    createUsageMetrics(metrics.registry);
    createEventMetrics(metrics.registry);
    const registered = new Set((await metrics.registry.getMetricsAsJSON()).map((m) => m.name));
    const problems: string[] = [];
    for (const { alert, expr } of rules) {
      for (const p of findPromqlProblems(expr, registered)) problems.push(`${alert}: ${p}`);
      // Each alert of the rules is a row of the table above it, and the reverse.
      if (!section.includes(`| \`${alert}\``)) problems.push(`${alert}: no row in the table`);
    }
    const rows = [...section.matchAll(/^\| `(Gateway\w+)`/gm)].map((m) => m[1]!);
    for (const r of rows) if (!rules.some((x) => x.alert === r)) problems.push(`${r}: a row without a rule`);
    assert.ok(rules.length >= 10, `${rules.length} rules`);
    assert.deepEqual(problems, []);
  });

  test('the PromQL check finds what Prometheus would refuse', () => {
    const known = new Set(['gateway_requests_total']);
    assert.deepEqual(findPromqlProblems('sum(rate(gateway_requests_total[5m])) > 0', known), []);
    // The table's old spelling: a pipe escaped for markdown is an unknown escape in a PromQL string.
    assert.equal(
      findPromqlProblems('rate(gateway_requests_total{status=~"502\\|504"}[5m])', known).length,
      1,
    );
    assert.match(
      findPromqlProblems('rate(gateway_requests_total[5m]) > 0, or', known).join(),
      /^syntax error/,
    );
    assert.deepEqual(findPromqlProblems('rate(gateway_process_cpu_seconds_total[5m])', known), [
      'gateway_process_cpu_seconds_total is not a registered metric',
    ]);
  });
});

/**
 * What is wrong with a PromQL expression: a syntax error (the Prometheus project's own grammar,
 * @prometheus-io/lezer-promql), a string with an escape Prometheus refuses (it unquotes strings as
 * Go does: `\\|` is an error), or a metric (histogram series by their base name) not in `known`.
 */
function findPromqlProblems(expr: string, known: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  promqlParser.parse(expr).iterate({
    enter: (n) => {
      const text = expr.slice(n.from, n.to);
      if (n.type.isError)
        problems.push(`syntax error at ${n.from}: ${JSON.stringify(expr.slice(n.from, n.from + 20))}`);
      if (
        n.name === 'StringLiteral' &&
        /\\(?![abfnrtv\\'"]|x[0-9a-fA-F]{2}|[0-7]{3}|u[0-9a-fA-F]{4})/.test(text)
      )
        problems.push(`string ${text}: an escape Prometheus refuses`);
      if (n.name === 'Identifier' && n.node.parent?.name === 'VectorSelector') {
        const base = text.replace(/_(bucket|count|sum)$/, '');
        if (!known.has(text) && !known.has(base)) problems.push(`${text} is not a registered metric`);
      }
    },
  });
  return problems;
}
