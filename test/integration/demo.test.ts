import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { spawnCli, stopCli, type SpawnedCli } from '../helpers/cli-run.js';
import { eventually } from '../helpers/http.js';

const run = promisify(execFile);

describe('notify-gateway demo, as a new user runs it', () => {
  let demo: SpawnedCli;
  let out = '';
  before(async () => {
    // Port 0: the demo prints the ports it got, so the test never collides with a running demo.
    demo = spawnCli(['demo'], { PORT: '0', ADMIN_PORT: '0', DASHBOARD_PORT: '0' });
    const started = async () => demo.output().includes('Press Ctrl+C') || demo.proc.exitCode !== null;
    await eventually(started, 15_000, 50).catch(() => undefined);
    out = demo.output();
    if (!out.includes('Press Ctrl+C')) throw new Error(`demo did not start:\n${out}`);
  });
  after(async () => {
    if (demo) await stopCli(demo.proc, 'SIGINT');
  });

  test('every printed curl command gives the status its comment promises', async () => {
    const lines = out.split('\n');
    const checks: { expect: string; cmd: string }[] = [];
    lines.forEach((l, i) => {
      const m = /^# (\d{3}):/.exec(l);
      if (m) checks.push({ expect: m[1]!, cmd: lines[i + 1]! });
    });
    assert.deepEqual(
      checks.map((c) => c.expect),
      ['201', '200', '401', '401', '401', '403', '429'],
    );
    for (const { expect, cmd } of checks) {
      const { stdout } = await run('bash', ['-c', cmd], { timeout: 10_000 });
      if (cmd.startsWith('for ')) {
        assert.deepEqual(stdout.trim().split('\n'), ['200', '200', '200', '429', '429'], cmd);
      } else {
        assert.match(stdout, new RegExp(`^HTTP/1\\.1 ${expect} `), cmd);
        assert.match(stdout, /\r\n\r\n\{"/, 'a JSON body');
      }
    }
    // The OTP answer carries the company the gateway vouched for and a spec timestamp.
    const otp = await run('bash', ['-c', checks[0]!.cmd.replace('curl -si', 'curl -s')]);
    const body = JSON.parse(otp.stdout) as Record<string, string>;
    assert.equal(body.company_id, 'acme');
    assert.match(body.created_at!, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    // The last printed command lists keys without the key or its hash.
    const listCmd = lines.find((l) => l.includes('/admin/v1/companies/acme/keys'))!;
    const list = await run('bash', ['-c', listCmd]);
    const keys = JSON.parse(list.stdout) as { prefix: string; exposedAt: string | null }[];
    assert.equal(keys.length, 1);
    const acmeKey = /acme\s+(nk_test_\w+)/.exec(out)![1]!;
    assert.ok(!list.stdout.includes(acmeKey));
    assert.ok(keys[0]!.exposedAt, 'the key sent in the URL was flagged as exposed');
  });

  test('the printed console URL serves the console, and its API answers without a token', async () => {
    const url = /console\s+(http:\S+\/console\/)/.exec(out)?.[1];
    assert.ok(url, 'the demo prints the console URL');
    const page = await fetch(url);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script type="module" src="js\/app\.js">/);
    assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const companies = await fetch(new URL('/admin/v1/companies', url));
    assert.equal(companies.status, 200);
    assert.equal(companies.headers.get('cache-control'), 'no-store');
  });

  test('a newcomer signs in to the printed dashboard with the code the demo prints, and generates a key', async () => {
    const url = /dashboard\s+(http:\S+\/)\s/.exec(out)?.[1];
    const member = /sign in as (\S+@\S+?)[;)]/.exec(out)?.[1];
    assert.ok(url && member, 'the demo prints the dashboard URL and a member address');
    const origin = url.replace(/\/$/, '');
    const post = (path: string, body: unknown, cookie = '') =>
      fetch(`${origin}/api/${path}`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Origin: origin,
          'Sec-Fetch-Site': 'same-origin',
          Cookie: cookie,
        },
        body: JSON.stringify(body),
      });
    assert.equal((await post('sign-in/code', { email: member })).status, 202);
    let code = '';
    await eventually(async () => {
      code = /Your sign-in code: (\d{6})/.exec(demo.output())?.[1] ?? '';
      return code !== '';
    }, 5000);
    const signedIn = await post('sign-in', { email: member, code });
    assert.equal(signedIn.status, 200);
    const cookie = signedIn.headers.get('set-cookie')!.split(';')[0]!;
    const key = await post('keys', { label: 'from the dashboard' }, cookie);
    assert.equal(key.status, 201);
    const { key: plaintext } = (await key.json()) as { key: string };
    const base = /gateway\s+(http:\S+)/.exec(out)![1]!;
    const health = await fetch(`${base}/health`, { headers: { 'X-API-Key': plaintext } });
    assert.equal(health.status, 200);
  });

  test('the demo validates OTP requests with clear 400s', async () => {
    const base = /gateway\s+(http:\S+)/.exec(out)![1]!;
    const key = /acme\s+(nk_test_\w+)/.exec(out)![1]!;
    const post = (body: string) =>
      fetch(`${base}/otps`, {
        method: 'POST',
        headers: { 'X-API-Key': key, 'Content-Type': 'application/json' },
        body,
      });
    const cases: [string, string][] = [
      ['{}', 'identifier is required and must be a non-empty string'],
      ['{"identifier":"a@b.co"}', 'identifier_type is required'],
      ['{"identifier":"a@b.co","identifier_type":"sms"}', 'identifier_type must be "email"'],
      [
        '{"identifier":"nope","identifier_type":"email"}',
        'identifier must be an e-mail address when identifier_type is "email"',
      ],
      ['{bad json', 'Body is not valid JSON'],
    ];
    for (const [body, details] of cases) {
      const r = await post(body);
      assert.equal(r.status, 400, body);
      assert.deepEqual(await r.json(), { error: 'Bad Request', details });
    }
  });
});
