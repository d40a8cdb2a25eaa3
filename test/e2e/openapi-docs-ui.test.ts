import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { launchBrowser } from '../support/browser.js';
import { env } from '../support/env.js';

// Swagger UI (/docs) in a real browser, as someone trying the API first sees it: the Authorize
// button on the first screen (the description above it stays short, its reference sections
// folded), and what the authorization dialog says about keys.

const ARTIFACTS = path.join(process.cwd(), '.data', 'test-artifacts', 'docs');
const VIEWPORT = { width: 1280, height: 800 };

let browser: Browser;
let page: Page;

before(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  browser = await launchBrowser();
  page = await (await browser.newContext({ viewport: VIEWPORT })).newPage();
  await page.goto(`${env.apiUrl}/docs`);
  await page.getByRole('button', { name: /authorize/i }).first().waitFor();
});
after(async () => {
  await browser?.close();
});

describe('Swagger UI at /docs', () => {
  it('shows the Authorize button on the first screen, the reference folded below the introduction', async () => {
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-first-screen.png') });
    const authorize = page.locator('.scheme-container .auth-wrapper button.authorize');
    const box = await authorize.boundingBox();
    assert.ok(box, 'the Authorize button is rendered');
    assert.ok(box.y >= 0 && box.y + box.height <= VIEWPORT.height, `Authorize is within the first ${VIEWPORT.height} px (at ${Math.round(box.y)} px)`);

    const sections = page.locator('.information-container details');
    assert.deepEqual(
      (await sections.locator('summary').allInnerTexts()).map((text) => text.split(':')[0]),
      ['Errors', 'Server-sent events', 'Webhooks'],
    );
    // Folded: the error table shows once its section is opened, rendered as a table.
    const errors = sections.nth(0);
    assert.equal(await errors.locator('table').isVisible(), false, 'the error table is folded');
    await errors.locator('summary').click();
    assert.equal(await errors.locator('table').isVisible(), true, 'the error table unfolds');
    assert.ok((await errors.locator('table td code').allInnerTexts()).includes('idempotency_conflict'), 'the table lists the error codes');
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-errors-open.png') });
    await errors.locator('summary').click();
  });

  it('says in the authorization dialog which keys it takes', async () => {
    await page.locator('.scheme-container button.authorize').click();
    const dialog = page.locator('.modal-ux');
    await dialog.waitFor();
    const text = await dialog.innerText();
    assert.match(text, /yuxi_…/, 'created keys');
    assert.match(text, /yx_dev_…/, "the bootstrap key npm start prints");
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-authorize.png') });
    await dialog.locator('button.close-modal').click();
  });
});
