import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible, launchBrowser, signedIn as signIn } from '../support/browser.js';
import { sessionOf, statusOf, userWithRole } from '../support/console-users.js';
import { env } from '../support/env.js';
import { API, newKey } from '../support/http.js';
import { bootstrap, call, type Caller, until } from '../support/identity.js';

// The console's fork (README "Fork") in a real browser, Debian's chromium driven by playwright-core:
// "Fork from here" on a finished turn of one's own session, and the session page's Lineage region.

let browser: Browser;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** A session of `owner` whose turns answered each of `messages` in order, and its turn ids (oldest first). */
async function sessionWithTurns(owner: Caller, title: string, messages: string[]): Promise<{ id: string; turnIds: string[] }> {
  const session = await sessionOf(owner, { title, input: messages[0] });
  const finished = (count: number) =>
    until(async () => {
      const turns = await call(owner, `${API}/sessions/${session.id}/turns?order=asc&limit=100`);
      return turns.body?.data?.length === count && turns.body.data.every((turn: any) => turn.status === 'completed') ? turns.body.data.map((turn: any) => turn.id as string) : undefined;
    }, { attempts: 150, intervalMs: 100 });
  let turnIds = await finished(1);
  for (const [index, message] of messages.slice(1).entries()) {
    const sent = await call(owner, `${API}/sessions/${session.id}/events`, { body: { events: [{ type: 'agent.session.input.message', input: message }] }, idempotencyKey: newKey('message') });
    assert.equal(sent.status, 202, sent.text);
    turnIds = await finished(index + 2);
  }
  assert.ok(turnIds, `the ${messages.length} turns of ${session.id} completed`);
  return { id: session.id, turnIds };
}

/** The id in the address bar of a session page other than `other`'s, once there. */
async function nextSessionPage(page: Page, other: string): Promise<string> {
  await page.waitForURL((url) => /^\/console\/sessions\/[0-9a-f-]{36}$/.test(url.pathname) && !url.pathname.endsWith(other));
  return new URL(page.url()).pathname.split('/').at(-1)!;
}

const lineageOf = (page: Page) => page.getByRole('region', { name: 'Lineage' });

describe('console: fork a session from a finished turn, and its lineage', () => {
  it('"Fork from here" on a finished turn opens the new session, whose Lineage links back; the source lists its fork', async () => {
    const nonce = randomUUID().slice(0, 8);
    const source = await sessionWithTurns(bootstrap, `Fork source ${nonce}`, [`first ${nonce}`, `second ${nonce}`]);
    const page = await signIn(browser);
    await page.goto(`${env.apiUrl}/console/sessions/${source.id}`);
    const firstTurn = page.locator(`#turn-${source.turnIds[0]}`);
    await firstTurn.getByRole('heading', { name: /^Turn 1 · completed/ }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Fork from here' }).count(), 2, 'one per finished turn');
    assert.equal(await lineageOf(page).count(), 0, 'neither a fork nor forked yet: no lineage');
    await assertAccessible(page, 'fork-source-before');

    await firstTurn.getByRole('button', { name: 'Fork from here' }).click();
    const forkId = await nextSessionPage(page, source.id);
    const lineage = lineageOf(page);
    // The source by its title once read (its id until then).
    const back = lineage.getByRole('link', { name: `Fork source ${nonce} (${source.id.slice(0, 8)}…${source.id.slice(-4)})` });
    await back.waitFor();
    assert.equal(await back.getAttribute('href'), `/console/sessions/${source.id}`);
    assert.match(await lineage.innerText(), /Forked from Fork source .* after turn /);
    // The page is the fork the API made: after turn 1 of the source, titled as the source.
    const fork = await call(bootstrap, `${API}/sessions/${forkId}`);
    assert.equal(fork.status, 200, fork.text);
    assert.deepEqual(fork.body.yuxi.forked_from, { session_id: source.id, turn_id: source.turnIds[0], position: 'after' });
    await page.getByRole('heading', { level: 1, name: `Fork source ${nonce}` }).waitFor();
    await assertAccessible(page, 'fork-lineage');

    // Back to the source through the lineage link: its Lineage lists the fork.
    await back.click();
    await page.waitForURL(`**/console/sessions/${source.id}`);
    const forks = lineageOf(page).getByRole('list', { name: 'Forks of this session' });
    await forks.getByRole('link').first().waitFor();
    assert.deepEqual(await forks.getByRole('link').evaluateAll((links) => links.map((a) => a.getAttribute('href'))), [`/console/sessions/${forkId}`]);
    assert.match(await forks.innerText(), /after turn /);
    await assertAccessible(page, 'fork-source-lineage');
    await page.context().close();

    // The dark theme: the region and the buttons keep their contrast.
    const dark = await signIn(browser, { colorScheme: 'dark' });
    await dark.goto(`${env.apiUrl}/console/sessions/${source.id}`);
    await lineageOf(dark).getByRole('list', { name: 'Forks of this session' }).getByRole('link').first().waitFor();
    await dark.locator(`#turn-${source.turnIds[0]}`).getByRole('button', { name: 'Fork from here' }).waitFor();
    await assertAccessible(dark, 'fork-source-lineage-dark');
    await dark.context().close();
  });

  it('offers no fork on a turn still under way, nor on another owner\u2019s session', async () => {
    const nonce = randomUUID().slice(0, 8);
    const question = `Fork or not, ${nonce}?`;
    const waiting = await sessionOf(bootstrap, { title: `Waiting ${nonce}`, input: `[[ask:${question}]]` });
    await statusOf(bootstrap, waiting.id, 'requires_action');
    const page = await signIn(browser);
    await page.goto(`${env.apiUrl}/console/sessions/${waiting.id}`);
    await page.getByLabel(question).waitFor();
    await page.getByRole('region', { name: 'Timeline' }).getByRole('heading', { name: /^Turn 1 · / }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Fork from here' }).count(), 0, 'the turn waits: nothing to fork after yet');
    await page.context().close();

    // An operator reads a user's finished session through the admin routes: a fork is the owner's.
    const owner = await userWithRole(`fork owner ${nonce}`, null);
    const operator = await userWithRole(`fork operator ${nonce}`, 'operator');
    const done = await sessionWithTurns(owner.caller, `Not the operator's ${nonce}`, [`hello ${nonce}`]);
    const asOperator = await signIn(browser, { apiKey: operator.caller.token });
    await asOperator.goto(`${env.apiUrl}/console/sessions/${done.id}`);
    await asOperator.getByRole('region', { name: 'Timeline' }).getByText(`Echo: hello ${nonce}`).waitFor();
    assert.equal(await asOperator.getByRole('button', { name: 'Fork from here' }).count(), 0);
    await asOperator.context().close();
  });

  it('a product user forks from the messages view at phone width; the page does not scroll sideways', async () => {
    const nonce = randomUUID().slice(0, 8);
    const user = await userWithRole(`forker ${nonce}`, null);
    const source = await sessionWithTurns(user.caller, `Phone fork ${nonce}`, [`only turn ${nonce}`]);
    const page = await signIn(browser, { apiKey: user.caller.token, viewport: { width: 390, height: 844 } });
    const pageWidth = () => page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    await page.goto(`${env.apiUrl}/console/sessions/${source.id}`);
    await page.getByRole('region', { name: 'Timeline' }).getByText(`Echo: only turn ${nonce}`).waitFor();
    await page.getByRole('button', { name: 'Fork from here' }).click();
    const forkId = await nextSessionPage(page, source.id);
    await lineageOf(page).locator(`a[href="/console/sessions/${source.id}"]`).waitFor();
    assert.match(await lineageOf(page).innerText(), /Forked from .* after turn /);
    assert.ok((await pageWidth()) <= 390, `the fork's page does not scroll sideways at 390 px: ${await pageWidth()}`);
    await assertAccessible(page, 'fork-lineage-phone');
    await page.goBack();
    await page.waitForURL(`**/console/sessions/${source.id}`);
    await lineageOf(page).getByRole('link', { name: new RegExp(`^Phone fork ${nonce}`) }).waitFor();
    assert.equal(await lineageOf(page).getByRole('link').first().getAttribute('href'), `/console/sessions/${forkId}`);
    assert.ok((await pageWidth()) <= 390, `the source's page does not scroll sideways at 390 px: ${await pageWidth()}`);
    await assertAccessible(page, 'fork-source-lineage-phone');

    // The source deleted: the fork's page says so, and keeps the history it shared.
    const deleted = await call(user.caller, `${API}/sessions/${source.id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);
    await page.goto(`${env.apiUrl}/console/sessions/${forkId}`);
    await lineageOf(page).getByText(/^Forked from a deleted session \(.*\) after turn /).waitFor();
    assert.equal(await lineageOf(page).getByRole('link').count(), 0, 'no link to a session that answers 404');
    await assertAccessible(page, 'fork-lineage-source-deleted-phone');
    await page.context().close();
  });
});
