import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Browser } from 'playwright-core';
import { createSessionWith, fakeModel, putAgent } from '../support/agents.js';
import { assertAccessible, launchBrowser, signedIn as signIn } from '../support/browser.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, createSession, http } from '../support/http.js';
import { until } from '../support/identity.js';

// The admin console (/console) in a real browser: Debian's chromium driven by playwright-core.

let browser: Browser;
let fake: FakeOpenAi;

before(async () => {
  browser = await launchBrowser();
  fake = await startFakeOpenAi(env.fakeOpenAiPort);
});
after(async () => {
  await browser?.close();
  await fake?.close();
});

const signedIn = () => signIn(browser);

describe('console', () => {
  it('refuses a wrong key and signs in with a right one, in this tab only', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${env.apiUrl}/console/`);
    await page.getByLabel('API key').fill('yx_not_a_key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').waitFor();
    assert.match(await page.getByRole('alert').innerText(), /not valid/);
    await page.getByLabel('API key').fill(env.apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    const other = await context.newPage();
    await other.goto(`${env.apiUrl}/console/`);
    await other.getByLabel('API key').waitFor();
    await context.close();
  });

  it('lists sessions, opens one, and shows its timeline', async () => {
    const session = await createSession('hello from the console test');
    const done = await until(async () => ((await http(`${API}/sessions/${session.id}`)).body.status === 'completed' ? true : undefined), { attempts: 100, intervalMs: 100 });
    assert.equal(done, true);
    const page = await signedIn();
    await assertAccessible(page, 'sessions');
    await page.locator(`a[href="/console/sessions/${session.id}"]`).click();
    const timeline = page.getByRole('region', { name: 'Timeline' });
    await timeline.getByText('Echo: hello from the console test').waitFor();
    await assertAccessible(page, 'session');
    for (const name of ['Agents', 'API keys', 'Audit', 'Queues']) assert.equal(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name }).count(), 1, name);
    await page.context().close();
  });

  it('shows the text of a turn as it streams, then its cancellation', async () => {
    const { id, model } = await putAgent({});
    // The model streams two chunks and goes silent: the turn stays in progress until cancelled.
    fake.script(fakeModel(model), [{ text: ['Streaming ', 'live text'], stall: true }]);
    const session = await createSessionWith(id, 'stream something');
    const page = await signedIn();
    await page.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    await page.getByRole('region', { name: 'Timeline' }).getByText('Streaming live text').waitFor();
    await page.getByRole('button', { name: 'Cancel turn' }).click();
    const cancelled = await until(async () => ((await http(`${API}/sessions/${session.id}`)).body.status === 'cancelled' ? true : undefined), { attempts: 100, intervalMs: 100 });
    assert.equal(cancelled, true, 'the button cancelled the turn');
    await page.getByText('cancelled', { exact: true }).waitFor();
    await page.context().close();
  });

  it('answers a question waitpoint from its form', async () => {
    const session = await createSession('[[ask:Which colour?]]');
    const waiting = await until(async () => ((await http(`${API}/sessions/${session.id}`)).body.status === 'requires_action' ? true : undefined), { attempts: 100, intervalMs: 100 });
    assert.equal(waiting, true);
    const page = await signedIn();
    await page.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    // The session's title is its first message, which holds the question too: the answer's field by its role.
    await page.getByRole('textbox', { name: 'Which colour?' }).fill('teal');
    await assertAccessible(page, 'waitpoint');
    await page.getByRole('button', { name: 'Submit answer' }).click();
    const settled = await until(async () => ((await http(`${API}/sessions/${session.id}`)).body.status === 'completed' ? true : undefined), { attempts: 100, intervalMs: 100 });
    assert.equal(settled, true, 'the answer resumed the turn');
    await page.context().close();
  });
});
