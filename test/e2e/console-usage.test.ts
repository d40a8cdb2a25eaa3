import assert from 'node:assert/strict';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { fakeModel, putAgent } from '../support/agents.js';
import { ARTIFACTS, assertAccessible, launchBrowser, signedIn } from '../support/browser.js';
import { statusOf } from '../support/console-users.js';
import { env } from '../support/env.js';
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.js';
import { API, newKey } from '../support/http.js';
import { ADMIN, bootstrap, call, type Caller, newProductUser } from '../support/identity.js';

// The console's Usage page in a real browser, over usage the stack really recorded: a user's own
// spend (totals, the chart per day, the top sessions and agents with their tables), on a desktop and
// a phone, and an operator's switch to every owner.

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

async function open(page: Page): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Usage', exact: true }).click();
  await page.getByRole('heading', { name: 'Usage', level: 1 }).waitFor();
}

/** A price for the model (USD per million tokens), set by the administrator. */
async function price(model: string, input: number, output: number): Promise<void> {
  const res = await call(bootstrap, `${ADMIN}/model-prices/${encodeURIComponent(model)}`, { method: 'PUT', body: { input_per_mtok_usd: input, output_per_mtok_usd: output } });
  assert.ok(res.status === 200 || res.status === 201, res.text);
}

/** One completed turn of `agent` as `owner`. */
async function ranTurn(owner: Caller, agentId: string): Promise<string> {
  const created = await call(owner, `${API}/sessions`, { body: { agent_id: agentId, input: 'go' }, idempotencyKey: newKey('usage-console') });
  assert.equal(created.status, 201, created.text);
  await statusOf(owner, created.body.id, 'completed');
  return created.body.id;
}

describe('console: usage', () => {
  it('shows a user their spend over time and their top sessions and agents, as charts with tables, on a desktop and a phone', async () => {
    const suffix = randomUUID().slice(0, 6);
    const writer = await putAgent({ name: `Writer ${suffix}` }, `writer-${suffix}`);
    const helper = await putAgent({ name: `Helper ${suffix}`, tools: [{ type: 'builtin', name: 'calculator' }] }, `helper-${suffix}`);
    // Prices large enough that the cost reads in dollars: 1000 USD per million tokens is a tenth of a cent per token.
    await price(writer.model, 1000, 4000);
    await price(helper.model, 4000, 16000);
    fake.script(fakeModel(writer.model), [
      { text: 'A long essay.', usage: { prompt_tokens: 900, completion_tokens: 300 } },
      { text: 'A short note.', usage: { prompt_tokens: 200, completion_tokens: 40 } },
    ]);
    fake.script(fakeModel(helper.model), [
      { tool_calls: [{ id: 'c1', name: 'calculator', arguments: '{"expression":"6*7"}' }], usage: { prompt_tokens: 400, completion_tokens: 12 } },
      { text: '42', usage: { prompt_tokens: 450, completion_tokens: 3 } },
    ]);
    const user = await newProductUser(`console usage ${suffix}`);
    const sessions = [await ranTurn(user.caller, writer.id), await ranTurn(user.caller, writer.id), await ranTurn(user.caller, helper.id)];

    const own = await call(user.caller, `${API}/usage?group_by=agent`);
    assert.equal(own.status, 200, own.text);
    const tokens = own.body.data.reduce((sum: number, row: any) => sum + row.input_tokens + row.output_tokens, 0);
    assert.equal(tokens, 900 + 300 + 200 + 40 + 400 + 12 + 450 + 3);

    const page = await signedIn(browser, { apiKey: user.key.secret });
    await open(page);
    const tile = (name: string) => page.locator('.tiles > div', { has: page.getByRole('term').filter({ hasText: name }) }).getByRole('definition');
    await tile('Tokens').filter({ hasText: new Intl.NumberFormat('en-US').format(tokens) }).waitFor();
    // 900·1000 + 300·4000 + 200·1000 + 40·4000 + 400·4000 + 12·16000 + 450·4000 + 3·16000 micro-dollars.
    assert.equal(await tile('Cost').innerText(), '$6.10');
    assert.equal(await tile('Tool calls').innerText(), '1');
    // Each chart is an image named for what it shows, with its numbers in a table.
    for (const name of [/^Cost and tokens per day/, /^Top sessions by cost/, /^Top agents by cost/]) await page.getByRole('img', { name }).waitFor();
    const agents = page.getByRole('region', { name: 'Top agents by cost' });
    assert.deepEqual(await agents.getByRole('rowheader').allInnerTexts(), [helper.id, writer.id], 'the helper cost more (its prices are four times the writer\'s)');
    const sessionRows = page.getByRole('region', { name: 'Top sessions by cost' }).getByRole('row');
    assert.equal(await sessionRows.count(), sessions.length + 1, 'a header and one row per session');
    await page.getByText('Show the numbers per day').click();
    await page.getByRole('region', { name: 'Usage per day' }).getByRole('rowheader').first().waitFor();
    await assertAccessible(page, 'usage');

    // A session's row opens the session.
    await page.locator(`a[href="/console/sessions/${sessions[2]}"]`).click();
    await page.waitForURL(`**/console/sessions/${sessions[2]}`);
    await page.context().close();

    // A phone: the same page in one column, the charts as wide as the screen, nothing wider than it.
    const phone = await signedIn(browser, { apiKey: user.key.secret, viewport: { width: 390, height: 844 } });
    await open(phone);
    await phone.getByRole('img', { name: /^Top agents by cost/ }).waitFor();
    const overflow = await phone.locator('html').evaluate((root) => root.scrollWidth - root.clientWidth);
    assert.ok(overflow <= 0, `the page is no wider than the phone (${overflow}px over)`);
    const chartWidth = await phone.getByRole('img', { name: /^Cost and tokens per day/ }).evaluate((el) => el.getBoundingClientRect().width);
    assert.ok(chartWidth > 300 && chartWidth <= 390, `the chart spans the screen (${chartWidth}px)`);
    await assertAccessible(phone, 'usage-phone');
    await phone.context().close();
  });

  it('lets an administrator switch to every owner\'s usage; a user without a role has no such choice', async () => {
    const suffix = randomUUID().slice(0, 6);
    const agent = await putAgent({ name: `Costly ${suffix}` }, `costly-${suffix}`);
    await price(agent.model, 100_000, 100_000);
    fake.script(fakeModel(agent.model), [{ text: 'expensive', usage: { prompt_tokens: 5000, completion_tokens: 5000 } }]);
    const someone = await newProductUser(`someone ${suffix}`);
    await ranTurn(someone.caller, agent.id);

    const plain = await signedIn(browser, { apiKey: someone.key.secret });
    await open(plain);
    assert.equal(await plain.getByLabel('Whose usage').count(), 0, 'no cross-owner view without a role');
    await plain.context().close();

    const admin = await signedIn(browser);
    await open(admin);
    await admin.getByLabel('Whose usage').selectOption('all');
    await admin.getByRole('button', { name: 'Show' }).click();
    await admin.getByText('for every owner').waitFor();
    // The most expensive agent of any owner leads the list: this test's, at 1000 USD for its one call (the highest price for 10 000 tokens).
    await admin.getByRole('region', { name: 'Top agents by cost' }).getByRole('rowheader', { name: agent.id }).waitFor();
    await assertAccessible(admin, 'usage-all-owners');
    await admin.screenshot({ path: path.join(ARTIFACTS, 'usage-all-owners-viewport.png') });
    await admin.context().close();
  });
});
