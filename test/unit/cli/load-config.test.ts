import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CliExit, type CliContext } from '../../../src/cli/io.js';
import { checkTracingSettings, loadConfigOrFail, loadStartableConfig } from '../../../src/cli/load-config.js';
import { testIo, writeFileStoreSetup } from '../../helpers/cli-run.js';

function ctx(file: string | undefined, env: Record<string, string> = {}): CliContext {
  return { io: testIo(env), configFile: () => file };
}

const usage = (pattern: RegExp) => (e: unknown) =>
  e instanceof CliExit && e.exitCode === 2 && pattern.test(e.message);

test('loadConfigOrFail: --config first, else GATEWAY_CONFIG; the environment applies', () => {
  const a = writeFileStoreSetup('server: { port: 1111 }\n');
  const b = writeFileStoreSetup('server: { port: 2222 }\n');
  assert.equal(loadConfigOrFail(ctx(a.config, { GATEWAY_CONFIG: b.config })).server.port, 1111);
  assert.equal(loadConfigOrFail(ctx(undefined, { GATEWAY_CONFIG: b.config })).server.port, 2222);
  assert.equal(loadConfigOrFail(ctx(a.config, { PORT: '3333' })).server.port, 3333);
});

test('loadConfigOrFail: exit 2, every problem on its own line, the file named', () => {
  const s = writeFileStoreSetup('server: { port: x }\ncache: { maxEntries: -5 }\n');
  assert.throws(
    () => loadConfigOrFail(ctx(s.config)),
    usage(
      new RegExp(`^invalid configuration \\(${s.config}\\):\\n  - server\\.port.*\\n  - cache\\.maxEntries`),
    ),
  );
});

test('loadStartableConfig: the schema, then what keeps it from starting, then the key file content', async () => {
  const ok = writeFileStoreSetup();
  assert.equal((await loadStartableConfig(ctx(ok.config))).file, ok.config);
  const badSchema = writeFileStoreSetup('server: { port: x }\n');
  await assert.rejects(loadStartableConfig(ctx(badSchema.config)), usage(/server\.port/));
  const open = writeFileStoreSetup('admin: { host: 0.0.0.0 }\n');
  await assert.rejects(loadStartableConfig(ctx(open.config)), usage(/admin\.token: required/));
  // A loopback host in any spelling needs no token.
  const loop = writeFileStoreSetup("admin: { host: '::ffff:127.0.0.1' }\n");
  await loadStartableConfig(ctx(loop.config));
  const badFile = writeFileStoreSetup();
  writeFileSync(join(badFile.dir, 'keys.yaml'), 'companies: 3\n');
  await assert.rejects(
    loadStartableConfig(ctx(badFile.config)),
    usage(new RegExp(`  - store\\.file\\.path \\(${join(badFile.dir, 'keys.yaml')}\\): `)),
  );
});

test('checkTracingSettings: nothing to say without OTEL_*; exit 2 for what cannot work', () => {
  checkTracingSettings(ctx(undefined));
  checkTracingSettings(ctx(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }));
  assert.throws(
    () =>
      checkTracingSettings(
        ctx(undefined, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      ),
    usage(/^invalid configuration: OTEL_EXPORTER_OTLP_PROTOCOL=grpc/),
  );
});
