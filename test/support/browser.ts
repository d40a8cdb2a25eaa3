import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { env } from './env.js';

// The console (/console) in a real browser: Debian's chromium driven by playwright-core.
// Accessible names are the contract (README "Console").

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
/** Screenshots of every page the tests visit (CI keeps the folder). */
export const ARTIFACTS = path.join(process.cwd(), '.data', 'test-artifacts', 'console');

export async function launchBrowser(): Promise<Browser> {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: env.chromium, args: ['--no-sandbox'] });
}

export interface SignInOptions {
  /** The API key typed in (default: the bootstrap administrator's). */
  apiKey?: string;
  viewport?: { width: number; height: number };
  colorScheme?: 'light' | 'dark';
  /** The heading the first page shows once signed in. */
  landing?: string;
}

/** A fresh tab signed in with an API key (the tab's own storage: nothing leaks between tests). */
export async function signedIn(browser: Browser, options: SignInOptions = {}): Promise<Page> {
  // bypassCSP: only to inject axe-core; the console itself runs under its strict policy.
  const context = await browser.newContext({ viewport: options.viewport ?? { width: 1280, height: 800 }, colorScheme: options.colorScheme ?? 'light', bypassCSP: true });
  const page = await context.newPage();
  await page.goto(`${env.apiUrl}/console/`);
  await page.getByLabel('API key').fill(options.apiKey ?? env.apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: options.landing ?? 'Sessions' }).waitFor();
  return page;
}

/** axe-core on the page as it is: no serious or critical violation; then a screenshot named `name`. */
export async function assertAccessible(page: Page, name: string): Promise<void> {
  await page.addScriptTag({ content: AXE });
  const violations = (await page.evaluate(async () => {
    const result = await (globalThis as unknown as { axe: { run(): Promise<{ violations: { id: string; impact: string | null; help: string }[] }> } }).axe.run();
    return result.violations;
  })) as { id: string; impact: string | null; help: string }[];
  const serious = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(serious.map((v) => `${v.id}: ${v.help}`), [], `${name}: accessibility`);
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}
