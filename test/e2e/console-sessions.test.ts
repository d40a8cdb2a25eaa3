import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { putAgent } from '../support/agents.js';
import { ARTIFACTS, assertAccessible, launchBrowser, signedIn as signIn } from '../support/browser.js';
import { sessionOf, statusOf, userWithRole } from '../support/console-users.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, createSession, newKey } from '../support/http.js';
import { ADMIN, bootstrap, call, type Caller, createKey, listSessionIds, signToken, until } from '../support/identity.js';

// The admin console (/console) in a real browser, Debian's chromium driven by playwright-core: the
// sessions explorer, a session's page and the inbox for operators and viewers (sign-in and a
// session's live timeline: console.test.ts).

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

const sessionLink = (page: Page, id: string) => page.locator(`a[href="/console/sessions/${id}"]`);

// The sessions half of the console for people with a role: an operator (or viewer) is another
// product user than the sessions' owner, so everything goes through the admin routes.
describe('console: sessions explorer, session page and inbox', () => {
  let alice: { userId: string; caller: Caller };
  let operator: { userId: string; caller: Caller };
  let viewer: { userId: string; caller: Caller };
  /** Alice's session whose turn waits at a question (left open for the read-only and layout tests). */
  let waiting: { id: string; question: string };

  before(async () => {
    alice = await userWithRole('alice', null);
    operator = await userWithRole('operator', 'operator');
    viewer = await userWithRole('viewer', 'viewer');
    const question = `Which size, ${randomUUID().slice(0, 8)}?`;
    const session = await sessionOf(alice.caller, { title: 'Waiting for a size', input: `[[tool:calculator {"expression":"2+2"}]] [[ask:${question}]]` });
    await statusOf(alice.caller, session.id, 'requires_action');
    waiting = { id: session.id, question };
  });

  const asOperator = (options: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark' } = {}) => signIn(browser, { apiKey: operator.caller.token, ...options });

  it("finds another user's session through the explorer's search; the filters live in the address bar", async () => {
    const nonce = randomUUID().slice(0, 8);
    const session = await sessionOf(alice.caller, { title: `Console search ${nonce}`, input: `hello ${nonce}` });
    await statusOf(alice.caller, session.id, 'completed');
    const page = await asOperator();
    await page.getByLabel('Search titles').fill(nonce);
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.waitForURL(new RegExp(`[?&]q=${nonce}`));
    const table = page.getByRole('table', { name: 'Sessions, newest first' });
    await sessionLink(page, session.id).waitFor();
    // The unfiltered page may still be on screen for a moment: until the search's answer replaces it.
    const narrowed = await until(async () => ((await table.getByRole('row').count()) === 2 ? true : undefined), { attempts: 100, intervalMs: 100 });
    assert.equal(narrowed, true, 'the header row and the one match');
    assert.equal(await table.getByTitle(`owner ${alice.userId}`).count(), 1, 'the owner is shown');
    assert.equal(await table.getByRole('cell', { name: 'completed' }).count(), 1);
    await assertAccessible(page, 'sessions-search');

    // The filter survives a reload (it is in the URL); another filter that matches nothing says so; Back restores the first.
    await page.reload();
    await sessionLink(page, session.id).waitFor();
    assert.equal(await page.getByLabel('Search titles').inputValue(), nonce);
    await page.getByLabel('Status', { exact: true }).selectOption('failed');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page.getByText('No session matches these filters').waitFor();
    assert.match(page.url(), /status=failed/);
    await page.goBack();
    await sessionLink(page, session.id).click();

    // Not the operator's session: no event stream, the admin timeline (polled while active) shows the model's answer.
    const timeline = page.getByRole('region', { name: 'Timeline' });
    await timeline.getByText(`Echo: hello ${nonce}`).waitFor();
    await timeline.getByText(/Not your session/).waitFor();
    await page.context().close();
  });

  it('shows owners by name or subject, never by a cut id, in the explorer, on the session page and in the inbox', async () => {
    const nonce = randomUUID().slice(0, 8);
    const subject = `carol-${nonce}`;
    const carolKey = await createKey({ user_subject: subject });
    const carol: Caller = { name: 'carol', token: carolKey.secret };
    const question = `Owners ${nonce}, which one?`;
    const ofBootstrap = await sessionOf(bootstrap, { title: `Owners ${nonce} bootstrap`, input: `[[ask:${question}]]` });
    const ofCarol = await sessionOf(carol, { title: `Owners ${nonce} carol` });
    const ofAlice = await sessionOf(alice.caller, { title: `Owners ${nonce} alice` });
    const page = await asOperator();
    await page.goto(`${env.apiUrl}/console/sessions?q=${nonce}`);
    const table = page.getByRole('table', { name: 'Sessions, newest first' });
    for (const session of [ofBootstrap, ofCarol, ofAlice]) await sessionLink(page, session.id).waitFor();
    const ownerOf = async (session: { id: string }) => (await table.getByRole('row').filter({ has: sessionLink(page, session.id) }).getByRole('cell').nth(1).textContent())?.trim();
    assert.equal(await ownerOf(ofBootstrap), 'bootstrap', 'the bootstrap administrator by its name');
    assert.equal(await ownerOf(ofCarol), subject, "a user by their tokens' subject");
    assert.equal(await ownerOf(ofAlice), 'user without a name', 'a user known by id only says so (the id is in the title)');
    assert.equal(await table.getByTitle(`owner ${alice.userId}`).count(), 1);
    await page.screenshot({ path: path.join(ARTIFACTS, 'console-owners.png'), fullPage: true });
    await sessionLink(page, ofBootstrap.id).click();
    await page.getByText(/ · owner bootstrap/).waitFor();

    // The inbox names the owner of a waiting session the same way.
    await statusOf(bootstrap, ofBootstrap.id, 'requires_action');
    await page.goto(`${env.apiUrl}/console/inbox`);
    const inbox = page.getByRole('link', { name: question });
    await inbox.waitFor();
    const row = page.getByRole('row').filter({ has: inbox });
    assert.equal((await row.getByRole('cell').nth(3).textContent())?.trim(), 'bootstrap');
    await page.context().close();
    // Nothing of the bootstrap administrator's is left waiting for other files to find.
    const cancelled = await call(bootstrap, `${API}/sessions/${ofBootstrap.id}/events`, { body: { events: [{ type: 'agent.session.input.cancel' }] }, idempotencyKey: newKey('cancel') });
    assert.equal(cancelled.status, 202, cancelled.text);
  });

  it("lists a product user's own sessions a page at a time as the table scrolls, rendering only the rows in view", async () => {
    const owner = await userWithRole('many sessions', null);
    const total = 120;
    for (let batch = 0; batch < total; batch += 20) {
      await Promise.all(Array.from({ length: 20 }, (_, index) => sessionOf(owner.caller, { title: `Row ${String(batch + index).padStart(3, '0')}` })));
    }
    const ids = await listSessionIds(owner.caller);
    assert.equal(ids.length, total);
    const page = await signIn(browser, { apiKey: owner.caller.token });
    const table = page.getByRole('table', { name: 'Your sessions, newest first' });
    await page.getByText('50 sessions loaded; more load as you scroll.').waitFor();
    assert.equal(await table.getAttribute('aria-rowcount'), '-1', 'the total is not known yet');
    const rendered = await table.locator('tbody tr:not(.vspacer)').count();
    assert.ok(rendered > 5 && rendered < 50, `only the rows in view (plus an overscan) are rendered: ${rendered}`);
    assert.equal(await table.getByRole('columnheader', { name: 'Owner' }).count(), 0, 'a product user sees only their own sessions');
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Inbox' }).count(), 0);
    await assertAccessible(page, 'sessions-own');

    // Scrolling to the end loads the next page (and only when the end comes into view).
    const scroller = page.getByRole('region', { name: 'Your sessions, newest first (scrolls)' });
    await scroller.evaluate((element) => element.scrollTo(0, element.scrollHeight));
    await page.getByText('100 sessions loaded; more load as you scroll.').waitFor({ timeout: 10_000 });
    await scroller.evaluate((element) => element.scrollTo(0, element.scrollHeight));
    await page.getByText(`${total} sessions loaded, all of them.`).waitFor({ timeout: 10_000 });
    assert.equal(await table.getAttribute('aria-rowcount'), String(total + 1));
    await scroller.evaluate((element) => element.scrollTo(0, element.scrollHeight));
    // The last row is the oldest session, as the API orders them.
    await table.locator(`tr[aria-rowindex="${total + 1}"] a[href="/console/sessions/${ids[total - 1]}"]`).waitFor({ timeout: 10_000 });
    assert.equal(await table.locator('tr[aria-rowindex="2"]').count(), 0, 'the first rows left the DOM when scrolled away');
    assert.ok((await table.locator('tbody tr:not(.vspacer)').count()) < 60);
    await page.context().close();
  });

  it('the inbox lists the waiting session, filters by kind, and links to the session', async () => {
    const page = await asOperator();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Inbox' }).click();
    await page.getByRole('heading', { name: 'Inbox' }).waitFor();
    const link = page.getByRole('link', { name: waiting.question });
    await link.waitFor();
    assert.equal(await link.getAttribute('href'), `/console/sessions/${waiting.id}`);
    await assertAccessible(page, 'inbox');

    const filtered = page.waitForResponse((response) => response.url().includes('/api/v1/admin/waitpoints') && response.url().includes('kind=approval'));
    await page.getByLabel('Kind').selectOption('approval');
    await page.getByRole('button', { name: 'Apply filter' }).click();
    assert.equal((await filtered).status(), 200);
    await page.locator('[aria-busy="true"]').waitFor({ state: 'detached' });
    assert.equal(await link.count(), 0, 'a question is not an approval');
    await page.goBack();
    await link.click();
    await page.getByLabel(waiting.question).waitFor();
    await page.context().close();
  });

  it("an operator answers another user's question from the console", async () => {
    const nonce = randomUUID().slice(0, 8);
    const question = `Which colour, ${nonce}?`;
    const session = await sessionOf(alice.caller, { title: `Question ${nonce}`, input: `[[ask:${question}]]` });
    await statusOf(alice.caller, session.id, 'requires_action');
    const page = await asOperator();
    await page.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    await page.getByLabel(question).fill('teal');
    await assertAccessible(page, 'waitpoint-operator');
    await page.getByRole('button', { name: 'Submit answer' }).click();
    await statusOf(alice.caller, session.id, 'completed');
    // The page is polled (another owner's session): the resolution shows without a reload.
    await page.getByRole('region', { name: 'Timeline' }).getByText('Answered: teal').waitFor({ timeout: 10_000 });
    await page.getByText('completed', { exact: true }).waitFor({ timeout: 10_000 });
    // The run that stopped at the question ended there once the answer resumed the turn: it no longer requires action.
    const runHeads = page.getByRole('region', { name: 'Timeline' }).getByRole('heading', { level: 4 });
    await runHeads.filter({ hasText: /^Run 1 · ended at waitpoint/ }).waitFor({ timeout: 10_000 });
    assert.equal(await runHeads.filter({ hasText: /requires action/ }).count(), 0, (await runHeads.allTextContents()).join(' | '));
    const timeline = await call(bootstrap, `${ADMIN}/sessions/${session.id}/timeline`);
    assert.equal(timeline.status, 200, timeline.text);
    const resolved = timeline.body.data[0].runs.flatMap((run: any) => run.steps).find((step: any) => step.kind === 'waitpoint');
    assert.deepEqual(resolved?.waitpoint.response.answers.map((answer: any) => answer.answer), ['teal'], 'the operator’s answer resumed the turn');
    await page.context().close();
  });

  it('approves a tool call from its Approve button', async () => {
    const { id: agentId } = await putAgent({ model: 'scripted:echo', tools: [{ type: 'builtin', name: 'calculator', requires_approval: true }] });
    const session = await sessionOf(alice.caller, { agent_id: agentId, title: 'Needs an approval', input: '[[tool:calculator {"expression":"6*7"}]]' });
    await statusOf(alice.caller, session.id, 'requires_action');
    const page = await asOperator();
    await page.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    await page.getByRole('heading', { name: 'Approve tool calls' }).waitFor();
    await page.getByText('"expression": "6*7"').waitFor();
    await assertAccessible(page, 'approval');
    await page.getByRole('button', { name: 'Approve', exact: true }).click();
    await statusOf(alice.caller, session.id, 'completed');
    const timeline = page.getByRole('region', { name: 'Timeline' });
    await timeline.getByText(/Tool call · calculator · succeeded · .* · approved/).waitFor({ timeout: 10_000 });
    const read = await call(bootstrap, `${ADMIN}/sessions/${session.id}/timeline`);
    const tool = read.body.data[0].runs.flatMap((run: any) => run.steps).find((step: any) => step.kind === 'tool_call');
    assert.equal(tool?.tool_call.approval, 'approve');
    assert.equal(tool?.tool_call.success, true);
    assert.match(tool?.tool_call.output, /42/);
    await page.context().close();
  });

  it("an operator sends a client tool's result in the application's place", async () => {
    const { id: agentId } = await putAgent({
      model: 'scripted:echo',
      tools: [{ type: 'function', name: 'lookup_order', description: 'Look an order up', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } }],
    });
    const session = await sessionOf(alice.caller, { agent_id: agentId, title: 'Waits for its client', input: '[[tool:lookup_order {"order_id":"A-1042"}]]' });
    await statusOf(alice.caller, session.id, 'requires_action');
    const page = await asOperator();
    await page.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    await page.getByLabel('Result of lookup_order').fill('{"status":"packed"}');
    await assertAccessible(page, 'client-tool');
    await page.getByRole('button', { name: 'Send result' }).click();
    await statusOf(alice.caller, session.id, 'completed');
    const items = await call(alice.caller, `${API}/sessions/${session.id}/items?order=asc`);
    assert.equal(items.body.data.find((item: any) => item.type === 'function_call_output')?.output, '{"status":"packed"}');
    await page.context().close();
  });

  it('the timeline shows model calls and a tool call with its result, from the newest page only', async () => {
    const session = await createSession('[[tool:calculator {"expression":"2+3*4"}]]');
    await statusOf(bootstrap, session.id, 'completed');
    const page = await signedIn();
    const reads: URL[] = [];
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (/\/(items|timeline)$/.test(url.pathname)) reads.push(url);
    });
    await page.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    const timeline = page.getByRole('region', { name: 'Timeline' });
    await timeline.getByText(/Tool call · calculator · succeeded/).waitFor();
    assert.equal(await timeline.getByText(/^Model call · /).count(), 2, 'the call that asked for the tool, and the answer');
    assert.match(await timeline.getByText(/^Model call · /).first().innerText(), /tokens|in ·|no usage/);
    assert.match(await timeline.locator('pre').filter({ hasText: /^14/ }).innerText(), /14/);
    await assertAccessible(page, 'timeline');

    // The owner also has the items: the call and its output.
    await page.getByLabel('Messages').check();
    await timeline.getByText('tool call · calculator').waitFor();
    await timeline.getByText('tool result').waitFor();
    await assertAccessible(page, 'timeline-messages');
    assert.ok(reads.length >= 2, reads.map(String).join(' '));
    for (const url of reads) {
      assert.equal(url.searchParams.get('order'), 'desc', `${url}: newest first`);
      assert.ok(Number(url.searchParams.get('limit')) <= 50, `${url}: one page`);
    }
    await page.context().close();
  });

  it('shows a run\'s exact model requests to an administrator signed in with a user token, and to no API key', async () => {
    const session = await createSession('[[tool:calculator {"expression":"6*7"}]]');
    await statusOf(bootstrap, session.id, 'completed');
    // The bootstrap administrator's API key: the timeline, without the model requests (an administrator's user token only).
    const withKey = await signedIn();
    await withKey.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    await withKey.getByRole('region', { name: 'Timeline' }).getByText(/Tool call · calculator · succeeded/).waitFor();
    assert.equal(await withKey.getByRole('button', { name: /^Model requests of run/ }).count(), 0);
    await withKey.context().close();

    const token: Caller = { name: 'admin token', token: await signToken({ subject: `console-admin-${randomUUID()}` }) };
    const me = await call(token, '/api/v1/me');
    assert.equal(me.status, 200, me.text);
    assert.equal((await call(bootstrap, `${ADMIN}/users/${me.body.user_id}/role`, { method: 'PUT', body: { role: 'admin' } })).status, 200);
    const page = await signIn(browser, { apiKey: token.token });
    await page.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    await page.getByRole('button', { name: 'Model requests of run 1' }).click();
    const requests = page.getByRole('region', { name: 'Model requests of run 1' });
    await requests.getByText(/^Model request 1 · /).click();
    await requests.getByText(/^Model request 3 · /).waitFor();
    assert.match(await requests.locator('pre').first().innerText(), /6\*7/, 'the recorded request holds the user message');
    const api = await call(token, `${ADMIN}/sessions/${session.id}/runs/${(await call(bootstrap, `${ADMIN}/sessions/${session.id}/timeline`)).body.data[0].runs[0].id}/model-requests`);
    assert.equal(api.body.data.length, 2, 'the page shows what the API has: the call asking for the tool, and the answer');
    await assertAccessible(page, 'model-requests');
    await page.context().close();
  });

  it('the session page passes axe at phone width and in the dark theme', async () => {
    const phone = await asOperator({ viewport: { width: 390, height: 844 } });
    const pageWidth = () => phone.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    await assertAccessible(phone, 'sessions-phone');
    assert.ok((await pageWidth()) <= 390, 'the sessions table scrolls inside its region, not the page');
    await phone.goto(`${env.apiUrl}/console/sessions/${waiting.id}`);
    await phone.getByLabel(waiting.question).waitFor();
    await phone.getByRole('region', { name: 'Timeline' }).getByText(/Tool call · calculator/).waitFor();
    await assertAccessible(phone, 'session-phone');
    const width = await pageWidth();
    assert.ok(width <= 390, `the page does not scroll sideways at 390 px: ${width}`);
    await phone.context().close();

    const dark = await asOperator({ colorScheme: 'dark' });
    await dark.goto(`${env.apiUrl}/console/sessions/${waiting.id}`);
    await dark.getByLabel(waiting.question).waitFor();
    await dark.getByRole('region', { name: 'Timeline' }).getByText(/Tool call · calculator/).waitFor();
    await assertAccessible(dark, 'session-dark');
    await dark.goto(`${env.apiUrl}/console/inbox`);
    await dark.getByRole('link', { name: waiting.question }).waitFor();
    await assertAccessible(dark, 'inbox-dark');
    await dark.context().close();
  });

  it("an operator follows another user's cooperation tree to its members, stops it and continues it", async () => {
    // Two members that run for a long time (their model waits 30 s): the tree is active while the operator looks.
    const member = (name: string) => `[[tool:create_subagent {"task":"[[delay:30000]] task ${name}","name":"${name}"}]]`;
    const root = await sessionOf(alice.caller, { agent_id: 'coordinator', title: 'Coordinates two members', input: `${member('first')} ${member('second')} [[tool:wait_subagents {}]]` });
    const state = async () => (await call(alice.caller, `${API}/sessions/${root.id}/state`)).body;
    const running = await until(async () => {
      const read = await state();
      return read.agent_state?.cooperation?.members?.filter((m: any) => m.status === 'in_progress').length === 2 ? read : undefined;
    }, { attempts: 200, intervalMs: 100 });
    assert.ok(running, 'both members run');
    const firstId = running.agent_state.cooperation.members.find((m: any) => m.name === 'first').session_id;

    const page = await asOperator();
    await page.goto(`${env.apiUrl}/console/sessions/${root.id}`);
    const tree = page.getByRole('navigation', { name: 'Cooperation tree' });
    await tree.getByRole('link', { name: /^first \(coordinator\)/ }).waitFor();
    assert.equal(await tree.getByRole('link', { name: /^second \(coordinator\)/ }).count(), 1);
    await assertAccessible(page, 'tree');

    await page.getByRole('button', { name: 'Stop tree', exact: true }).click();
    const stopped = await until(async () => {
      const read = (await state()).agent_state.cooperation;
      return read.stopped && !read.stopping ? read : undefined;
    }, { attempts: 200, intervalMs: 100 });
    assert.ok(stopped, 'the tree stopped');
    assert.deepEqual(stopped.members.map((m: any) => m.status), ['cancelled', 'cancelled']);

    await page.getByRole('button', { name: 'Continue tree', exact: true }).click();
    await page.getByText('The tree continues.').waitFor();
    assert.equal((await state()).agent_state.cooperation.stopped, false, 'the tree continued');

    // A member's page links back to the root.
    await tree.getByRole('link', { name: /^first/ }).click();
    await page.waitForURL(`**/console/sessions/${firstId}`);
    await page.getByRole('navigation', { name: 'Cooperation tree' }).getByRole('link', { name: /^Root session/ }).waitFor();
    await page.context().close();
  });

  it("a viewer reads another user's waiting session, its answer form and controls disabled", async () => {
    const page = await signIn(browser, { apiKey: viewer.caller.token });
    await page.goto(`${env.apiUrl}/console/sessions/${waiting.id}`);
    const answer = page.getByLabel(waiting.question);
    await answer.waitFor();
    assert.equal(await answer.isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'Submit answer' }).isDisabled(), true);
    assert.equal(await page.getByRole('button', { name: 'Cancel turn' }).isDisabled(), true);
    assert.ok((await page.getByText(/Your role \(viewer\) may read this session but not act on it/).count()) >= 1);
    await assertAccessible(page, 'session-viewer');
    assert.equal((await call(alice.caller, `${API}/sessions/${waiting.id}`)).body.status, 'requires_action', 'still waiting');
    await page.context().close();
  });
});
