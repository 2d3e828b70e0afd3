import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { adminApi } from '../helpers/admin.js';
import { launchChromium, seriousA11yViolations, watchCsp } from '../helpers/browser.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually } from '../helpers/http.js';
import { startSmtp, type TestSmtp } from '../helpers/smtp.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// The company dashboard in a real browser (Debian's chromium through playwright-core), against a
// real gateway, a real SMTP server (the code is read from the mail) and a recording upstream. The
// tests run in order and share one page.

const KEY_PATTERN = /^nk_(live|test)_[A-Za-z0-9]{30,}$/;
const XSS = '<img src=x onerror=alert(1)>';
const SHOTS =
  process.env.UPDATE_DASHBOARD_SCREENSHOTS === '1'
    ? join(import.meta.dirname, '..', '..', 'docs', 'dashboard')
    : mkdtempSync(join(tmpdir(), 'ng-dashboard-shots-'));
mkdirSync(SHOTS, { recursive: true });

let chromium: Awaited<ReturnType<typeof launchChromium>>;
let t: TestGateway;
let smtp: TestSmtp;
let upstream: RecordingUpstream;
let context: BrowserContext;
let page: Page;
let csp: string[];
let base: string;
const alerts: string[] = [];
const suiteStart = Date.now();

async function gatewayStatus(key: string): Promise<number> {
  const r = await fetch(`http://127.0.0.1:${t.port}/notify/v1/health`, { headers: { 'X-API-Key': key } });
  await r.arrayBuffer();
  return r.status;
}

async function checkScreen(name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
  assert.deepEqual(await seriousA11yViolations(page), [], `axe-core on the ${name} screen`);
}

before(async () => {
  chromium = await launchChromium();
  [smtp, upstream] = await Promise.all([startSmtp(), startUpstream()]);
  t = await startTestGateway({
    store: { type: 'memory' },
    routes: [{ prefix: '/notify/v1', target: upstream.url }],
    admin: { console: true },
    dashboard: { enabled: true, port: 0, mail: { url: smtp.url } },
  });
  base = `http://127.0.0.1:${t.gw.dashboardPort}`;
  context = await chromium.browser.newContext({
    permissions: ['clipboard-read', 'clipboard-write'],
    viewport: { width: 1100, height: 720 },
  });
  csp = await watchCsp(context);
  page = await context.newPage();
  page.setDefaultTimeout(5000);
  page.on('dialog', (d) => {
    alerts.push(d.message());
    void d.dismiss();
  });
});
after(async () => {
  await context?.close();
  await chromium?.close();
  await t?.close();
  await smtp?.close();
  await upstream?.close();
  console.log(
    `# dashboard browser suite: ${((Date.now() - suiteStart) / 1000).toFixed(1)} s; screenshots in ${SHOTS}`,
  );
});

describe('company dashboard in a browser', () => {
  const email = 'owner@acme.test';
  const keys: string[] = [];

  test('register: the company is pending; an operator approves it in the console; the contact gets the mail', async () => {
    await page.goto(`${base}/`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await checkScreen('sign-in');
    await page.getByRole('link', { name: 'Register your company' }).click();
    await page.getByLabel('Company name').fill(`Acme ${XSS}`);
    await page.getByLabel('Contact e-mail').fill(email);
    await checkScreen('register');
    await page.getByRole('button', { name: 'Register' }).click();
    await page.getByRole('heading', { name: 'Registration received' }).waitFor();
    // The operator approves it in the console.
    const consolePage = await context.newPage();
    await consolePage.goto(`http://127.0.0.1:${t.adminPort}/console/#/registrations`);
    await consolePage.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await consolePage.keyboard.press('Enter');
    await consolePage.getByRole('heading', { name: 'Registrations' }).waitFor();
    await consolePage.getByRole('cell', { name: `Acme ${XSS}`, exact: true }).waitFor();
    await consolePage.screenshot({ path: join(SHOTS, 'console-registrations.png') });
    assert.deepEqual(await seriousA11yViolations(consolePage), []);
    await consolePage.getByRole('button', { name: `Approve Acme ${XSS}` }).click();
    await consolePage.getByRole('status').filter({ hasText: 'approved' }).waitFor();
    await consolePage.close();
    const regs = (await adminApi(t.adminPort)('GET', '/admin/v1/registrations')).body as unknown as {
      status: string;
    }[];
    assert.deepEqual(
      regs.map((r) => r.status),
      ['approved'],
    );
    const mail = await smtp.waitFor(email, /approved/);
    assert.ok(mail.text.includes(base), 'the mail points to the dashboard');
  });

  test('sign in with the code read from the mail (keyboard only)', async () => {
    await page.getByRole('link', { name: 'Back to sign-in' }).click();
    await page.getByLabel('E-mail address').fill(email);
    await page.keyboard.press('Enter');
    const mail = await smtp.waitFor(email, /sign-in code/);
    const code = /\b(\d{6})\b/.exec(mail.text)![1]!;
    await page.getByLabel('Code from the mail').fill(code);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Settings → API Keys' }).waitFor();
    const cookie = (await context.cookies()).find((c) => c.name === '__Host-ng_session');
    assert.ok(cookie?.httpOnly && cookie.secure && cookie.sameSite === 'Strict');
    assert.equal(
      await page.evaluate<string>('document.cookie'),
      '',
      'the session is out of reach of scripts',
    );
    assert.ok(((await page.locator('#who').textContent()) ?? '').includes(`Acme ${XSS}`));
    assert.equal(await page.locator('img').count(), 0, 'the name renders as text');
  });

  test('generate a key: shown once, Copy works, it works on the gateway port; a second; a third refused by the cap', async () => {
    await page.getByLabel('Label').fill(`primary ${XSS}`);
    await page.getByRole('button', { name: 'Generate key' }).click();
    const panel = page.getByRole('region', { name: 'Your new key' });
    await panel.waitFor();
    const key = await panel.getByLabel('The new key').inputValue();
    assert.match(key, KEY_PATTERN);
    keys.push(key);
    await checkScreen('new-key');
    await panel.getByRole('button', { name: 'Copy' }).click();
    assert.equal(await page.evaluate<string>('navigator.clipboard.readText()'), key);
    await panel.getByRole('button', { name: 'I have stored it' }).click();
    await panel.waitFor({ state: 'detached' });
    assert.ok(!(await page.content()).includes(key), 'gone from the page');
    assert.equal(await gatewayStatus(key), 200);
    assert.ok(upstream.received.length > 0);
    await page.getByRole('cell', { name: `primary ${XSS}`, exact: true }).waitFor();
    assert.equal(await page.locator('img').count(), 0, 'a label holding markup renders as text');

    await page.getByLabel('Label').fill('backup');
    await page.getByLabel('Environment').selectOption('test');
    await page.getByRole('button', { name: 'Generate key' }).click();
    const second = page.getByRole('region', { name: 'Your new key' });
    keys.push(await second.getByLabel('The new key').inputValue());
    await second.getByRole('button', { name: 'I have stored it' }).click();
    await page.getByLabel('Label').fill('third');
    await page.getByRole('button', { name: 'Generate key' }).click();
    await page.getByRole('alert').filter({ hasText: 'Revoke a key you no longer use' }).waitFor();
    await checkScreen('keys');
  });

  test('rotate shows when the old key stops; revoke names the key and gives 401', async () => {
    await page.getByRole('button', { name: /^Rotate key nk_test_/ }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Rotate' }).click();
    const panel = page.getByRole('region', { name: 'Your new key (rotation)' });
    await panel.getByText('stops working at').waitFor();
    const rotated = await panel.getByLabel('The new key').inputValue();
    assert.equal(await gatewayStatus(rotated), 200);
    assert.equal(await gatewayStatus(keys[1]!), 200, 'the old key works during its grace period');
    await checkScreen('rotated');
    await panel.getByRole('button', { name: 'I have stored it' }).click();

    await page.getByRole('button', { name: /^Revoke key nk_live_/ }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText(/Requests with nk_live_/).waitFor();
    await checkScreen('revoke');
    await dialog.getByRole('button', { name: /^Revoke nk_live_/ }).click();
    await page.getByRole('status').filter({ hasText: 'revoked' }).waitFor();
    await eventually(async () => (await gatewayStatus(keys[0]!)) === 401, 1000);
  });

  test('usage, members and activity screens', async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    await page.getByRole('heading', { name: 'Usage' }).waitFor();
    assert.equal(await page.locator('svg.chart').count(), 1);
    await checkScreen('usage');
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByLabel('E-mail address').fill('dev@acme.test');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByRole('cell', { name: 'dev@acme.test', exact: true }).waitFor();
    await checkScreen('members');
    await page.getByRole('link', { name: 'Activity' }).click();
    await page.getByRole('cell', { name: 'key.revoked' }).waitFor();
    await page
      .getByRole('cell', { name: `member:${email}` })
      .first()
      .waitFor();
    await checkScreen('activity');
  });

  test('sign out; a page that frames the dashboard is blocked; no CSP violation, no alert in the whole run', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    assert.deepEqual(csp, [], 'no CSP violation on the dashboard itself');
    const framing = await context.newPage();
    await framing.setContent(`<iframe src="${base}/"></iframe>`);
    // The browser reports the refusal (frame-ancestors 'none'): wait for it, nothing else.
    await eventually(async () => (csp as string[]).length > 0, 3000);
    const seen = [...(csp as string[])];
    assert.ok(
      seen.every((v) => v.includes("frame-ancestors 'none'")),
      seen.join('\n'),
    );
    await framing.close();
    assert.deepEqual(alerts, []);
  });
});
