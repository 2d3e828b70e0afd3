import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AdminService, CreatedKey } from '../admin/service.js';
import { validateConfig } from '../config/load.js';
import { DEFAULT_TIERS, type ConfigInput } from '../config/schema.js';
import { startGateway, type GatewayHandle } from '../server.js';
import { MemoryKeyStore } from '../store/memory-store.js';
import { createExampleBackend } from './backend.js';

export interface DemoHandle {
  gateway: GatewayHandle;
  backendPort: number;
  /** The text printed for the user (curl commands). */
  instructions: string;
  close(): Promise<void>;
}

/**
 * Runs the example backend and the gateway in front of it on the in-memory store, creates three
 * demo companies with keys, and returns ready-to-paste curl commands showing 200, 401, 403 and 429.
 */
export async function runDemo(opts: {
  port: number;
  adminPort: number;
  /** The company dashboard's port (8082 by default in the CLI). */
  dashboardPort?: number;
  /** Where the dashboard's mails go (the `log` transport): the terminal. */
  print?: (text: string) => void;
  host?: string;
  logLevel?: string;
}): Promise<DemoHandle> {
  const backend = createServer(createExampleBackend());
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  const backendPort = (backend.address() as AddressInfo).port;

  const input: ConfigInput = {
    server: { port: opts.port, host: opts.host ?? '127.0.0.1' },
    admin: { port: opts.adminPort, host: '127.0.0.1', console: true },
    // Mails (sign-in codes) are printed here: the log transport, loopback only.
    dashboard: {
      enabled: true,
      host: '127.0.0.1',
      port: opts.dashboardPort ?? 8082,
      mail: { transport: 'log' },
    },
    routes: [{ prefix: '/notify/v1', target: `http://127.0.0.1:${backendPort}` }],
    store: { type: 'memory' },
    // A tiny tier so the 429 shows after three requests.
    rateLimit: { tiers: [...DEFAULT_TIERS, { name: 'demo', points: 3, duration: 60 }] },
    log: { level: (opts.logLevel ?? 'warn') as 'warn' },
  };
  const cfg = validateConfig(input);
  if (!cfg.ok) throw new Error(cfg.problems.join('\n'));
  // Quiet while the demo sets itself up (the invitation mail), then every mail is printed.
  let quiet = true;
  const mailPrint = (text: string) => void (quiet || (opts.print ?? ((t) => process.stdout.write(t)))(text));
  const gateway = await startGateway(cfg.config, { store: new MemoryKeyStore(), mailPrint });
  const keys = await createDemoKeys(gateway.service);
  const invited = await gateway.dashboard!.operatorInvite(
    'acme',
    { email: DEMO_MEMBER, role: 'owner' },
    'demo',
  );
  if (!invited.ok) throw new Error(invited.details);
  quiet = false;
  const base = `http://${input.server!.host}:${gateway.port}/notify/v1`;
  const dashboardUrl = `http://127.0.0.1:${gateway.dashboardPort}/`;
  const instructions = demoInstructions(base, gateway.adminPort, backendPort, keys, dashboardUrl);

  return {
    gateway,
    backendPort,
    instructions,
    async close() {
      await gateway.close();
      await new Promise<void>((r) => backend.close(() => r()));
    },
  };
}

/** The demo's dashboard member: an owner of `acme`. */
export const DEMO_MEMBER = 'owner@acme.example';

interface DemoKeys {
  acme: CreatedKey;
  suspended: CreatedKey;
  burst: CreatedKey;
}

/** The three demo companies (active, suspended, a 3-a-minute tier), each with a key. */
async function createDemoKeys(svc: AdminService): Promise<DemoKeys> {
  const mustKey = async (company: {
    id: string;
    name: string;
    tier: string;
    status: string;
  }): Promise<CreatedKey> => {
    const c = await svc.createCompany({ ...company, apiAccess: true }, 'demo');
    if (!c.ok) throw new Error(c.details);
    const k = await svc.createKey(company.id, { label: 'demo', environment: 'test' }, 'demo');
    if (!k.ok) throw new Error(k.details);
    return k.value;
  };
  const acme = await mustKey({ id: 'acme', name: 'Acme Corp', tier: 'standard', status: 'active' });
  const suspended = await mustKey({
    id: 'suspended-co',
    name: 'Suspended Co',
    tier: 'free',
    status: 'suspended',
  });
  const burst = await mustKey({
    id: 'burst-co',
    name: 'Burst Co (3 requests a minute)',
    tier: 'demo',
    status: 'active',
  });

  return { acme, suspended, burst };
}

/** The text printed for the user: where things run, the keys, and a curl command per answer. */
function demoInstructions(
  base: string,
  adminPort: number | null,
  backendPort: number,
  keys: DemoKeys,
  dashboardUrl: string,
): string {
  const { acme, suspended, burst } = keys;
  const otp = `-H 'Content-Type: application/json' -d '{"identifier":"user@example.com","identifier_type":"email"}'`;
  return [
    '',
    'notify-gateway demo is running (in-memory store; data is gone when you stop it).',
    `  gateway   ${base}  ->  example backend on 127.0.0.1:${backendPort}`,
    `  admin API http://127.0.0.1:${adminPort}/admin/v1 (loopback, no token in demo)`,
    `  console   http://127.0.0.1:${adminPort}/console/  (open it in a browser: companies, keys, audit)`,
    `  dashboard ${dashboardUrl}  (the company dashboard: sign in as ${DEMO_MEMBER})`,
    '',
    `Company dashboard: open ${dashboardUrl}, sign in as ${DEMO_MEMBER}; the 6-digit code is`,
    'printed in this terminal (mail transport: log, demo only). Then Settings → API Keys → Generate.',
    '',
    'Demo keys (shown once, like real keys):',
    `  acme          ${acme.key}`,
    `  suspended-co  ${suspended.key}`,
    `  burst-co      ${burst.key}`,
    '',
    '# 201: create an OTP with a valid key',
    `curl -si -X POST ${base}/otps -H 'X-API-Key: ${acme.key}' ${otp}`,
    '',
    '# 200: health through the gateway',
    `curl -si ${base}/health -H 'X-API-Key: ${acme.key}'`,
    '',
    '# 401: no key',
    `curl -si ${base}/health`,
    '',
    '# 401: invalid key',
    `curl -si ${base}/health -H 'X-API-Key: nk_test_not-a-real-key'`,
    '',
    '# 401: key in the URL is refused (and the key is flagged as exposed)',
    `curl -si '${base}/health?api_key=${acme.key}'`,
    '',
    '# 403: the company is suspended',
    `curl -si ${base}/health -H 'X-API-Key: ${suspended.key}'`,
    '',
    '# 429: the "demo" tier allows 3 requests a minute; the 4th and 5th are refused',
    `for i in 1 2 3 4 5; do curl -s -o /dev/null -w '%{http_code}\\n' ${base}/health -H 'X-API-Key: ${burst.key}'; done`,
    '',
    '# Keys of a company (no key, no hash in the list)',
    `curl -s http://127.0.0.1:${adminPort}/admin/v1/companies/acme/keys`,
    '',
    'Press Ctrl+C to stop.',
    '',
  ].join('\n');
}
