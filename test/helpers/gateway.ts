import { Writable } from 'node:stream';
import { validateConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { createLogger } from '../../src/observability/logger.js';
import { startGateway, type GatewayHandle, type StartOptions } from '../../src/server.js';

export const ADMIN_TOKEN = 'test-admin-token-0123456789abcdef';

export interface TestGateway {
  gw: GatewayHandle;
  port: number;
  adminPort: number;
  /** Every log line written so far, raw. */
  logText(): string;
  /** Every log line written so far, parsed. */
  logs(): Record<string, unknown>[];
  close(): Promise<void>;
}

/** Deep merge of plain objects (arrays replaced), for config overrides in tests. */
export function merge<T>(base: T, over: unknown): T {
  if (over === undefined) return base;
  if (
    typeof base !== 'object' ||
    base === null ||
    Array.isArray(base) ||
    typeof over !== 'object' ||
    over === null ||
    Array.isArray(over)
  ) {
    return over as T;
  }
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over)) out[k] = merge(out[k], v);
  return out as T;
}

/**
 * Starts a real gateway on 127.0.0.1:0 (admin API too, with a token) and captures its log lines
 * so tests can parse them and assert that no key ever appears.
 */
export async function startTestGateway(input: ConfigInput, opts: StartOptions = {}): Promise<TestGateway> {
  const base: ConfigInput = {
    server: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0, token: ADMIN_TOKEN },
    log: { level: 'info' },
  };
  const cfg = validateConfig(merge(base, input) as ConfigInput);
  if (!cfg.ok) throw new Error(`test config invalid: ${cfg.problems.join('; ')}`);
  const lines: string[] = [];
  let partial = '';
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      const text = partial + chunk.toString('utf8');
      const parts = text.split('\n');
      partial = parts.pop() ?? '';
      lines.push(...parts.filter(Boolean));
      cb();
    },
  });
  const logger = createLogger({ level: cfg.config.log.level, destination: sink });
  const gw = await startGateway(cfg.config, { logger, processMetrics: false, ...opts });
  return {
    gw,
    port: gw.port,
    adminPort: gw.adminPort ?? 0,
    logText: () => lines.join('\n'),
    logs: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
    close: () => gw.close(),
  };
}
