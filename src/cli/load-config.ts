import { readFileSync } from 'node:fs';
import { loadConfig, type LoadResult } from '../config/load.js';
import { findStartupProblems } from '../config/preflight.js';
import type { GatewayConfig } from '../config/schema.js';
import { tracingSettings } from '../observability/tracing.js';
import { EXIT_USAGE, fail, type CliContext } from './io.js';

// The configuration as the commands see it. Imported by the commands when they run (not for
// `--help`): it loads zod and yaml. What only `serve` and `config check` need (the admin router's
// loopback rule, the key file parser) is imported inside `loadStartableConfig`.

/** The config (`--config`, else `GATEWAY_CONFIG`, else the shipped default) and the environment; exit 2 with every problem. */
export function loadConfigOrFail(ctx: CliContext): Readonly<GatewayConfig> {
  const r = loadConfig({ file: ctx.configFile(), env: ctx.io.env });
  if (!r.ok) invalidConfig(r.file, r.problems);
  return r.config;
}

/**
 * `serve` and `config check`: the schema, then what would keep the config from starting (the same
 * `findStartupProblems` that `startGateway` runs) and the key file's content. Exit 2 with every
 * problem, in the same words.
 */
export async function loadStartableConfig(ctx: CliContext): Promise<Extract<LoadResult, { ok: true }>> {
  const r = loadConfig({ file: ctx.configFile(), env: ctx.io.env });
  if (!r.ok) invalidConfig(r.file, r.problems);
  // The admin router carries express: loaded here, not by the management commands.
  const { isLoopbackName } = await import('../admin/router.js');
  const problems = findStartupProblems(r.config, { file: r.file, isLoopback: isLoopbackName });
  if (problems.length) invalidConfig(r.file, problems);
  // The key file opens: its content must parse too, or serve would refuse it after all.
  if (r.config.store.type === 'file') {
    const { parseKeyFile } = await import('../store/file-store.js');
    const path = r.config.store.file.path;
    const parsed = parseKeyFile(
      readFileSync(path, 'utf8'),
      new Set(r.config.rateLimit.tiers.map((t) => t.name)),
      r.config.routes,
    );
    if (!parsed.ok)
      invalidConfig(
        r.file,
        parsed.problems.map((p) => `store.file.path (${path}): ${p}`),
      );
  }
  return r;
}

/** The `OTEL_*` variables make sense (exit 2 otherwise); nothing of OpenTelemetry is loaded here. */
export function checkTracingSettings(ctx: CliContext): void {
  const tracing = tracingSettings(ctx.io.env);
  if (!tracing.ok) fail(`invalid configuration: ${tracing.problem}`, EXIT_USAGE);
}

/** Exit 2 with every problem of the config file, in one message. */
export function invalidConfig(file: string, problems: string[]): never {
  fail(`invalid configuration (${file}):\n  - ${problems.join('\n  - ')}`, EXIT_USAGE);
}
