import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfig } from '../../../src/config/load.js';
import { findStartupProblems } from '../../../src/config/preflight.js';

const isLoopback = (h: string) => h === '127.0.0.1' || h === 'localhost' || h === '::1';

function configIn(dir: string, yaml: string, env: Record<string, string> = {}) {
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, yaml);
  const r = loadConfig({ file, env });
  assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
  return { config: r.config, file };
}

describe('findStartupProblems', () => {
  test('the dashboard: not with the file store, not plain HTTP or the log mail transport off loopback', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ng-pre-'));
    writeFileSync(join(dir, 'keys.yaml'), 'companies: []\n');
    const { config, file } = configIn(
      dir,
      'dashboard: { enabled: true, host: 0.0.0.0, mail: { transport: log } }\n',
    );
    const text = findStartupProblems(config, { file, isLoopback }).join('\n');
    assert.match(
      text,
      /^dashboard\.enabled: the company dashboard needs the redis store .*file store is read-only/m,
    );
    assert.match(text, /^dashboard\.publicOrigin: an https:\/\/ origin is required/m);
    assert.match(text, /^dashboard\.mail\.transport: log prints sign-in codes and is for the demo only/m);
    const demo = configIn(
      dir,
      'store: { type: memory }\ndashboard: { enabled: true, mail: { transport: log } }\n',
      { DASHBOARD_PORT: '0' },
    );
    assert.equal(demo.config.dashboard.port, 0);
    assert.deepEqual(findStartupProblems(demo.config, { file: demo.file, isLoopback }), []);
    const r = loadConfig({ file: demo.file, env: {} });
    assert.ok(r.ok);
    writeFileSync(join(dir, 'nomail.yaml'), 'dashboard: { enabled: true }\n');
    const smtpMissing = loadConfig({ file: join(dir, 'nomail.yaml') });
    assert.ok(!smtpMissing.ok && smtpMissing.problems.some((p) => p.includes('dashboard.mail.url')));
  });

  test('a startable config has no problem', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ng-pre-'));
    writeFileSync(join(dir, 'keys.yaml'), 'companies: []\n');
    const { config, file } = configIn(dir, '{}\n');
    assert.deepEqual(findStartupProblems(config, { file, isLoopback }), []);
  });

  test('every problem at once, each naming its config key', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ng-pre-'));
    mkdirSync(join(dir, 'certs'));
    writeFileSync(join(dir, 'certs', 'key.pem'), 'x');
    chmodSync(join(dir, 'certs', 'key.pem'), 0o000);
    const { config, file } = configIn(
      dir,
      'admin: { host: 0.0.0.0 }\nserver: { tls: { certFile: certs/cert.pem, keyFile: certs/key.pem } }\n',
    );
    const problems = findStartupProblems(config, { file, isLoopback });
    const text = problems.join('\n');
    assert.match(text, /^admin\.token: required because admin\.host 0\.0\.0\.0 is not loopback/m);
    // The default key file, beside the custom config: the problem says where it was looked for and why.
    assert.ok(text.includes(`store.file.path: ${join(dir, 'keys.yaml')} does not exist`), text);
    assert.match(text, /defaults to keys\.yaml in the config file's folder/);
    assert.ok(text.includes(`server.tls.certFile: ${join(dir, 'certs', 'cert.pem')} does not exist`), text);
    if (process.getuid?.() !== 0) assert.match(text, /server\.tls\.keyFile: .*permission denied/);
    assert.ok(!/ENOENT/.test(text), 'no bare ENOENT');
  });

  test('a token, a loopback admin address or a disabled admin API need no token; own store skips the key file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ng-pre-'));
    const withToken = configIn(dir, 'admin: { host: 0.0.0.0 }\n', { ADMIN_TOKEN: 'a-long-enough-token' });
    assert.deepEqual(findStartupProblems(withToken.config, { isLoopback, checkKeyFile: false }), []);
    const off = configIn(dir, 'admin: { host: 0.0.0.0, enabled: false }\n');
    assert.deepEqual(findStartupProblems(off.config, { isLoopback, checkKeyFile: false }), []);
    // An explicitly set key file elsewhere: no hint about the default location.
    const other = configIn(dir, 'store: { file: { path: /nonexistent/k.yaml } }\n');
    const [p] = findStartupProblems(other.config, { file: other.file, isLoopback });
    assert.equal(p, 'store.file.path: /nonexistent/k.yaml does not exist');
    const dirAsFile = configIn(dir, `store: { file: { path: ${dir} } }\n`);
    assert.match(findStartupProblems(dirAsFile.config, { isLoopback })[0]!, /is not a file/);
  });
});
