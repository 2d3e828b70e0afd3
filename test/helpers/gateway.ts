import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { validateConfig } from '../../src/config/load.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { createLogger } from '../../src/observability/logger.js';
import { startGateway, type GatewayHandle, type StartOptions } from '../../src/server.js';
import type { RateWindow, Scope } from '../../src/store/types.js';
import { createCompanyAndKey, type TestCompanyOptions } from './admin.js';
import { startUpstream, type RecordingUpstream } from './upstream.js';

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
    // The gateway runs in the test's own process: the test's synchronous work (key generation,
    // module loading) would count as the gateway's event-loop delay. The in-flight bound stays on.
    overload: { maxEventLoopDelayMs: 0 },
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

/** A test gateway in front of a recording upstream, with one company and its key. */
export interface GatewayWithUpstream {
  t: TestGateway;
  upstream: RecordingUpstream;
  /** The key's plaintext. */
  key: string;
  keyId: string;
  /** Closes the gateway, then the upstream. */
  close(): Promise<void>;
}

/** The company `gatewayWithUpstream` creates and what its key may do. */
export interface GatewayWithUpstreamOptions extends TestCompanyOptions {
  /** Id of the company (`acme` by default). */
  company?: string;
  /** The key's own scopes, set with `updateKey` after it is created. */
  keyScopes?: Scope[];
  /** The key's own windows, set with `updateKey` after it is created. */
  keyLimits?: RateWindow[];
}

/**
 * The common integration setup: starts a recording upstream, then a test gateway with a memory
 * store and the route `/notify/v1` to it (`config` is merged over that; a function gets the
 * upstream, for routes to it), then creates a company and a key with `createCompanyAndKey`, and
 * scopes or limits the key when asked. Whatever started is closed again if a step fails.
 *
 * @example
 * let t: TestGateway, upstream: RecordingUpstream, key: string, close: () => Promise<void>;
 * before(async () => {
 *   ({ t, upstream, key, close } = await gatewayWithUpstream(
 *     { rateLimit: { authFailures: { enabled: false } } },
 *     { keyScopes: [{ route: '/notify/v1', methods: ['GET'] }] },
 *   ));
 * });
 * after(() => close?.());
 */
export async function gatewayWithUpstream(
  config: ConfigInput | ((upstream: RecordingUpstream) => ConfigInput) = {},
  opts: GatewayWithUpstreamOptions = {},
): Promise<GatewayWithUpstream> {
  const { company = 'acme', keyScopes, keyLimits, ...companyOptions } = opts;
  const upstream = await startUpstream();
  let t: TestGateway | undefined;
  const close = async () => {
    await t?.close();
    await upstream.close();
  };
  try {
    const base: ConfigInput = {
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
    };
    t = await startTestGateway(merge(base, typeof config === 'function' ? config(upstream) : config));
    const k = await createCompanyAndKey(t.gw.service, company, companyOptions);
    if (keyScopes !== undefined || keyLimits !== undefined) {
      const u = await t.gw.service.updateKey(k.id, {
        ...(keyScopes !== undefined ? { scopes: keyScopes } : {}),
        ...(keyLimits !== undefined ? { limits: keyLimits } : {}),
      });
      assert.ok(u.ok, JSON.stringify(u));
    }
    return { t, upstream, key: k.key, keyId: k.id, close };
  } catch (err) {
    await close();
    throw err;
  }
}
