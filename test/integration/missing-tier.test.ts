import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_TIERS } from '../../src/config/schema.js';
import { createCompanyAndKey } from '../helpers/admin.js';
import { runCli } from '../helpers/cli-run.js';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/http.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// A tier removed from the config while companies still use it (issue: config check said OK,
// serve started, every request of those companies got 500 "Unexpected error", logged at warn).
describe('a tier the config no longer has', () => {
  let redis: TestRedis;
  let upstream: RecordingUpstream;
  let gold: { key: string };
  let plain: { key: string };
  let t: TestGateway;
  const dir = mkdtempSync(join(tmpdir(), 'ng-tier-'));
  const withGold = [...DEFAULT_TIERS, { name: 'gold', points: 100, duration: 60 }];
  const config = (tiers: typeof withGold) => ({
    store: { type: 'redis' as const, redis: { url: redis.url } },
    routes: [{ prefix: '/notify/v1', target: upstream.url }],
    rateLimit: { tiers },
  });

  before(async () => {
    redis = await startRedis();
    upstream = await startUpstream();
    const first = await startTestGateway(config(withGold));
    gold = await createCompanyAndKey(first.gw.service, 'acme', { tier: 'gold' });
    await createCompanyAndKey(first.gw.service, 'globex', { tier: 'gold' });
    plain = await createCompanyAndKey(first.gw.service, 'initech', { tier: 'free' });
    await first.close();
    // The operator removes `gold` and restarts.
    t = await startTestGateway(config(DEFAULT_TIERS));
  });
  after(async () => {
    await t?.close();
    await upstream.close();
    await redis.stop();
  });

  test('serve starts, and names every company on the missing tier at error, with what to do', async () => {
    await eventually(async () => t.logs().some((l) => l.tier === 'gold' && l.level === 'error'), 3000);
    const line = t.logs().find((l) => l.tier === 'gold' && l.level === 'error')!;
    assert.deepEqual([line.companies, line.count], [['acme', 'globex'], 2]);
    assert.match(String(line.msg), /2 companies are on tier "gold", which rateLimit.tiers does not have/);
    assert.match(
      String(line.msg),
      /TIER_NOT_CONFIGURED: add the tier back to rateLimit.tiers, or move each company/,
    );
  });

  test('its requests get 503 TIER_NOT_CONFIGURED, never a 500; nothing is forwarded; the log says what to do', async () => {
    for (let i = 0; i < 2; i++) {
      const res = await fetch(`http://127.0.0.1:${t.port}/notify/v1/otps`, {
        headers: { 'X-API-Key': gold.key },
      });
      assert.equal(res.status, 503);
      assert.deepEqual(await res.json(), {
        error: 'Service Unavailable',
        details: "The company's rate-limit tier is not configured on this gateway; the operator must fix it",
      });
    }
    assert.equal(upstream.received.length, 0);
    const errors = t.logs().filter((l) => l.level === 'error' && l.companyId === 'acme');
    assert.equal(errors.length, 1, 'once per cached company record, not per request');
    assert.match(
      String(errors[0]!.msg),
      /company acme is on tier "gold", which rateLimit.tiers does not have/,
    );
    const access = t.logs().filter((l) => l.msg === 'request' && l.status === 503);
    assert.ok(
      access.every((l) => l.error === 'TIER_NOT_CONFIGURED'),
      JSON.stringify(access),
    );
    assert.ok(!t.logText().includes(gold.key));
    // Other companies are served as before.
    const ok = await fetch(`http://127.0.0.1:${t.port}/notify/v1/otps`, {
      headers: { 'X-API-Key': plain.key },
    });
    assert.equal(ok.status, 200);
    await ok.arrayBuffer();
  });

  test('moving the company to a configured tier fixes it at once', async () => {
    const moved = await t.gw.service.updateCompany('globex', { tier: 'standard' });
    assert.ok(moved.ok);
    const left = await t.gw.service.updateCompany('acme', { tier: 'gold' });
    assert.equal(left.ok ? 0 : left.status, 400, 'and the admin API still refuses the missing tier');
    const res = await fetch(`http://127.0.0.1:${t.port}/notify/v1/otps`, {
      headers: { 'X-API-Key': gold.key },
    });
    assert.equal(res.status, 503);
  });

  test('config check reads the store and exits 2 naming every company on a missing tier', async () => {
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, `routes:\n  - prefix: /notify/v1\n    target: ${upstream.url}\n`);
    const r = await runCli(['config', 'check', '--config', file], { REDIS_URL: redis.url, ADMIN_PORT: '0' });
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /rateLimit.tiers: has no tier "gold", which companies use: acme; /);
    // With the tier back, it is OK again.
    writeFileSync(
      file,
      `routes:\n  - prefix: /notify/v1\n    target: ${upstream.url}\nrateLimit:\n  tiers:\n` +
        DEFAULT_TIERS.map(
          (x) => `    - { name: ${x.name}, points: ${x.points}, duration: ${x.duration} }\n`,
        ).join('') +
        '    - { name: gold, points: 1, duration: 1 }\n',
    );
    const fine = await runCli(['config', 'check', '--config', file], {
      REDIS_URL: redis.url,
      ADMIN_PORT: '0',
    });
    assert.equal(fine.code, 0, fine.stderr);
    // Redis gone: the check says it could not read the store, and checks the rest.
    const down = await runCli(['config', 'check', '--config', file], {
      REDIS_URL: 'redis://127.0.0.1:1',
      ADMIN_PORT: '0',
    });
    assert.equal(down.code, 0, down.stderr);
    assert.match(down.stderr, /Redis could not be read; the companies' tiers were not checked/);
  });
});
