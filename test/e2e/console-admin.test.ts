import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { putAgent } from '../support/agents.js';
import { assertAccessible, launchBrowser, signedIn } from '../support/browser.js';
import { env } from '../support/env.js';
import { http } from '../support/http.js';
import { until } from '../support/identity.js';

// The console's administration pages (agents, API keys, users, audit, queues) in a real browser:
// each flow is driven through the page, and its outcome asserted through the API.

const ADMIN = '/api/v1/admin';
let browser: Browser;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

async function open(page: Page, link: string, heading = link): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: link, exact: true }).click();
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
}

async function agentVersion(id: string): Promise<any> {
  const list = await http(`${ADMIN}/agents`);
  assert.equal(list.status, 200, list.text);
  return list.body.data.find((a: any) => a.id === id);
}

describe('console: administration pages', () => {
  it('agents: edits a definition as JSON — invalid JSON caught before sending, a refused one shown per field, the fix saved — and lists both versions', async () => {
    const { id } = await putAgent({ model: 'scripted:echo', instructions: 'first instructions' });
    const page = await signedIn(browser);
    await open(page, 'Agents');
    const link = page.getByRole('link', { name: `Agent ${id}`, exact: true });
    await link.waitFor();
    await assertAccessible(page, 'agents');
    await link.click();
    await page.getByRole('heading', { name: `Agent ${id}`, level: 1 }).waitFor();
    assert.equal(new URL(page.url()).pathname, `/console/agents/${id}`);

    const editor = page.getByLabel('Agent definition (JSON)');
    await editor.waitFor();
    const original = JSON.parse(await editor.inputValue());
    assert.equal(original.instructions, 'first instructions', 'the editor holds the definition as written');
    const save = page.getByRole('button', { name: 'Save', exact: true });

    // Not JSON: reported in the page, nothing sent.
    await editor.fill('{ "name": "half a definition", ');
    await save.click();
    await page.getByRole('alert').filter({ hasText: 'not valid JSON' }).waitFor();
    assert.equal((await agentVersion(id)).yuxi.version, 1, 'invalid JSON was not sent');

    // Valid JSON the API refuses: each field with its message, named by the textarea.
    await editor.fill(JSON.stringify({ ...original, name: '', limits: { max_tool_calls: -1 } }, null, 2));
    await save.click();
    const problems = page.getByRole('alert').filter({ has: page.getByRole('heading', { name: /Not saved: 2 fields need fixing/ }) });
    await problems.waitFor();
    const items = (await problems.getByRole('listitem').allInnerTexts()).map((text) => text.trim());
    assert.ok(items.some((text) => text.startsWith('limits.max_tool_calls') && /must be an integer 0–1000/.test(text)), items.join(' | '));
    assert.ok(items.some((text) => text.startsWith('name') && /non-empty/.test(text)), items.join(' | '));
    assert.equal(await editor.getAttribute('aria-invalid'), 'true');
    const describedBy = (await editor.getAttribute('aria-describedby'))?.split(' ') ?? [];
    assert.ok(describedBy.includes((await problems.getAttribute('id'))!), 'the textarea is described by the field errors');
    await assertAccessible(page, 'agent-edit');
    assert.equal((await agentVersion(id)).yuxi.version, 1, 'the refused definition changed nothing');

    // Fixed: saved as version 2.
    await editor.fill(JSON.stringify({ ...original, instructions: 'second instructions', limits: { max_tool_calls: 4 } }, null, 2));
    await save.click();
    await page.getByRole('status').filter({ hasText: 'is now version 2' }).waitFor();
    assert.equal(await problems.count(), 0, 'the field errors are gone');
    const saved = await agentVersion(id);
    assert.deepEqual([saved.yuxi.version, saved.yuxi.instructions, saved.yuxi.limits.max_tool_calls], [2, 'second instructions', 4]);
    const versions = await http(`${ADMIN}/agents/${id}/versions`);
    assert.deepEqual(
      versions.body.data.map((v: any) => [v.version, v.definition.instructions]),
      [
        [2, 'second instructions'],
        [1, 'first instructions'],
      ],
    );

    // The history on the page: both versions, each one's JSON on request.
    const history = page.getByRole('region', { name: 'Version history' });
    await history.getByRole('rowheader', { name: /Version 2/ }).waitFor();
    assert.deepEqual(
      (await history.getByRole('rowheader').allInnerTexts()).map((t) => t.replace(/\s+/g, ' ').trim()),
      ['Version 2 current', 'Version 1'],
    );
    await history.getByRole('button', { name: 'View JSON of version 1' }).click();
    const view = page.getByRole('region', { name: /^Version 1, saved/ });
    await view.getByText('"first instructions"').waitFor();
    await page.context().close();
  });

  it('agents: a new agent from the template, then deleted after a confirmation', async () => {
    const id = `console-${randomUUID().slice(0, 8)}`;
    const page = await signedIn(browser);
    await open(page, 'Agents');
    await page.getByRole('button', { name: 'New agent' }).click();
    const form = page.getByRole('region', { name: 'New agent' });
    // No id yet: said before anything is sent.
    await form.getByRole('button', { name: 'Create agent' }).click();
    await form.getByRole('alert').filter({ hasText: 'Enter the agent id first' }).waitFor();
    const idField = form.getByLabel('Agent id');
    assert.equal(await idField.evaluate((el) => el === el.ownerDocument.activeElement), true, 'focus is on the field to fix');
    await idField.fill(id);
    await form.getByRole('button', { name: 'Create agent' }).click();
    await page.getByRole('heading', { name: 'My agent', level: 1 }).waitFor();
    const created = await agentVersion(id);
    assert.deepEqual([created.yuxi.version, created.model], [1, 'scripted:echo']);

    await page.getByRole('button', { name: 'Delete agent' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete My agent?' });
    await confirm.waitFor();
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await confirm.waitFor({ state: 'hidden' });
    assert.ok(await agentVersion(id), 'cancelled: still there');
    await page.getByRole('button', { name: 'Delete agent' }).click();
    await confirm.getByRole('button', { name: 'Delete agent' }).click();
    await page.getByRole('heading', { name: 'Agents', level: 1 }).waitFor();
    assert.equal(await agentVersion(id), undefined, 'deleted');
    assert.equal((await http(`/api/v1/agents/${id}`)).status, 404);
    await page.context().close();
  });

  it('API keys: a key created with its secret shown once (it works), revoked after a confirmation (refused from then on); both in the audit trail', async () => {
    const name = `console key ${randomUUID().slice(0, 8)}`;
    const page = await signedIn(browser);
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.apiUrl });
    await open(page, 'API keys');
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByRole('radio', { name: /^full/ }).check();
    await page.getByRole('button', { name: 'Create key' }).click();

    const dialog = page.getByRole('dialog', { name: `Key “${name}” created` });
    await dialog.waitFor();
    await dialog.getByText('you will not see it again').waitFor();
    const secret = await dialog.getByLabel('Secret').inputValue();
    assert.match(secret, /^yuxi_/);
    await dialog.getByRole('button', { name: 'Copy' }).click();
    await dialog.getByRole('status').filter({ hasText: /Copied|Ctrl\+C/ }).waitFor();
    await assertAccessible(page, 'keys-secret');
    const me = await http('/api/v1/me', { key: secret });
    assert.equal(me.status, 200, 'the secret shown is a working key');
    assert.equal(me.body.access, 'full');
    const keyId = me.body.key_id as string;

    await dialog.getByRole('button', { name: 'Done' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal((await page.content()).includes(secret), false, 'the secret is gone from the page');
    const row = page.getByRole('row', { name: new RegExp(name) });
    await row.waitFor();
    assert.equal((await row.innerText()).includes(secret), false, 'the list shows only the prefix');
    await assertAccessible(page, 'keys');

    await row.getByRole('button', { name: `Revoke ${name}` }).click();
    const confirm = page.getByRole('dialog', { name: `Revoke “${name}”?` });
    await confirm.waitFor();
    await confirm.getByRole('button', { name: 'Revoke key' }).click();
    await page.getByRole('status').filter({ hasText: `Revoked “${name}”` }).waitFor();
    const refused = await until(async () => ((await http('/api/v1/me', { key: secret })).status === 401 ? true : undefined), { attempts: 50, intervalMs: 100 });
    assert.equal(refused, true, 'the API refuses the revoked key');
    const listed = (await http(`${ADMIN}/api-keys`)).body.data.find((k: any) => k.id === keyId);
    assert.notEqual(listed.revoked_at, null);
    // The list is read again after the revoke: the row leaves once that answer is in.
    await row.waitFor({ state: 'detached', timeout: 10_000 });
    assert.equal(await row.count(), 0, 'revoked keys are hidden by default');

    await open(page, 'Audit');
    for (const action of ['API key created', 'API key revoked']) {
      await page.getByRole('row').filter({ hasText: action }).filter({ hasText: name }).first().waitFor();
    }
    await assertAccessible(page, 'audit');
    await page.context().close();
  });

  it('users: grants a role and removes it (the API has each), and lists users by kind', async () => {
    const subject = `console-user-${randomUUID().slice(0, 8)}`;
    const key = await http(`${ADMIN}/api-keys`, { body: { name: 'console users', access: 'full', user_subject: subject } });
    assert.equal(key.status, 201, key.text);
    const page = await signedIn(browser);
    await open(page, 'Users');
    const row = page.getByRole('row', { name: new RegExp(subject) });
    await row.waitFor();
    await assertAccessible(page, 'users');

    await row.getByLabel(`Role of ${subject}`).selectOption('viewer');
    await row.getByRole('button', { name: /^Save role/ }).click();
    await page.getByRole('status').filter({ hasText: `${subject} is now a viewer` }).waitFor();
    assert.equal((await http('/api/v1/me', { key: key.body.secret })).body.role, 'viewer');

    await row.getByLabel(`Role of ${subject}`).selectOption('');
    await row.getByRole('button', { name: /^Save role/ }).click();
    await page.getByRole('status').filter({ hasText: `${subject} holds no role now` }).waitFor();
    assert.equal((await http('/api/v1/me', { key: key.body.secret })).body.role, null);

    // Suspend: the user's key is refused at once; reactivate: it works again.
    await row.getByRole('button', { name: `Suspend ${subject}` }).click();
    await page.getByRole('status').filter({ hasText: `${subject} is suspended` }).waitFor();
    const refused = await http('/api/v1/me', { key: key.body.secret });
    assert.equal(refused.status, 401, refused.text);
    assert.equal(refused.body.error.code, 'user_suspended');
    await row.getByText('suspended', { exact: true }).waitFor();
    await row.getByRole('button', { name: `Reactivate ${subject}` }).click();
    await page.getByRole('status').filter({ hasText: `${subject} is active again` }).waitFor();
    assert.equal((await http('/api/v1/me', { key: key.body.secret })).status, 200);

    await page.getByLabel('Kind').selectOption('end_user');
    await page.getByRole('table').or(page.getByText('No end users yet')).first().waitFor();
    // The product users' table is on screen until the end users' answer replaces it.
    await page.getByRole('row', { name: new RegExp(subject) }).waitFor({ state: 'detached', timeout: 10_000 });
    assert.equal(await page.getByRole('row', { name: new RegExp(subject) }).count(), 0, 'a product user is not an end user');
    await page.context().close();
  });

  it('queues: depths, workers and runs, refreshed every few seconds; a 503 is a clear error state', async () => {
    const page = await signedIn(browser);
    let reads = 0;
    page.on('request', (request) => {
      if (new URL(request.url()).pathname === `${ADMIN}/queues`) reads++;
    });
    await open(page, 'Queues');
    await page.getByRole('rowheader', { name: 'session-dispatch' }).waitFor();
    await page.getByText('Live workers').waitFor();
    const live = (await http(`${ADMIN}/queues`)).body;
    assert.ok(live.workers.length >= 1, 'the stack runs a worker');
    await page.getByRole('rowheader', { name: live.workers[0].id }).waitFor();
    await assertAccessible(page, 'queues');
    const refreshed = await until(async () => (reads >= 3 ? true : undefined), { attempts: 60, intervalMs: 250 });
    assert.equal(refreshed, true, `auto-refresh read the queues ${reads} times in 15 s`);

    // The page's handling of a 503 (Redis or Postgres down): the answer is replaced in this browser
    // only, since stopping Redis would disturb every other test of the shared stack.
    await page.route(`**${ADMIN}/queues`, (route) =>
      route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'service_unavailable', message: 'Redis is unreachable', type: 'unavailable', retryable: false, request_id: 'req_test', details: {} } }),
      }),
    );
    await page.getByRole('button', { name: 'Refresh now' }).click();
    await page.getByRole('alert').filter({ hasText: 'Queue status is unavailable right now' }).waitFor({ timeout: 15_000 });
    await page.unroute(`**${ADMIN}/queues`);
    await page.getByRole('button', { name: 'Refresh now' }).click();
    await page.getByRole('alert').waitFor({ state: 'detached', timeout: 15_000 });
    await page.context().close();
  });

  it('on a phone and in the dark: queues as a viewer, agents dark', async () => {
    const subject = `console-viewer-${randomUUID().slice(0, 8)}`;
    const key = await http(`${ADMIN}/api-keys`, { body: { name: 'console viewer', access: 'full', user_subject: subject } });
    assert.equal(key.status, 201, key.text);
    assert.equal((await http(`${ADMIN}/users/${key.body.user_id}/role`, { method: 'PUT', body: { role: 'viewer' } })).status, 200);

    const phone = await signedIn(browser, { apiKey: key.body.secret, viewport: { width: 390, height: 844 } });
    const nav = phone.getByRole('navigation', { name: 'Main' });
    assert.equal(await nav.getByRole('link', { name: 'Users' }).count(), 0, 'a viewer is not offered the users page');
    await open(phone, 'Queues');
    await phone.getByRole('rowheader', { name: 'session-dispatch' }).waitFor();
    // A string: the test's TypeScript has no DOM types.
    const sideways = async () => (await phone.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth')) as number;
    assert.ok((await sideways()) <= 0, `the page does not scroll sideways (${await sideways()}px); wide tables scroll in their own region`);
    await assertAccessible(phone, 'queues-phone');
    // The viewer's own keys: a wide table with a hidden label per row, still inside its region.
    await open(phone, 'API keys');
    await phone.getByRole('row', { name: /console viewer/ }).waitFor();
    assert.ok((await sideways()) <= 0, `the keys page does not scroll sideways (${await sideways()}px)`);
    // A viewer reads the agents but edits none.
    await open(phone, 'Agents');
    await phone.getByRole('link', { name: 'Default Chatbot' }).waitFor();
    assert.equal(await phone.getByRole('button', { name: 'New agent' }).count(), 0);
    await phone.context().close();

    const dark = await signedIn(browser, { colorScheme: 'dark' });
    await open(dark, 'Agents');
    await dark.getByRole('link', { name: 'Default Chatbot' }).waitFor();
    await assertAccessible(dark, 'agents-dark');
    await dark.context().close();
  });
});
