import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { AUDIT_EVENTS } from '../../src/admin/audit-query.js';
import { sha256Hex } from '../../src/admin/roles.js';
import type { ConfigInput } from '../../src/config/schema.js';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type GatewayHandle } from '../../src/server.js';
import { MemoryKeyStore } from '../../src/store/memory-store.js';
import { adminApi } from '../helpers/admin.js';
import { launchChromium, screenshotDir, seriousA11yViolations, watchCsp } from '../helpers/browser.js';
import { ADMIN_TOKEN, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { eventually, send } from '../helpers/http.js';
import { startReceiver, until, type Receiver } from '../helpers/receiver.js';
import { startUpstream, type RecordingUpstream } from '../helpers/upstream.js';

// The console as a support team uses it, in Debian's chromium against a real gateway: the first
// screen without a script, the role's controls, a refused write, effective limits and scopes,
// key search, usage charts, the audit view's filters and pages, webhook dead letters.

const READ_TOKEN = 'console-reader-token-0123456789abcdef';
const KEYS_TOKEN = 'console-keyops-token-0123456789abcdef';
const SECRET = `whsec_${randomBytes(32).toString('base64')}`;
const SHOTS = screenshotDir();
const CONSOLE_JS = join(import.meta.dirname, '..', '..', 'console', 'js');

let chromium: Awaited<ReturnType<typeof launchChromium>>;
let browser: Browser;
before(async () => {
  chromium = await launchChromium();
  browser = chromium.browser;
});
after(async () => chromium?.close());

async function checkScreen(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
  assert.deepEqual(await seriousA11yViolations(page), [], `axe-core on the ${name} screen`);
}

/** Signs in with `token` on a fresh page of `context`. */
async function signIn(context: BrowserContext, base: string, token: string): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(5000);
  await page.goto(`${base}/console/`);
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Companies' }).waitFor();
  return page;
}

describe('the first screen needs no script timer', () => {
  test('no timer in the console code', () => {
    for (const f of readdirSync(CONSOLE_JS))
      assert.doesNotMatch(readFileSync(join(CONSOLE_JS, f), 'utf8'), /setTimeout|setInterval/, f);
  });

  test('with scripts off the page already shows its first screen, with a token and without', async () => {
    const withToken = await startTestGateway({ admin: { console: true }, store: { type: 'memory' } });
    const cfg = validateConfig({
      server: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0, console: true },
      store: { type: 'memory' },
      log: { level: 'warn' },
    });
    assert.ok(cfg.ok);
    const open: GatewayHandle = await startGateway(cfg.config, {
      store: new MemoryKeyStore(),
      processMetrics: false,
    });
    const context = await browser.newContext({
      javaScriptEnabled: false,
      viewport: { width: 900, height: 500 },
    });
    try {
      const page = await context.newPage();
      await page.goto(`http://127.0.0.1:${withToken.adminPort}/console/`, { waitUntil: 'load' });
      await page.screenshot({ path: join(SHOTS, 'first-screen-token.png') });
      assert.equal(await page.locator('h1:visible').textContent(), 'Sign in');
      assert.ok(await page.getByLabel('Admin token').isVisible());
      // The button waits for the script: a form sent without it would put the token in the URL.
      assert.ok(await page.getByRole('button', { name: 'Sign in' }).isDisabled());
      await page.goto(`http://127.0.0.1:${open.adminPort}/console/`, { waitUntil: 'load' });
      await page.screenshot({ path: join(SHOTS, 'first-screen-tokenless.png') });
      assert.equal(await page.locator('h1:visible').textContent(), 'Companies');
      assert.equal(await page.getByLabel('Admin token').isVisible(), false);
    } finally {
      await context.close();
      await withToken.close();
      await open.close();
    }
  });
});

describe('the console for a support team', () => {
  let t: TestGateway;
  let upstream: RecordingUpstream;
  let receiver: Receiver;
  let context: BrowserContext;
  let csp: string[];
  let base: string;
  const api = () => adminApi(t.adminPort);
  let acmeKey = '';
  let acmeKeyId = '';
  let acmePrefix = '';

  before(async () => {
    upstream = await startUpstream();
    receiver = await startReceiver();
    receiver.script([], 500);
    t = await startTestGateway({
      admin: {
        console: true,
        tokens: [
          { name: 'reader', role: 'read', sha256: sha256Hex(READ_TOKEN) },
          { name: 'keyops', role: 'keys', sha256: sha256Hex(KEYS_TOKEN) },
        ],
      },
      store: { type: 'memory' },
      routes: [{ prefix: '/notify/v1', target: upstream.url }],
      events: {
        webhooks: [{ id: 'ops', url: receiver.url, secret: SECRET }],
        delivery: { timeoutMs: 300, backoffMs: 50, maxBackoffMs: 100, pollIntervalMs: 50, maxAttempts: 1 },
      },
    } as ConfigInput);
    base = `http://127.0.0.1:${t.adminPort}`;
    context = await browser.newContext({ viewport: { width: 1200, height: 800 } });
    csp = await watchCsp(context);
    const c = await api()('POST', '/admin/v1/companies', {
      id: 'acme',
      name: 'Acme',
      tier: 'standard',
      scopes: [{ route: '/notify/v1', methods: ['GET', 'POST'] }],
    });
    assert.equal(c.status, 201, c.text);
    const k = await api()('POST', '/admin/v1/companies/acme/keys', { label: 'primary' });
    acmeKey = String(k.body.key);
    acmeKeyId = String(k.body.id);
    acmePrefix = String(k.body.prefix);
    assert.equal(
      (
        await api()('PATCH', `/admin/v1/keys/${acmeKeyId}`, {
          limits: [{ points: 5, duration: 60 }],
          scopes: [{ route: '/notify/v1', methods: ['GET'] }],
        })
      ).status,
      200,
    );
    assert.equal((await api()('POST', '/admin/v1/companies', { id: 'globex', tier: 'free' })).status, 201);
    assert.equal((await api()('POST', '/admin/v1/companies/globex/keys', { label: 'g' })).status, 201);
  });
  after(async () => {
    await context?.close();
    await t?.close();
    await upstream?.close();
    await receiver?.close();
  });

  test('a read token sees no write control anywhere; its name and role show', async () => {
    const page = await signIn(context, base, READ_TOKEN);
    await page.getByText('reader (read role)').waitFor();
    await page.getByRole('link', { name: 'acme' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Create company' }).count(), 0);
    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    for (const name of ['Save changes', 'Create key', /^Rotate key/, /^Revoke key/])
      assert.equal(await page.getByRole('button', { name }).count(), 0, String(name));
    // What is left out leaves nothing behind (not even a stray "null").
    assert.doesNotMatch((await page.locator('main').textContent()) ?? '', /\bnull\b|undefined/);
    await checkScreen(page, 'company-read-role');
    await page.close();
  });

  test('a keys token manages keys but not the company', async () => {
    const page = await signIn(context, base, KEYS_TOKEN);
    await page.getByRole('link', { name: 'acme' }).click();
    await page.getByRole('button', { name: 'Create key' }).waitFor();
    assert.equal(await page.getByRole('button', { name: `Revoke key ${acmePrefix} (primary)` }).count(), 1);
    assert.equal(await page.getByRole('button', { name: 'Save changes' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Create company' }).count(), 0);
    await page.close();
  });

  test('effective limits and scopes of the company and of its key', async () => {
    const page = await signIn(context, base, ADMIN_TOKEN);
    await page.goto(`${base}/console/#/companies/acme`);
    const facts = page.locator('dl.facts');
    await facts.getByText('600 per minute (tier standard)').waitFor();
    await facts.getByText('GET, POST /notify/v1').waitFor();
    const row = page.getByRole('row').filter({ hasText: 'primary' });
    await row
      .getByText(
        "Limits: 5 per minute (its own), within the company's. Scopes: GET /notify/v1, within the company's.",
      )
      .waitFor();
    await page.goto(`${base}/console/#/companies/globex`);
    await page.locator('dl.facts').getByText('60 per minute (tier free)').waitFor();
    await page.locator('dl.facts').getByText('every route').waitFor();
    await page.close();
  });

  test('a refused write shows the error and puts the form back as stored; nothing changes', async () => {
    const page = await signIn(context, base, ADMIN_TOKEN);
    await page.goto(`${base}/console/#/companies/acme`);
    const name = page.getByLabel('Name', { exact: true });
    await name.waitFor();
    // A name that holds a key is refused by the admin API (400), so the save is refused.
    await name.fill(`x ${acmeKey}`);
    await page.getByLabel('Tier').selectOption('enterprise');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: /^Bad Request: name: / })
      .waitFor();
    assert.equal(await name.inputValue(), 'Acme');
    assert.equal(await page.getByLabel('Tier').inputValue(), 'standard');
    assert.ok(await page.getByRole('button', { name: 'Save changes' }).isEnabled());
    const stored = await api()('GET', '/admin/v1/companies/acme');
    assert.deepEqual([stored.body.name, stored.body.tier], ['Acme', 'standard']);
    assert.ok(!(await page.content()).includes(acmeKey), 'the refused value is not shown back');
    // A refused create keeps what was typed, to correct it.
    await page.goto(`${base}/console/#/companies`);
    await page.getByLabel('Company ID').fill('globex');
    await page.getByRole('button', { name: 'Create company' }).click();
    await page.getByRole('alert').filter({ hasText: 'Conflict' }).waitFor();
    assert.equal(await page.getByLabel('Company ID').inputValue(), 'globex');
    await page.close();
  });

  test('find a key by its prefix across companies; a pasted key is refused before any request', async () => {
    const page = await signIn(context, base, READ_TOKEN);
    const sent: string[] = [];
    page.on('request', (r) => sent.push(r.url()));
    await page.getByRole('link', { name: 'Find a key' }).click();
    const box = page.getByLabel('Display prefix (or its start)');
    await box.fill('nk_live_');
    await box.press('Enter');
    await page.getByText(/^2 keys whose prefix starts with nk_live_/).waitFor();
    await page.getByRole('cell', { name: 'globex' }).waitFor();
    await checkScreen(page, 'find-key');
    await box.fill(acmeKey);
    await box.press('Enter');
    assert.equal(await box.inputValue(), '', 'the pasted key is cleared');
    assert.ok(!sent.some((u) => u.includes(acmeKey)), 'no request carried the key');
    await box.fill(acmePrefix);
    await box.press('Enter');
    await page.getByText(/^1 key whose prefix/).waitFor();
    await page.getByRole('link', { name: acmePrefix }).click();
    await page.getByRole('heading', { name: `Key ${acmePrefix} (primary)` }).waitFor();
    await page.close();
  });

  test('usage as a chart and a table, per company and per key', async () => {
    for (let i = 0; i < 3; i++)
      assert.equal((await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': acmeKey } })).status, 200);
    const other = await api()('POST', '/admin/v1/companies/acme/keys', { label: 'second' });
    assert.equal(
      (await send(t.port, '/notify/v1/x', { headers: { 'X-API-Key': String(other.body.key) } })).status,
      200,
    );
    await t.gw.usage!.recorder.flush();
    const page = await signIn(context, base, READ_TOKEN);
    await page.goto(`${base}/console/#/companies/acme`);
    const chart = page.locator('svg.chart');
    await chart.waitFor();
    assert.match(String(await chart.getAttribute('aria-label')), /^Chart: 4 requests of acme, by hour$/);
    assert.ok((await chart.locator('rect').count()) >= 1);
    const allowed = await page
      .locator('table')
      .filter({ hasText: 'Rate limited' })
      .locator('tbody tr td:nth-child(2)')
      .allTextContents();
    assert.equal(
      allowed.reduce((n, c) => n + Number(c), 0),
      4,
    );
    await checkScreen(page, 'usage-chart');
    await page.goto(`${base}/console/#/keys/${acmeKeyId}`);
    await page.locator('svg.chart[aria-label^="Chart: 3 requests of key"]').waitFor();
    await page.close();
  });

  test('audit: every event type filters, a time range, pages older and newer', async () => {
    // More entries than a page (50): company updates.
    for (let i = 0; i < 55; i++)
      assert.equal((await api()('PATCH', '/admin/v1/companies/globex', { name: `Globex ${i}` })).status, 200);
    const page = await signIn(context, base, READ_TOKEN);
    await page.getByRole('link', { name: 'Audit trail' }).click();
    await page.getByText('50 entries, newest first').waitFor();
    const options = await page.getByLabel('Event').locator('option').allTextContents();
    assert.deepEqual(options.slice(1), [...AUDIT_EVENTS]);
    for (const event of AUDIT_EVENTS) {
      await page.getByLabel('Event').selectOption(event);
      await page.waitForURL(new RegExp(`event=${event.replace('.', '\\.')}$`));
      const expected = (await api()('GET', `/admin/v1/audit?event=${event}&limit=50`)).list.length;
      await page
        .getByText(
          expected
            ? `${expected} ${expected === 1 ? 'entry' : 'entries'}, newest first`
            : 'No audit entries match.',
        )
        .waitFor();
      const shown = await page.locator('tbody tr td:nth-child(2)').allTextContents();
      assert.ok(
        shown.every((e) => e === event),
        `${event}: ${shown.join()}`,
      );
    }
    await page.getByLabel('Event').selectOption('company.updated');
    await page.getByText('50 entries, newest first').waitFor();
    const first = await page.locator('tbody tr td:nth-child(6)').allTextContents();
    await page.getByRole('button', { name: 'Older entries' }).click();
    await page.waitForURL(/before=/);
    await page.getByText(/^\d entries, newest first|^1 entry, newest first/).waitFor();
    const second = await page.locator('tbody tr td:nth-child(6)').allTextContents();
    assert.ok(
      second.every((d) => !first.includes(d)),
      'the older page holds other entries',
    );
    await page.getByRole('button', { name: 'Newer entries' }).click();
    await page.waitForURL(/after=/);
    await page.getByText('50 entries, newest first').waitFor();
    assert.deepEqual(await page.locator('tbody tr td:nth-child(6)').allTextContents(), first);
    await checkScreen(page, 'audit-pages');
    // A range in the future holds nothing.
    await page.getByLabel('From (UTC date)').fill('2999-01-01');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(/from=2999-01-01/);
    await page.getByText('No audit entries match.').waitFor();
    await page.close();
  });

  test('webhook dead letters show, and an admin retries one', async () => {
    // The revocation's event fails once (maxAttempts 1): a dead letter.
    const k = await api()('POST', '/admin/v1/companies/globex/keys', { label: 'to-revoke' });
    assert.equal((await api()('DELETE', `/admin/v1/keys/${String(k.body.id)}`)).status, 200);
    await until(
      async () => (await api()('GET', '/admin/v1/webhooks/deliveries?status=dead')).list.length === 1,
    );
    const reader = await signIn(context, base, READ_TOKEN);
    await reader.getByRole('link', { name: 'Webhook deliveries' }).click();
    await reader.getByRole('cell', { name: 'key.revoked' }).waitFor();
    assert.equal(await reader.getByRole('button', { name: /^Retry delivery/ }).count(), 0, 'read: no retry');
    await checkScreen(reader, 'dead-letters');
    await reader.close();
    receiver.script([], 200);
    const page = await signIn(context, base, ADMIN_TOKEN);
    await page.goto(`${base}/console/#/webhooks`);
    await page.getByRole('button', { name: /^Retry delivery/ }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /is queued again/ })
      .waitFor();
    await eventually(async () => receiver.ofType('key.revoked').some((r) => r.answer === 200), 5000, 50);
    await page.getByLabel('Show').selectOption('delivered');
    await page.getByRole('cell', { name: 'key.revoked' }).waitFor();
    await page.close();
  });

  test('keyboard: find a key and open it without the mouse', async () => {
    const page = await signIn(context, base, READ_TOKEN);
    await page.goto(`${base}/console/#/keys`);
    await page.getByLabel('Display prefix (or its start)').focus();
    await page.keyboard.type(acmePrefix);
    await page.keyboard.press('Enter');
    await page.getByText(/^1 key whose prefix/).waitFor();
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    for (let i = 0; i < 10; i++) {
      const focused = await page.evaluate<string>('document.activeElement?.textContent ?? ""');
      if (focused === acmePrefix) break;
      await page.keyboard.press('Tab');
    }
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: `Key ${acmePrefix} (primary)` }).waitFor();
    await page.close();
  });

  test('no CSP violation in the whole run', () => {
    assert.deepEqual(csp, []);
  });
});
