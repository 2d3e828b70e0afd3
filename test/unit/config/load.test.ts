import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DEFAULT_CONFIG_FILE, loadConfig, validateConfig } from '../../../src/config/load.js';

function file(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ng-config-'));
  const p = join(dir, 'gateway.yaml');
  writeFileSync(p, text);
  return p;
}

describe('config', () => {
  test('the shipped default loads, with the DESIGN defaults and the tier table', () => {
    const r = loadConfig({ file: DEFAULT_CONFIG_FILE, env: {} });
    assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
    const c = r.config;
    assert.equal(c.server.port, 8080);
    assert.equal(c.admin.port, 8081);
    assert.equal(c.server.bodyLimitBytes, 26_214_400);
    assert.equal(c.upstream.timeoutMs, 30_000);
    assert.equal(c.store.type, 'file');
    assert.equal(c.keys.maxActiveKeys, 2);
    assert.deepEqual(
      c.rateLimit.tiers.map((t) => [t.name, t.windows[0]!.points, t.windows[0]!.duration]),
      [
        ['free', 60, 60],
        ['standard', 600, 60],
        ['enterprise', 6000, 60],
      ],
    );
    assert.ok(Object.isFrozen(c) && Object.isFrozen(c.server) && Object.isFrozen(c.rateLimit.tiers[0]));
  });

  test('environment overrides the file', () => {
    const r = loadConfig({
      file: DEFAULT_CONFIG_FILE,
      env: {
        PORT: '9000',
        ADMIN_PORT: '9001',
        ADMIN_TOKEN: 'a-long-enough-admin-token',
        REDIS_URL: 'redis://10.0.0.1:6380',
        UPSTREAM_URL: 'http://backend:9090',
        UPSTREAM_TIMEOUT_MS: '1234',
        BODY_LIMIT_BYTES: '0',
        LOG_LEVEL: 'debug',
      },
    });
    assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
    const c = r.config;
    assert.equal(c.server.port, 9000);
    assert.equal(c.admin.port, 9001);
    assert.equal(c.admin.token, 'a-long-enough-admin-token');
    assert.equal(c.store.type, 'redis');
    assert.equal(c.store.redis.url, 'redis://10.0.0.1:6380');
    assert.equal(c.routes.find((x) => x.prefix === '/notify/v1')?.target, 'http://backend:9090');
    assert.equal(c.upstream.timeoutMs, 1234);
    assert.equal(c.server.bodyLimitBytes, 0);
    assert.equal(c.log.level, 'debug');
  });

  test('every problem is listed, each with its path (and env variable)', () => {
    const p = file(`
server:
  port: 99999
routes:
  - prefix: notify
    target: ftp://x
rateLimit:
  failurePolicy: maybe
  tiers:
    - { name: free, points: 0, duration: 60 }
    - { name: free, points: 1, duration: 60 }
unknownKey: 1
`);
    const r = loadConfig({ file: p, env: { LOG_LEVEL: 'loud', REDIS_URL: 'http://nope' } });
    assert.equal(r.ok, false);
    const text = r.ok ? '' : r.problems.join('\n');
    for (const needle of [
      'server.port',
      'routes.0.prefix',
      'routes.0.target',
      'rateLimit.failurePolicy',
      'rateLimit.tiers.0.points',
      'log.level (from LOG_LEVEL)',
      'store.redis.url (from REDIS_URL)',
      'unknownKey',
    ]) {
      assert.ok(text.includes(needle), `missing ${needle} in:\n${text}`);
    }
  });

  test('a headers timeout longer than the request timeout is refused (Node would not start), unless the latter is off', () => {
    const bad = loadConfig({
      file: file('server: { headersTimeoutMs: 20000, requestTimeoutMs: 10000 }\n'),
      env: {},
    });
    assert.equal(bad.ok, false);
    assert.match(
      bad.ok ? '' : bad.problems.join('\n'),
      /server\.headersTimeoutMs: must not exceed server\.requestTimeoutMs/,
    );
    const off = loadConfig({
      file: file('server: { headersTimeoutMs: 20000, requestTimeoutMs: 0 }\n'),
      env: {},
    });
    assert.equal(off.ok, true);
    const equal = loadConfig({
      file: file('server: { headersTimeoutMs: 10000, requestTimeoutMs: 10000 }\n'),
      env: {},
    });
    assert.equal(equal.ok, true);
  });

  test('a problem names an environment variable only when that variable was set', () => {
    const p = file('server:\n  port: eighty\nroutes:\n  - { prefix: /notify/v1, target: "ftp://x" }\n');
    const fromFile = loadConfig({ file: p, env: {} });
    const text = fromFile.ok ? '' : fromFile.problems.join('\n');
    assert.match(text, /^server\.port: /m);
    assert.match(text, /^routes\.0\.target: /m);
    assert.ok(!text.includes('(from'), text);
    const empty = loadConfig({ file: p, env: { PORT: '', UPSTREAM_URL: '' } });
    assert.ok(!(empty.ok ? '' : empty.problems.join('\n')).includes('(from'), 'an empty variable is unset');
    const fromEnv = loadConfig({
      file: DEFAULT_CONFIG_FILE,
      env: { PORT: 'eighty', UPSTREAM_URL: 'ftp://y' },
    });
    const envText = fromEnv.ok ? '' : fromEnv.problems.join('\n');
    assert.match(envText, /^server\.port \(from PORT\): /m);
    assert.match(envText, /^routes\.0\.target \(from UPSTREAM_URL\): /m);
    // ADMIN_TOKENS sets a list: each entry's problems name the variable, and the file's do not.
    const tokens = loadConfig({ file: DEFAULT_CONFIG_FILE, env: { ADMIN_TOKENS: 'ops:root:xyz' } });
    const tokensText = tokens.ok ? '' : tokens.problems.join('\n');
    assert.match(tokensText, /^admin\.tokens\.0\.role \(from ADMIN_TOKENS\): /m);
    assert.match(tokensText, /^admin\.tokens\.0\.sha256 \(from ADMIN_TOKENS\): /m);
    const fileTokens = loadConfig({
      file: file('admin:\n  tokens:\n    - { name: ops, role: root, sha256: xyz }\n'),
      env: {},
    });
    const fileTokensText = fileTokens.ok ? '' : fileTokens.problems.join('\n');
    assert.match(fileTokensText, /^admin\.tokens\.0\.role: /m);
    assert.ok(!fileTokensText.includes('(from'), fileTokensText);
  });

  test('UPSTREAM_URL: the default route without routes, the single route, an error with several', () => {
    const none = loadConfig({ file: file('{}\n'), env: { UPSTREAM_URL: 'http://b:1' } });
    assert.ok(none.ok);
    assert.deepEqual(
      none.config.routes.map((r) => [r.prefix, r.target]),
      [['/notify/v1', 'http://b:1']],
    );
    // One route of its own, whatever its prefix: UPSTREAM_URL is its target, no route is added.
    const one = loadConfig({
      file: file('routes:\n  - { prefix: /mail, target: "http://old:1", timeoutMs: 5 }\n'),
      env: { UPSTREAM_URL: 'http://b:1' },
    });
    assert.ok(one.ok, one.ok ? '' : one.problems.join('\n'));
    assert.deepEqual(
      one.config.routes.map((r) => [r.prefix, r.target, r.timeoutMs]),
      [['/mail', 'http://b:1', 5]],
    );
    const several = loadConfig({
      file: file(
        'routes:\n  - { prefix: /notify/v1, target: "http://a:1" }\n  - { prefix: /mail, target: "http://m:1" }\n',
      ),
      env: { UPSTREAM_URL: 'http://b:1' },
    });
    assert.equal(several.ok, false);
    assert.match(
      several.ok ? '' : several.problems.join('\n'),
      /^UPSTREAM_URL: sets the target of the only route, but the config file defines 2 routes/m,
    );
    // Without the variable the same file loads as written.
    assert.ok(loadConfig({ file: several.file, env: {} }).ok);
  });

  test('missing file, bad YAML, duplicate keys and non-mapping are clear errors', () => {
    const missing = loadConfig({ file: '/nonexistent/gateway.yaml', env: {} });
    assert.ok(!missing.ok && missing.problems[0]!.includes('file not found'));
    const bad = loadConfig({ file: file('server: [1, 2\n'), env: {} });
    assert.equal(bad.ok, false);
    const dup = loadConfig({ file: file('server:\n  port: 1\nserver:\n  port: 2\n'), env: {} });
    assert.equal(dup.ok, false);
    const list = loadConfig({ file: file('- 1\n'), env: {} });
    assert.ok(!list.ok && list.problems[0]!.includes('mapping'));
  });

  test('routes[].methods: uppercase methods Node accepts, no duplicates, never TRACE/TRACK/CONNECT', () => {
    const ok = validateConfig({
      routes: [{ prefix: '/a', target: 'http://x', methods: ['GET', 'PROPFIND'] }],
    });
    assert.ok(ok.ok);
    assert.deepEqual(ok.config.routes[0]!.methods, ['GET', 'PROPFIND']);
    const bad = (methods: unknown) => {
      const r = validateConfig({ routes: [{ prefix: '/a', target: 'http://x', methods } as never] });
      assert.equal(r.ok, false, JSON.stringify(methods));
      return r.ok ? '' : r.problems.join('\n');
    };
    assert.match(bad(['get']), /routes\.0\.methods\.0.*uppercase method/);
    assert.match(bad(['GET', 'TRACE']), /routes\.0\.methods\.1.*always refused/);
    assert.match(bad(['CONNECT']), /always refused/);
    assert.match(bad(['FETCH']), /not a method Node\.js accepts/);
    assert.match(bad(['GET', 'GET']), /twice/);
    assert.match(bad([]), /at least one method/);
    assert.match(bad('GET'), /routes\.0\.methods/);
  });

  test('routes[].targets: a pool with its options, target as the one-target form, clear errors', () => {
    const one = validateConfig({ routes: [{ prefix: '/a', target: 'http://x:1' }] });
    assert.ok(one.ok);
    const r = one.config.routes[0]!;
    assert.deepEqual(r.targets, [{ url: 'http://x:1', weight: 1 }]);
    assert.equal(r.balancing, 'round-robin');
    assert.equal(r.whenNoneHealthy, 'panic');
    assert.deepEqual(r.retries, {
      attempts: 2,
      budget: { ratio: 0.2, minPerSecond: 3 },
      idempotentMethods: ['GET', 'HEAD', 'OPTIONS'],
    });
    assert.equal(r.healthCheck, undefined, 'active checks are off unless set');
    const pool = validateConfig({
      routes: [
        {
          prefix: '/a',
          targets: [{ url: 'http://x:1', weight: 3 }, { url: 'http://y:1' }],
          balancing: 'company-hash',
          healthCheck: { path: '/healthz' },
          maxInFlight: { perCompany: 5, perKey: 2 },
          timeouts: { connect: 100, total: 2000 },
        },
      ],
    });
    assert.ok(pool.ok, pool.ok ? '' : pool.problems.join('\n'));
    assert.deepEqual(pool.config.routes[0]!.targets[1], { url: 'http://y:1', weight: 1 });
    assert.equal(pool.config.routes[0]!.healthCheck!.unhealthyThreshold, 3);
    const bad = (route: object) => {
      const v = validateConfig({ routes: [{ prefix: '/a', ...route } as never] });
      assert.equal(v.ok, false, JSON.stringify(route));
      return v.ok ? '' : v.problems.join('\n');
    };
    assert.match(bad({ target: 'http://x', targets: [{ url: 'http://y' }] }), /routes\.0\.targets.*not both/);
    assert.match(bad({}), /routes\.0\.targets.*neither/);
    assert.match(bad({ targets: [] }), /routes\.0\.targets/);
    assert.match(bad({ targets: [{ url: 'ftp://y' }] }), /routes\.0\.targets\.0\.url/);
    assert.match(bad({ target: 'http://x', balancing: 'random' }), /routes\.0\.balancing/);
    assert.match(bad({ target: 'http://x', retries: { idempotentMethods: ['POST'] } }), /not idempotent/);
    assert.match(
      bad({ target: 'http://x', outlier: { baseEjectionMs: 10, maxEjectionMs: 5 } }),
      /maxEjectionMs/,
    );
    assert.match(bad({ target: 'http://x', tagret: 'http://y' }), /tagret/);
  });

  test('cross-field rules: duplicate prefixes, trusted header names, signing secret', () => {
    const r = validateConfig({
      routes: [
        { prefix: '/a', target: 'http://x' },
        { prefix: '/a/', target: 'http://y' },
      ],
      headers: { companyId: 'X-API-Key' },
      signing: { enabled: true },
    });
    assert.equal(r.ok, false);
    const text = r.ok ? '' : r.problems.join('\n');
    assert.match(text, /duplicate route prefix \/a/);
    assert.match(text, /X-API-Key cannot be a trusted header name/);
    assert.match(text, /signing.secret is required/);
  });

  test('signing.secret: 31 characters refused naming the field, 32 accepted (same floor as src/signing.ts)', () => {
    const short = validateConfig({ signing: { enabled: true, secret: 'a'.repeat(31) } });
    assert.equal(short.ok, false);
    assert.match(short.ok ? '' : short.problems.join('\n'), /signing\.secret.*at least 32 characters/);
    // A short secret is refused even while signing is off: it would be refused the day it is enabled.
    assert.equal(validateConfig({ signing: { enabled: false, secret: '' } }).ok, false);
    assert.equal(validateConfig({ signing: { enabled: true, secret: 'a'.repeat(32) } }).ok, true);
  });
});
