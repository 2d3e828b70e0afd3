import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';
import { AdminService } from '../../src/admin/service.js';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type GatewayHandle } from '../../src/server.js';
import { MemoryKeyStore } from '../../src/store/memory-store.js';
import { adminApi } from '../helpers/admin.js';
import { spawnCli, stopCli, type SpawnedCli } from '../helpers/cli-run.js';
import { launchChromium, screenshotDir, seriousA11yViolations, watchCsp } from '../helpers/browser.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/http.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// The operator console in a real browser (Debian's chromium through playwright-core), against a real
// gateway, admin API and upstream. The tests of a describe run in order and share one page.

const KEY_PATTERN = /^nk_[a-z0-9]+_[A-Za-z0-9]{30,}$/;
const XSS_NAME = '<img src=x onerror=alert(1)>';
const SHOTS = screenshotDir();

let chromium: Awaited<ReturnType<typeof launchChromium>>;
let browser: Browser;
const suiteStart = Date.now();

before(async () => {
  chromium = await launchChromium();
  browser = chromium.browser;
});
after(async () => {
  await chromium?.close();
  console.log(`# browser suite: ${((Date.now() - suiteStart) / 1000).toFixed(1)} s; screenshots in ${SHOTS}`);
});

/** Status of the gateway's answer to a request with `key`. */
async function gatewayStatus(t: TestGateway, key: string): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${t.port}/notify/v1/health`, { headers: { 'X-API-Key': key } });
  await r.arrayBuffer();
  return r.status;
}

/** Screenshot of the screen as it is, and axe-core's serious/critical findings on it (none allowed). */
async function checkScreen(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
  assert.deepEqual(await seriousA11yViolations(page), [], `axe-core on the ${name} screen`);
}

describe('operator console with an admin token', () => {
  let t: TestGateway;
  let upstream: RecordingUpstream;
  let context: BrowserContext;
  let page: Page;
  let csp: string[];
  let base: string;
  const alerts: string[] = [];
  const answers: { url: string; text: Promise<string> }[] = [];
  let firstKey = '';
  const store = new MemoryKeyStore();
  let firstKeyPrefix = '';

  before(async () => {
    upstream = await startUpstream();
    t = await startTestGateway(
      {
        admin: { console: true },
        store: { type: 'memory' },
        routes: [{ prefix: '/notify/v1', target: upstream.url }],
      },
      { store },
    );
    base = `http://127.0.0.1:${t.adminPort}`;
    context = await browser.newContext({
      permissions: ['clipboard-read', 'clipboard-write'],
      viewport: { width: 1100, height: 700 },
    });
    csp = await watchCsp(context);
    page = await context.newPage();
    page.setDefaultTimeout(5000);
    page.on('dialog', (d) => {
      alerts.push(d.message());
      void d.dismiss();
    });
    page.on('response', (r: Response) => {
      answers.push({ url: r.url(), text: r.text().catch(() => '') });
    });
  });
  after(async () => {
    await context?.close();
    await t?.close();
    await upstream?.close();
  });

  test('the console is served with a strict CSP; admin API answers are no-store', async () => {
    const r = await fetch(`${base}/console/`);
    assert.equal(r.status, 200);
    const policy = r.headers.get('content-security-policy') ?? '';
    for (const d of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
    ]) {
      assert.ok(policy.includes(d), `${d} in ${policy}`);
    }
    assert.doesNotMatch(policy, /unsafe-inline|unsafe-eval/);
    assert.doesNotMatch(await r.text(), /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
    const api = await fetch(`${base}/admin/v1/companies`);
    assert.equal(api.status, 401);
    assert.equal(api.headers.get('cache-control'), 'no-store');
    const ok = await adminApi(t.adminPort)('GET', '/admin/v1/companies');
    assert.equal(ok.headers.get('cache-control'), 'no-store');
  });

  test('login: a wrong token is refused with the API message, the right one signs in; token only in sessionStorage', async () => {
    await page.goto(`${base}/console/`);
    const token = page.getByLabel('Admin token');
    await token.fill('wrong-token-0123456789');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'Unauthorized: Missing or invalid admin token' })
      .waitFor();
    await checkScreen(page, 'login');
    assert.equal(await page.evaluate<number>('sessionStorage.length'), 0, 'a refused token is not kept');

    await token.fill(ADMIN_TOKEN);
    await token.press('Enter');
    await page.getByRole('heading', { name: 'Companies' }).waitFor();
    const stored = await page.evaluate<{ session: string[]; local: number; cookie: string; url: string }>(
      '({ session: Object.values(sessionStorage), local: localStorage.length, cookie: document.cookie, url: location.href })',
    );
    assert.deepEqual(stored.session, [ADMIN_TOKEN]);
    assert.equal(stored.local, 0);
    assert.equal(stored.cookie, '');
    assert.ok(!stored.url.includes(ADMIN_TOKEN));
    assert.deepEqual(await context.cookies(), []);
    assert.ok(!(await page.content()).includes(ADMIN_TOKEN), 'the token is not in the page');
  });

  test('create a company; a name holding HTML renders as text', async () => {
    await page.getByLabel('Company ID').fill('acme');
    await page.getByLabel('Name', { exact: true }).fill(XSS_NAME);
    await page.getByLabel('Tier').selectOption('standard');
    await page.getByRole('button', { name: 'Create company' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Company acme created.' }).waitFor();
    assert.ok(((await page.locator('h1').textContent()) ?? '').startsWith(XSS_NAME));
    assert.equal(await page.locator('main img').count(), 0, 'no element made from the name');
    assert.equal((await adminApi(t.adminPort)('GET', '/admin/v1/companies/acme')).body.name, XSS_NAME);
    await page.getByRole('link', { name: '← Companies' }).click();
    await page.getByRole('cell', { name: XSS_NAME }).waitFor();
    await page.getByLabel('Filter companies').fill('nomatch');
    await page.getByText('No company matches the filter.').waitFor();
    await page.getByLabel('Filter companies').fill('acm');
    await checkScreen(page, 'companies');
    assert.deepEqual(alerts, [], 'no script ran from the name');
  });

  test('create a key: shown once, Copy fills the clipboard, gone after "I have stored it" and a reload; it works', async () => {
    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByLabel('Label').fill('primary');
    await page.getByRole('dialog').getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Your new API key' });
    await dialog.waitFor();
    firstKey = (await dialog.locator('code').textContent()) ?? '';
    assert.match(firstKey, KEY_PATTERN);
    firstKeyPrefix = firstKey.slice(0, 12);
    await checkScreen(page, 'new-key');
    await dialog.getByRole('button', { name: 'Copy' }).click();
    await dialog.getByRole('button', { name: 'Copied' }).waitFor();
    assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), firstKey);
    // Escape does not close it: only the explicit confirmation does.
    await page.keyboard.press('Escape');
    await page.keyboard.press('Escape');
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(await dialog.isVisible(), 'still open after Escape');
    const created = answers.length;
    await dialog.getByRole('button', { name: 'I have stored it' }).click();
    await dialog.waitFor({ state: 'detached' });
    await page.getByRole('cell', { name: 'primary', exact: true }).waitFor();
    assert.ok(!(await page.content()).includes(firstKey), 'not in the page once stored');

    await page.reload();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page.getByRole('cell', { name: 'primary', exact: true }).waitFor();
    assert.ok(!(await page.content()).includes(firstKey), 'not in the page after a reload');
    const storage = await page.evaluate<string>('JSON.stringify({ ...sessionStorage, ...localStorage })');
    assert.ok(!storage.includes(firstKey), 'not in storage');
    const later = await Promise.all(
      answers.slice(created).map(async (a) => ({ url: a.url, text: await a.text })),
    );
    assert.ok(later.length > 3);
    for (const a of later) assert.ok(!a.text.includes(firstKey), `not in a later answer: ${a.url}`);
    assert.equal(await gatewayStatus(t, firstKey), 200, 'the key works against the gateway port');
    assert.equal(upstream.received.at(-1)?.headers['x-company-id'], 'acme');
  });

  test('revoke: Cancel changes nothing; confirm, and the gateway answers 401 within 1 s', async () => {
    // A second key to revoke (the first one is rotated next).
    const extra = await adminApi(t.adminPort)('POST', '/admin/v1/companies/acme/keys', {
      label: 'ci runner',
    });
    const key = extra.body.key as string;
    await page.reload();
    const button = page.getByRole('button', {
      name: `Revoke key ${extra.body.prefix as string} (ci runner)`,
    });
    await button.click();
    const confirm = page.getByRole('dialog', {
      name: `Revoke key ${extra.body.prefix as string} (ci runner)?`,
    });
    await confirm.waitFor();
    await checkScreen(page, 'revoke-confirm');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'detached' });
    await page.getByRole('status').filter({ hasText: 'Nothing changed.' }).waitFor();
    assert.equal(await gatewayStatus(t, key), 200, 'Cancel changed nothing');

    await button.click();
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    const revokedAt = Date.now();
    await eventually(async () => (await gatewayStatus(t, key)) === 401, 1000);
    assert.ok(Date.now() - revokedAt <= 1000);
    await page.getByRole('status').filter({ hasText: 'revoked.' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'ci runner' });
    await row.getByText('revoked', { exact: true }).waitFor();
    assert.equal(await row.getByRole('button').count(), 0, 'a revoked key has no actions');
    assert.equal(await gatewayStatus(t, firstKey), 200, 'the other key still works');
  });

  test('rotate with a 24 h grace: the new key is shown once, both keys work, the old one shows when it stops', async () => {
    await page
      .getByRole('button', { name: `Rotate key ${firstKeyPrefix}` })
      .first()
      .click();
    const dialog = page.getByRole('dialog', { name: /^Rotate key/ });
    for (const preset of ['None: the old key stops now', '1 hour', '24 hours', '7 days']) {
      await dialog.getByLabel(preset).waitFor();
    }
    await dialog.getByLabel('24 hours').check();
    await checkScreen(page, 'rotate');
    await dialog.getByRole('button', { name: 'Rotate' }).click();
    const shown = page.getByRole('dialog', { name: 'Your new API key' });
    await shown.waitFor();
    const newKey = (await shown.locator('code').textContent()) ?? '';
    assert.match(newKey, KEY_PATTERN);
    assert.notEqual(newKey, firstKey);
    await shown
      .getByText(/The old key .* stops working at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC\./)
      .waitFor();
    await shown.getByRole('button', { name: 'I have stored it' }).click();
    await shown.waitFor({ state: 'detached' });
    assert.equal(await gatewayStatus(t, newKey), 200, 'the new key works');
    assert.equal(await gatewayStatus(t, firstKey), 200, 'the old key works during the grace');
    const oldRow = page
      .getByRole('row')
      .filter({ has: page.getByText(firstKeyPrefix, { exact: false }) })
      .first();
    await oldRow.getByText(/^stops working \d{4}-/).waitFor();
    await checkScreen(page, 'company');
    assert.ok(!(await page.content()).includes(newKey));
  });

  test('suspend asks first: Cancel keeps the company active; confirm, and its keys get 403', async () => {
    const k = await adminApi(t.adminPort)('GET', '/admin/v1/companies/acme/keys');
    assert.equal(k.status, 200);
    await page.getByLabel('Status').selectOption('suspended');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const confirm = page.getByRole('dialog', { name: 'Suspend the company?' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await adminApi(t.adminPort)('GET', '/admin/v1/companies/acme')).body.status, 'active');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await confirm.getByRole('button', { name: 'Suspend' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved: status.' }).waitFor();
    assert.equal((await adminApi(t.adminPort)('GET', '/admin/v1/companies/acme')).body.status, 'suspended');
    assert.equal(await gatewayStatus(t, firstKey), 403);
    await page.getByLabel('Status').selectOption('active');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved: status.' }).waitFor();
  });

  test('key badges: exposed, expiring within 7 days, rotation due; the plaintext is never listed', async () => {
    const api = adminApi(t.adminPort);
    assert.equal((await api('POST', '/admin/v1/companies', { id: 'badge-co', tier: 'free' })).status, 201);
    // A key created 100 days ago (rotation age 90): the same store, a service whose clock is behind.
    const past = new AdminService({
      store,
      tiers: new Set(['free']),
      maxActiveKeys: 0,
      rotationAgeDays: 90,
      now: () => Date.now() - 100 * 86_400_000,
    });
    const old = await past.createKey('badge-co', { label: 'old' });
    assert.ok(old.ok);
    const soon = new Date(Date.now() + 3 * 86_400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const expiring = await api('POST', '/admin/v1/companies/badge-co/keys', {
      label: 'soon',
      expiresAt: soon,
    });
    assert.equal(expiring.status, 201);
    // The key sent in a URL is refused and flagged exposed.
    const leak = await fetch(
      `http://127.0.0.1:${t.port}/notify/v1/health?api_key=${expiring.body.key as string}`,
    );
    assert.equal(leak.status, 401);
    await page.goto(`${base}/console/#/companies/badge-co`);
    const oldRow = page
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: 'old', exact: true }) });
    await oldRow.getByText('rotation due').waitFor();
    const soonRow = page
      .getByRole('row')
      .filter({ has: page.getByRole('cell', { name: 'soon', exact: true }) });
    await soonRow.getByText('expires within 7 days').waitFor();
    await soonRow.getByText('exposed').waitFor();
    assert.equal(await oldRow.getByText('expires within 7 days').count(), 0);
    const html = await page.content();
    for (const k of [old.value.key, expiring.body.key as string]) assert.ok(!html.includes(k));
  });

  test("usage: the panel shows the company's counted requests, as the admin API does", async () => {
    await t.gw.usage?.recorder.flush();
    const report = await adminApi(t.adminPort)('GET', '/admin/v1/companies/acme/usage');
    const buckets = report.body.buckets as { allowed: number }[];
    const allowed = buckets.reduce((n, b) => n + b.allowed, 0);
    assert.ok(allowed >= 1, 'the key test sent requests through the gateway');
    await page.goto(`${base}/console/#/companies/acme`);
    await page.getByText(/^Requests of acme per hour/).waitFor();
    const usage = page.locator('table').filter({ hasText: 'Rate limited' });
    const cells = await usage.locator('tbody tr td:nth-child(2)').allTextContents();
    assert.equal(
      cells.reduce((n, c) => n + Number(c), 0),
      allowed,
    );
  });

  test("errors: the admin API's {error, details} is shown as it is", async () => {
    await page.goto(`${base}/console/#/companies`);
    await page.getByLabel('Company ID').fill('acme');
    await page.getByRole('button', { name: 'Create company' }).click();
    const same = await adminApi(t.adminPort)('POST', '/admin/v1/companies', { id: 'acme', tier: 'free' });
    assert.equal(same.status, 409);
    const shown = `${same.body.error as string}: ${same.body.details as string}`;
    await page.getByRole('alert').filter({ hasText: shown }).waitFor();
    assert.equal(await page.getByRole('alert').textContent(), shown);
    await page.goto(`${base}/console/#/companies/no-such-co`);
    const missing = await adminApi(t.adminPort)('GET', '/admin/v1/companies/no-such-co');
    assert.equal(missing.status, 404);
    await page
      .getByRole('alert')
      .filter({ hasText: `${missing.body.error as string}: ${missing.body.details as string}` })
      .waitFor();
    await page.getByRole('heading', { name: 'Could not load this page' }).waitFor();
  });

  test('audit trail: filters by company and by event', async () => {
    await adminApi(t.adminPort)('POST', '/admin/v1/companies', { id: 'other-co', tier: 'free' });
    await page.getByRole('link', { name: 'Audit trail' }).click();
    await page.getByRole('heading', { name: 'Audit trail' }).waitFor();
    await page.getByRole('cell', { name: 'other-co', exact: true }).first().waitFor();
    await page.getByLabel('Company').selectOption('acme');
    await page.waitForURL(/#\/audit\?company=acme$/);
    // The unfiltered list also says "entries, newest first": wait for the filtered rows themselves.
    let companies: string[] = [];
    await eventually(
      async () => {
        companies = await page.locator('tbody tr td:nth-child(3)').allTextContents();
        return companies.length > 0 && companies.every((c) => c === 'acme');
      },
      5000,
      50,
    ).catch(() => undefined);
    assert.ok(companies.length >= 5, companies.join());
    assert.deepEqual([...new Set(companies)], ['acme']);
    await page.getByLabel('Event').selectOption('key.revoked');
    await page.waitForURL(/#\/audit\?company=acme&event=key\.revoked$/);
    await page.getByText('1 entry, newest first').waitFor();
    const events = await page.locator('tbody tr td:nth-child(2)').allTextContents();
    assert.deepEqual(events, ['key.revoked']);
    await checkScreen(page, 'audit');
    const all = await Promise.all(answers.map((a) => a.text));
    assert.equal(
      all.filter((text) => text.includes(firstKey)).length,
      1,
      'only the create answer held the key',
    );
  });

  test('a write from another origin is refused with 403, nothing changes', async () => {
    const foreign = await startForeignSite();
    try {
      const other = await context.newPage();
      other.setDefaultTimeout(5000);
      await other.goto(`${foreign.url}?target=${encodeURIComponent(`${base}/admin/v1/companies`)}`);
      // The classic CSRF: a form posting text/plain that reads as JSON, with no preflight.
      const [simple] = await Promise.all([
        other.waitForResponse(
          (r) => r.url().endsWith('/admin/v1/companies') && r.request().method() === 'POST',
        ),
        other.getByRole('button', { name: 'Send' }).click(),
      ]);
      assert.equal(simple.status(), 403);
      assert.deepEqual(await simple.json(), {
        error: 'Forbidden',
        details: 'The admin API does not serve browser requests',
      });
      await other.goBack();
      const preflighted = await other.evaluate(
        ([url, token]) =>
          fetch(url!, {
            method: 'POST',
            body: '{"id":"csrf-co"}',
            headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
          }).then(
            (r) => `status ${r.status}`,
            (e: Error) => `refused: ${e.name}`,
          ),
        [`${base}/admin/v1/companies`, ADMIN_TOKEN],
      );
      assert.equal(preflighted, 'refused: TypeError');
      assert.equal((await adminApi(t.adminPort)('GET', '/admin/v1/companies/csrf-co')).status, 404);
      await other.close();
    } finally {
      await foreign.close();
    }
  });

  test('no CSP violation was reported during the whole run', () => {
    assert.deepEqual(csp, []);
    assert.deepEqual(alerts, []);
  });
});

describe('operator console in tokenless loopback mode (the demo), keyboard only', () => {
  let t: GatewayHandle;
  let context: BrowserContext;
  let page: Page;
  let csp: string[];

  before(async () => {
    // No admin.token: the demo's mode (startTestGateway always sets one).
    const cfg = validateConfig({
      server: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0, console: true },
      store: { type: 'memory' },
      log: { level: 'warn' },
    });
    assert.ok(cfg.ok);
    t = await startGateway(cfg.config, { store: new MemoryKeyStore(), processMetrics: false });
    context = await browser.newContext({ viewport: { width: 1100, height: 700 } });
    csp = await watchCsp(context);
    page = await context.newPage();
    page.setDefaultTimeout(5000);
  });
  after(async () => {
    await context?.close();
    await t?.close();
  });

  /** Presses Tab until the focused element has this accessible label (or text), at most 40 times. */
  async function tabTo(name: string): Promise<void> {
    for (let i = 0; i < 40; i++) {
      await page.keyboard.press('Tab');
      const focused = await page.evaluate<string>(FOCUSED_NAME);
      if (focused.trim() === name) return;
    }
    throw new Error(`Tab never reached "${name}"`);
  }

  test('no sign-in; create a company, a key, cancel a revocation, all with the keyboard', async () => {
    await page.goto(`http://localhost:${t.adminPort}/console/`);
    await page.getByRole('heading', { name: 'Companies' }).waitFor();
    assert.equal(await page.getByText('loopback, no token').count(), 1);
    await tabTo('Company ID');
    await page.keyboard.type('kb-co');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await tabTo('Create key');
    await page.keyboard.press('Enter');
    const form = page.getByRole('dialog', { name: 'New key for kb-co' });
    await form.waitFor();
    await page.keyboard.type('keyboard');
    await page.keyboard.press('Tab'); // environment
    await page.keyboard.press('Tab'); // expiry date
    await tabTo('Create key');
    await page.keyboard.press('Enter');
    const shown = page.getByRole('dialog', { name: 'Your new API key' });
    await shown.waitFor();
    await page.keyboard.press('Escape');
    assert.ok(await shown.isVisible());
    await tabTo('I have stored it');
    await page.keyboard.press('Enter');
    await shown.waitFor({ state: 'detached' });
    await page.getByRole('cell', { name: 'keyboard', exact: true }).waitFor();
    const keys = await adminApi(t.adminPort!, null)('GET', '/admin/v1/companies/kb-co/keys');
    const prefix = keys.list[0]!.prefix as string;
    await tabTo(`Revoke key ${prefix} (keyboard)`);
    await page.keyboard.press('Enter');
    const confirm = page.getByRole('dialog', { name: /^Revoke key/ });
    await confirm.waitFor();
    assert.equal(
      await page.evaluate<string>('document.activeElement.textContent'),
      'Cancel',
      'Cancel has the focus',
    );
    await page.keyboard.press('Escape');
    await confirm.waitFor({ state: 'detached' });
    assert.equal(
      (await adminApi(t.adminPort!, null)('GET', '/admin/v1/companies/kb-co/keys')).list[0]!.status,
      'active',
    );
    assert.deepEqual(await seriousA11yViolations(page), []);
    assert.deepEqual(csp, []);
  });
});

describe('npx notify-gateway demo: the printed console URL works with no further step', () => {
  let demo: SpawnedCli;
  let out = '';
  before(async () => {
    demo = spawnCli(['demo'], { PORT: '0', ADMIN_PORT: '0' });
    const started = async () => demo.output().includes('Press Ctrl+C') || demo.proc.exitCode !== null;
    await eventually(started, 15_000, 50);
    out = demo.output();
  });
  after(async () => {
    if (demo) await stopCli(demo.proc, 'SIGINT');
  });

  test('the console lists the demo companies, no sign-in', async () => {
    const url = /console\s+(http:\S+\/console\/)/.exec(out)?.[1];
    assert.ok(url, `a console URL in:\n${out}`);
    const context = await browser.newContext();
    const csp = await watchCsp(context);
    const page = await context.newPage();
    page.setDefaultTimeout(5000);
    await page.goto(url);
    for (const id of ['acme', 'suspended-co', 'burst-co'])
      await page.getByRole('link', { name: id }).waitFor();
    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('cell', { name: 'demo', exact: true }).waitFor();
    assert.deepEqual(csp, []);
    await context.close();
  });
});

/** The focused element's label (aria-label, its <label>, or its text); a string: no DOM types here. */
const FOCUSED_NAME = `(() => {
  const el = document.activeElement;
  if (!el) return '';
  const byLabel = el.id ? document.querySelector('label[for="' + el.id + '"]')?.textContent : null;
  return el.getAttribute('aria-label') ?? byLabel ?? el.textContent ?? '';
})()`;

/** A page on another origin (another port of 127.0.0.1) for the cross-origin write. */
async function startForeignSite(): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const target = new URL(req.url ?? '/', 'http://x').searchParams.get('target') ?? '';
    const attr = target.replace(/[^A-Za-z0-9:/._-]/g, '');
    res.setHeader('Content-Type', 'text/html');
    res.end(
      `<!doctype html><title>elsewhere</title><form method="post" enctype="text/plain" action="${attr}">` +
        `<input type="hidden" name='{"id":"csrf-co","x":"' value='"}'><button>Send</button></form>`,
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
