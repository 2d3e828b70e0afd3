import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium; `.ci/run` installs it when missing. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const ROOT = join(import.meta.dirname, '..', '..');

/**
 * A headless chromium with no network chatter. Throws clearly when absent. playwright's `launch`
 * gives it a fresh, temporary profile (user-data-dir) every time and removes it on close.
 */
export async function launchChromium(): Promise<{ browser: Browser; close(): Promise<void> }> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `${CHROMIUM} is missing: the browser tests need Debian's chromium (apt-get install -y chromium; .ci/run does it)`,
    );
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

/**
 * Where screenshots go: a temp dir, or `docs/console/` when `UPDATE_CONSOLE_SCREENSHOTS=1` (so a
 * test run never rewrites tracked files by itself).
 */
export function screenshotDir(): string {
  if (process.env.UPDATE_CONSOLE_SCREENSHOTS === '1') {
    const dir = join(ROOT, 'docs', 'console');
    mkdirSync(dir, { recursive: true });
    return dir;
  }
  return mkdtempSync(join(tmpdir(), 'ng-console-shots-'));
}

const AXE = readFileSync(join(ROOT, 'node_modules', 'axe-core', 'axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as it is now (`id: targets`). */
export async function seriousA11yViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol: an inline <script> tag (addScriptTag) would be blocked
  // by the console's CSP, and the page's CSP stays as it is.
  await page.evaluate(`${AXE};0`);
  const found = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    interface AxeViolation {
      id: string;
      impact: string | null;
      nodes: { target: unknown[] }[];
    }
    const r = await axe.run();
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n) => JSON.stringify(n.target)).join(' ')}`);
  });
  return found;
}

/**
 * Collects every Content-Security-Policy violation the context's pages report: the
 * `securitypolicyviolation` event, and the console's "Refused to ..." messages.
 */
export async function watchCsp(context: BrowserContext): Promise<string[]> {
  const seen: string[] = [];
  await context.exposeBinding('__reportCspViolation', (_src, text: string) => void seen.push(text));
  // A string: the test project has no DOM types. Runs before the page's own scripts.
  await context.addInitScript({
    content: `document.addEventListener('securitypolicyviolation', (e) =>
      __reportCspViolation(e.violatedDirective + ' ' + e.blockedURI + ' at ' + e.sourceFile + ':' + e.lineNumber));`,
  });
  context.on('console', (m) => {
    if (/Content Security Policy|Refused to (load|execute|apply|connect|frame)/i.test(m.text())) {
      seen.push(`console: ${m.text()}`);
    }
  });
  return seen;
}
