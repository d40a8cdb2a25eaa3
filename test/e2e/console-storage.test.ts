import assert from 'node:assert/strict';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { ARTIFACTS, assertAccessible, launchBrowser, signedIn } from '../support/browser.js';
import { uploadDraft } from '../support/files.js';
import { API } from '../support/http.js';
import { ADMIN, bootstrap, call, newProductUser, until } from '../support/identity.js';

// The console's Storage page in a real browser, over totals the worker really measured: owners
// largest first with their share of nothing (no quota on this replica), an owner's projects, on a
// desktop and a phone; a user without a role has no such page.

let browser: Browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

async function open(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Storage', exact: true }).click();
  await page.getByRole('heading', { name: 'Storage', level: 1 }).waitFor();
}

describe('console: storage', () => {
  it('lists owners by stored bytes and an owner\'s projects, on a desktop and a phone; only for roles that read every session', async () => {
    const suffix = randomUUID().slice(0, 6);
    const user = await newProductUser(`storage-${suffix}`);
    const project = await call(user.caller, `${API}/projects`, { body: { name: `Archive ${suffix}` } });
    assert.equal(project.status, 201, project.text);
    // A large file in the project's session: the owner is among the largest on the stack's first page.
    const draft = await uploadDraft(randomBytes(2_000_000).toString('hex'), 'big.txt', { token: user.key.secret, contentType: 'text/plain' });
    const created = await call(user.caller, `${API}/sessions`, { body: { agent_id: 'default-chatbot', project_id: project.body.id, input: 'keep this', yuxi: { attachment_file_ids: [draft.id] } }, idempotencyKey: randomUUID() });
    assert.equal(created.status, 201, created.text);
    const measured = await until(
      async () => {
        const res = await call(bootstrap, `${ADMIN}/storage?owner_id=${user.userId}`);
        return res.body?.data?.[0]?.bytes >= 4_000_000 ? res.body.data[0] : undefined;
      },
      { attempts: 300, intervalMs: 200 },
    );
    assert.ok(measured, 'the owner measured');

    const page = await signedIn(browser);
    await open(page);
    const table = page.getByRole('region', { name: 'Storage totals' });
    // Largest first: what the route says, in that order (the first page).
    const listed = await call(bootstrap, `${ADMIN}/storage?limit=50`);
    const headers = table.getByRole('rowheader');
    await headers.first().waitFor();
    assert.equal(await headers.count(), listed.body.data.length);
    // The owner (known by id only: its name is in the cell's title) is on the page.
    const ownerRow = table.getByRole('row').filter({ has: page.locator(`[title="${user.userId}"]`) });
    await ownerRow.waitFor();
    await assertAccessible(page, 'storage-owners');

    await ownerRow.getByRole('button', { name: /^Projects of / }).click();
    await table.getByRole('rowheader').filter({ hasText: `Archive ${suffix}` }).waitFor();
    assert.equal(await headers.count(), 1, 'the owner\'s one project');
    await assertAccessible(page, 'storage-projects');
    await page.screenshot({ path: path.join(ARTIFACTS, 'storage-projects-viewport.png') });
    await page.context().close();

    // A phone: nothing wider than the screen (the table scrolls in its own region).
    const phone = await signedIn(browser, { viewport: { width: 390, height: 844 } });
    await open(phone);
    await phone.getByRole('region', { name: 'Storage totals' }).getByRole('rowheader').first().waitFor();
    const overflow = await phone.locator('html').evaluate((root) => root.scrollWidth - root.clientWidth);
    assert.ok(overflow <= 0, `the page is no wider than the phone (${overflow}px over)`);
    await assertAccessible(phone, 'storage-phone');
    await phone.context().close();

    // A user without a role: no Storage page in the menu.
    const plain = await signedIn(browser, { apiKey: user.key.secret });
    await plain.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Sessions', exact: true }).waitFor();
    assert.equal(await plain.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Storage', exact: true }).count(), 0);
    await plain.context().close();
  });
});
