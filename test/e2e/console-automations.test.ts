import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible, launchBrowser, signedIn } from '../support/browser.js';
import { API } from '../support/http.js';
import { call, type Caller, newProductUser, until } from '../support/identity.js';

// The console's Automations page in a real browser, against the real stack: a user creates an
// automation through the form (its next five fire times previewed from the server as they type),
// finds it listed, pauses and resumes it, runs it now and follows the invocation to its session,
// then deletes it; on a desktop and a phone.

let browser: Browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

async function open(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Automations', exact: true }).click();
  await page.getByRole('heading', { name: 'Automations', level: 1 }).waitFor();
}

/** The caller's automation named `name`, as the API reads it (undefined until it exists). */
async function automationNamed(owner: Caller, name: string): Promise<any> {
  const res = await call(owner, `${API}/automations?limit=100`);
  assert.equal(res.status, 200, res.text);
  return res.body.data.find((a: any) => a.name === name);
}

/** Waits (bounded) until the API reads the automation with `status`. */
async function statusIs(owner: Caller, id: string, status: string): Promise<any> {
  const found = await until(
    async () => {
      const res = await call(owner, `${API}/automations/${id}`);
      return res.body?.status === status ? res.body : undefined;
    },
    { attempts: 100, intervalMs: 100 },
  );
  assert.ok(found, `automation ${id} reached ${status}`);
  return found;
}

describe('console: automations', () => {
  it('creates an automation through the form with its next five times previewed, lists it, pauses, resumes, runs it now and links the invocation to its session', async () => {
    const suffix = randomUUID().slice(0, 8);
    const name = `Weekday digest ${suffix}`;
    const user = await newProductUser(`console automations ${suffix}`);
    const page = await signedIn(browser, { apiKey: user.key.secret });
    await open(page);
    await page.getByText('No automations yet').waitFor();

    await page.getByRole('button', { name: 'New automation' }).click();
    await page.getByLabel('Name', { exact: true }).fill(name);
    const expression = page.getByLabel('Cron expression');
    const zone = page.getByLabel('Time zone');
    // A bad expression: the server's 422 names the field, shown under it.
    await expression.fill('61 9 * * *');
    await zone.fill('Europe/Paris');
    await page.locator('#automation-expression[aria-invalid="true"]').waitFor();
    assert.ok((await page.locator('#automation-expression-error').innerText()).length > 0, 'the field says what is wrong');
    await zone.fill('Mars/Olympus');
    await expression.fill('30 9 * * 1-5');
    await page.locator('#automation-timezone[aria-invalid="true"]').waitFor();
    await zone.fill('Europe/Paris');

    // The preview: the same five times the API computes for this schedule.
    const preview = await call(user.caller, `${API}/automation-schedules/preview?expression=${encodeURIComponent('30 9 * * 1-5')}&timezone=Europe%2FParis&count=5`);
    assert.equal(preview.status, 200, preview.text);
    const expected = preview.body.next_run_times.map((at: number) => new Date(at * 1000).toISOString());
    assert.equal(expected.length, 5);
    const times = page.getByRole('list', { name: 'Next five fire times' }).locator('time');
    const shown = await until(
      async () => {
        const values = await times.evaluateAll((nodes) => nodes.map((node) => node.getAttribute('datetime')));
        return values.length === 5 && values.join() === expected.join() ? values : undefined;
      },
      { attempts: 100, intervalMs: 100 },
    );
    assert.deepEqual(shown, expected, 'the five times the server previews');
    assert.equal(await page.locator('#automation-expression[aria-invalid="true"]').count(), 0, 'the error is gone once the expression is valid');

    await page.getByLabel('Agent', { exact: true }).selectOption('default-chatbot');
    await page.getByLabel('First message').fill(`Summarise the day ${suffix}`);
    await page.getByLabel('If the previous run is still going').selectOption('queue');
    await page.getByLabel('Times missed while the service was down').selectOption('none');
    await assertAccessible(page, 'automations-form');
    await page.getByRole('button', { name: 'Create automation' }).click();
    await page.getByRole('status').filter({ hasText: `Created “${name}”` }).waitFor();

    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
    await row.getByText('active', { exact: true }).waitFor();
    await row.getByText('Europe/Paris').waitFor();
    const created = await automationNamed(user.caller, name);
    assert.ok(created, 'the API lists it');
    assert.equal(created.type, 'periodic');
    assert.equal(created.expression, '30 9 * * 1-5');
    assert.equal(created.timezone, 'Europe/Paris');
    assert.equal(created.target.type, 'new_session');
    assert.equal(created.target.agent_id, 'default-chatbot');
    assert.deepEqual(created.yuxi.overlap, 'queue');
    assert.deepEqual(created.yuxi.catch_up, 'none');
    assert.equal(new Date(created.yuxi.next_run_at * 1000).toISOString(), expected[0], 'its next run is the first time previewed');
    await assertAccessible(page, 'automations-list');

    // Pause, then resume: the row and the API agree.
    await row.getByRole('button', { name: `Pause ${name}` }).click();
    await row.getByText('paused', { exact: true }).waitFor();
    const paused = await statusIs(user.caller, created.id, 'paused');
    assert.equal(paused.yuxi.next_run_at, null);
    await row.getByRole('button', { name: `Resume ${name}` }).click();
    await row.getByText('active', { exact: true }).waitFor();
    const resumed = await statusIs(user.caller, created.id, 'active');
    assert.ok(resumed.yuxi.next_run_at > Date.now() / 1000, 'resumed: a next run ahead');

    // Run now: the invocation shows on the automation's page with a link to the session it started.
    await row.getByRole('button', { name: `Run now ${name}` }).click();
    await page.getByRole('status').filter({ hasText: `Ran “${name}” now` }).waitFor();
    const invocations = await until(
      async () => {
        const res = await call(user.caller, `${API}/automations/${created.id}/invocations`);
        return res.body?.data?.length === 1 && res.body.data[0].session_id ? res.body.data : undefined;
      },
      { attempts: 100, intervalMs: 100 },
    );
    assert.ok(invocations, 'one invocation with a session');
    const invocation = invocations[0];
    assert.equal(invocation.source.type, 'manual');
    await page.getByRole('link', { name: 'See its invocations' }).click();
    await page.waitForURL(`**/console/automations/${created.id}`);
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    const history = page.getByRole('region', { name: 'Invocations' });
    const session = history.locator(`a[href="/console/sessions/${invocation.session_id}"]`);
    await session.waitFor();
    await history.getByRole('cell', { name: 'run now', exact: true }).waitFor();
    await assertAccessible(page, 'automation-detail');
    await session.click();
    await page.waitForURL(`**/console/sessions/${invocation.session_id}`);
    await page.context().close();

    // A phone: the list and the form fit the screen (tables scroll inside their region).
    const phone = await signedIn(browser, { apiKey: user.key.secret, viewport: { width: 390, height: 844 } });
    await open(phone);
    await phone.getByRole('link', { name, exact: true }).waitFor();
    await phone.getByRole('button', { name: 'New automation' }).click();
    await phone.getByRole('list', { name: 'Next five fire times' }).locator('li').nth(4).waitFor();
    const overflow = await phone.locator('html').evaluate((root) => root.scrollWidth - root.clientWidth);
    assert.ok(overflow <= 0, `the page is no wider than the phone (${overflow}px over)`);
    await assertAccessible(phone, 'automations-phone');
    await phone.context().close();
  });

  it('deletes an automation after a confirmation (Cancel keeps it), in the dark theme', async () => {
    const suffix = randomUUID().slice(0, 8);
    const name = `Doomed ${suffix}`;
    const user = await newProductUser(`console automations delete ${suffix}`);
    const made = await call(user.caller, `${API}/automations`, {
      body: {
        name,
        type: 'once',
        run_at: Math.floor(Date.now() / 1000) + 86_400,
        target: { type: 'new_session', agent_id: 'default-chatbot', environment: { type: 'none' }, input: [{ role: 'user', content: [{ type: 'input_text', text: 'hello' }] }] },
      },
      idempotencyKey: `console-delete-${suffix}`,
    });
    assert.equal(made.status, 201, made.text);
    const page = await signedIn(browser, { apiKey: user.key.secret, colorScheme: 'dark' });
    await open(page);
    const row = page.getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) });
    await row.getByText(/^once,/).waitFor();
    await row.getByRole('button', { name: `Delete ${name}` }).click();
    const dialog = page.getByRole('dialog', { name: `Delete “${name}”?` });
    await dialog.waitFor();
    await assertAccessible(page, 'automations-delete-dark');
    // Cancel is the safe default: nothing is deleted.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    assert.equal((await call(user.caller, `${API}/automations/${made.body.id}`)).status, 200);
    // Deleted from its own page: back at the list, which says so.
    await row.getByRole('link', { name, exact: true }).click();
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    await page.getByRole('button', { name: `Delete ${name}` }).click();
    await dialog.getByRole('button', { name: 'Delete automation' }).click();
    await page.waitForURL('**/console/automations');
    await page.getByRole('status').filter({ hasText: `Deleted “${name}”` }).waitFor();
    await page.getByText('No automations yet').waitFor();
    assert.equal((await call(user.caller, `${API}/automations/${made.body.id}`)).status, 404);
    await page.context().close();
  });
});
