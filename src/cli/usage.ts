import type { Command } from 'commander';
import { EXIT_USAGE, fail, type CliContext } from './io.js';
import { table } from './output.js';
import { adminApiTarget, manage, type ApiSession } from './session.js';

interface UsageOptions {
  from?: string;
  to?: string;
  granularity: string;
  json?: boolean;
}

/** `usage COMPANY [--from --to --granularity]`: requests per company and hour or day. */
export function registerUsageCommand(program: Command, ctx: CliContext): void {
  program
    .command('usage <companyId>')
    .description(
      'requests of a company per hour or day (allowed, rate-limited, scope-denied, upstream classes)',
    )
    .option(
      '--from <time>',
      'UTC YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DD (default: 24 hours / 7 days before --to)',
    )
    .option('--to <time>', 'UTC YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DD (default: now)')
    .option('--granularity <hour|day>', 'bucket size', 'hour')
    .option('--json')
    .action((companyId: string, o: UsageOptions) => showUsage(ctx, companyId, o));
}

/**
 * Usage is read from the admin API when one is named (`--admin-url`), else from Redis (the
 * store's, or `rateLimit.redisUrl`); without Redis the counts live in each gateway's memory, and
 * only its admin API can tell (exit 2, naming the route).
 */
async function showUsage(ctx: CliContext, companyId: string, o: UsageOptions): Promise<void> {
  if (adminApiTarget(ctx)) {
    const { USAGE_FIELDS } = await import('../usage/counts.js');
    const query = {
      granularity: o.granularity,
      ...(o.from !== undefined ? { from: o.from } : {}),
      ...(o.to !== undefined ? { to: o.to } : {}),
    };
    return manage(ctx, (s) => (s as ApiSession).usage.readUsage(companyId, query), {
      json: !!o.json,
      text: (r) => table(r.buckets, ['start', ...USAGE_FIELDS]),
    });
  }
  const [{ loadConfigOrFail }, { parseUsageRange, readUsage }, { USAGE_FIELDS }] = await Promise.all([
    import('./load-config.js'),
    import('../usage/query.js'),
    import('../usage/counts.js'),
  ]);
  const config = loadConfigOrFail(ctx);
  const range = parseUsageRange(o, Date.now());
  if (!range.ok) fail(range.details.replace(/^(\w+):/, '--$1:'), EXIT_USAGE);
  const url = config.store.type === 'redis' ? config.store.redis.url : config.rateLimit.redisUrl;
  if (!url)
    fail(
      `with the ${config.store.type} store and no rateLimit.redisUrl, usage is counted in each gateway's memory: read it with GET /admin/v1/companies/${companyId}/usage`,
      EXIT_USAGE,
    );
  const [{ createRedisClient }, { RedisUsageStore }] = await Promise.all([
    import('../redis/connection.js'),
    import('../usage/redis-usage-store.js'),
  ]);
  const client = createRedisClient({ ...config.store.redis, url }, 'notify-gateway-cli');
  client.on('error', () => undefined);
  const { retentionDays } = config.usage;
  const reader = new RedisUsageStore(client, config.store.redis.keyPrefix, retentionDays);
  try {
    await manage(
      ctx,
      async (s) => {
        const company = await s.companies.getCompany(companyId);
        if (!company.ok) return company;
        const value = await readUsage(reader, companyId, range.range, { now: Date.now(), retentionDays });
        return { ok: true as const, value };
      },
      { json: !!o.json, text: (r) => table(r.buckets, ['start', ...USAGE_FIELDS]) },
    );
  } finally {
    client.disconnect();
  }
}
