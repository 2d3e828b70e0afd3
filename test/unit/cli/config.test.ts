import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { describeConfig } from '../../../src/cli/config.js';
import { validateConfig } from '../../../src/config/load.js';
import { redactConfig } from '../../../src/redact.js';
import { runCliHere, writeFileStoreSetup } from '../../helpers/cli-run.js';

describe('describeConfig', () => {
  test('store, routes and tiers; the rate-limit Redis only when set', () => {
    const r = validateConfig({
      store: { type: 'redis', redis: { url: 'redis://db.test:6379' } },
      rateLimit: {
        tiers: [
          {
            name: 'gold',
            windows: [
              { points: 10, duration: 1 },
              { points: 600, duration: 60 },
            ],
          },
        ],
      },
      routes: [{ prefix: '/notify/v1', target: 'http://backend.test:9090' }],
    });
    assert.ok(r.ok);
    assert.equal(
      describeConfig('/etc/gw.yaml', r.config),
      'configuration OK (/etc/gw.yaml)\n' +
        '  store: redis (redis://db.test:6379)\n' +
        '  routes: /notify/v1 -> http://backend.test:9090\n' +
        '  tiers: gold 10/1s+600/60s\n',
    );
    const file = validateConfig({ store: { type: 'file' }, rateLimit: { redisUrl: 'redis://rl.test' } });
    assert.ok(file.ok);
    assert.match(
      describeConfig('x', file.config),
      /^ {2}store: file\n {2}rate-limit redis: redis:\/\/rl\.test\n/m,
    );
  });
});

describe('config check', () => {
  test('a config that can start: exit 0, the summary, secrets never printed', async () => {
    const s = writeFileStoreSetup(
      'admin: { token: CANARY-admin-token-0123456789 }\nrateLimit: { redisUrl: "redis://u:CANARY@rl.test:6379" }\n',
    );
    const text = await runCliHere(['config', 'check', '--config', s.config]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, new RegExp(`^configuration OK \\(${s.config}\\)\\n  store: file\\n`));
    assert.match(text.stdout, /rate-limit redis: redis:\/\/\[credentials\]@rl\.test:6379/);
    const json = await runCliHere(['config', 'check', '--json', '--config', s.config]);
    assert.equal(json.code, 0);
    const shown = JSON.parse(json.stdout) as { admin: { token: string }; store: { type: string } };
    assert.equal(shown.admin.token, '[set]');
    assert.equal(shown.store.type, 'file');
    for (const r of [text, json]) assert.ok(!(r.stdout + r.stderr).includes('CANARY'));
  });

  test('what keeps serve from starting: exit 2 with every problem, nothing on stdout', async () => {
    const s = writeFileStoreSetup(
      'admin: { host: 0.0.0.0 }\nserver: { tls: { certFile: cert.pem, keyFile: key.pem } }\n',
    );
    writeFileSync(join(s.dir, 'keys.yaml'), 'companies:\n  - { id: acme, tier: gold }\n');
    const r = await runCliHere(['config', 'check', '--config', s.config]);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /admin\.token: required because admin\.host 0\.0\.0\.0 is not loopback/);
    assert.match(r.stderr, /server\.tls\.certFile: .*cert\.pem does not exist/);
  });

  test('a key file that does not parse: exit 2, its problems named by store.file.path', async () => {
    const s = writeFileStoreSetup();
    writeFileSync(join(s.dir, 'keys.yaml'), 'companies:\n  - { id: acme, tier: gold }\n');
    const r = await runCliHere(['config', 'check', '--config', s.config]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, new RegExp(`store\\.file\\.path \\(${join(s.dir, 'keys.yaml')}\\): .*gold`));
  });

  test('tracing variables that cannot work: exit 2, naming the variable', async () => {
    const s = writeFileStoreSetup();
    const r = await runCliHere(['config', 'check', '--config', s.config], {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
    });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^notify-gateway: invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL=grpc/);
  });

  test('the summary is printed from the redacted config', () => {
    const r = validateConfig({ routes: [{ prefix: '/n', target: 'http://u:CANARY@b.test' }] });
    assert.ok(r.ok);
    assert.ok(!describeConfig('f', redactConfig(r.config)).includes('CANARY'));
  });
});
