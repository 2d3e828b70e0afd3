import type { Command } from 'commander';
import type { GatewayConfig } from '../config/schema.js';
import { redactConfig } from '../redact.js';
import type { CliContext } from './io.js';
import { jsonText } from './output.js';

/** `config check [--json]`: what `serve` would run with, or every problem (exit 2). */
export function registerConfigCommands(program: Command, ctx: CliContext): void {
  program
    .command('config')
    .description('configuration tools')
    .command('check')
    .description('validate the configuration (file + environment); lists every problem')
    .option('--json', 'print the effective configuration as JSON (secrets hidden)')
    .action((o: { json?: boolean }) => checkConfig(ctx, !!o.json));
}

async function checkConfig(ctx: CliContext, json: boolean): Promise<void> {
  const { checkTracingSettings, invalidConfig, loadStartableConfig } = await import('./load-config.js');
  const r = await loadStartableConfig(ctx);
  checkTracingSettings(ctx);
  const missing = await storedMissingTiers(ctx, r.config);
  if (missing.length) invalidConfig(r.file, missing);
  // Printed from a redacted copy only: no branch below can reach a secret (INVARIANTS #12).
  const shown = redactConfig(r.config);
  ctx.io.stdout(json ? jsonText(shown) : describeConfig(r.file, shown));
}

/**
 * With the Redis store, the companies whose tier the config lacks (every one, by tier), as
 * problems of `rateLimit.tiers`; none when Redis cannot be reached (said on stderr: the check is
 * best effort, `serve` logs them too). The file store's own parser already refuses them.
 */
async function storedMissingTiers(ctx: CliContext, config: Readonly<GatewayConfig>): Promise<string[]> {
  if (config.store.type !== 'redis') return [];
  const { findMissingTiers, missingTierAdvice } = await import('../admin/missing-tiers.js');
  const { openStore } = await import('./store-session.js');
  const tiers = new Set(config.rateLimit.tiers.map((t) => t.name));
  let store: Awaited<ReturnType<typeof openStore>> | undefined;
  try {
    store = await openStore(config);
    const missing = await findMissingTiers(store, tiers);
    return missing.map(
      (m) =>
        `rateLimit.tiers: has no tier "${m.tier}", which companies use: ${m.companies.join(', ')}; ${missingTierAdvice(tiers)}`,
    );
  } catch {
    ctx.io.stderr("note: Redis could not be read; the companies' tiers were not checked\n");
    return [];
  } finally {
    await store?.close();
  }
}

/**
 * The text form of `config check`: what runs where, from an already redacted config.
 *
 * @example
 * describeConfig('/etc/gw.yaml', redactConfig(config));
 * // 'configuration OK (/etc/gw.yaml)\n  store: file\n  routes: /notify/v1 -> http://...\n  tiers: free 60/60s, ...\n'
 */
export function describeConfig(file: string, c: Readonly<GatewayConfig>): string {
  const lines = [
    `configuration OK (${file})`,
    `  store: ${c.store.type}${c.store.type === 'redis' ? ` (${c.store.redis.url})` : ''}`,
    ...(c.rateLimit.redisUrl ? [`  rate-limit redis: ${c.rateLimit.redisUrl}`] : []),
    `  routes: ${c.routes.map((x) => `${x.prefix} -> ${x.targets.map((t) => t.url).join(' ')}`).join(', ')}`,
    `  tiers: ${c.rateLimit.tiers.map((t) => `${t.name} ${t.windows.map((w) => `${w.points}/${w.duration}s`).join('+')}`).join(', ')}`,
  ];
  return lines.join('\n') + '\n';
}
