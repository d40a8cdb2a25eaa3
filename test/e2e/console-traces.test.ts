import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible, launchBrowser, signedIn as signIn } from '../support/browser.js';
import { sessionOf, userWithRole } from '../support/console-users.js';
import { env } from '../support/env.js';
import { API } from '../support/http.js';
import { call, type Caller, until } from '../support/identity.js';

// The console's trace of a turn in a real browser, Debian's chromium driven by playwright-core: the
// "Trace" waterfall drawn from GET /sessions/{id}/traces (the suite's stack runs with tracing on, its
// spans kept per session) and "Open in trace UI" from TRACE_URL_TEMPLATE (scripts/test.mjs sets one).

let browser: Browser;

before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

/** The stack's TRACE_URL_TEMPLATE (scripts/test.mjs): nothing serves it, the console only links it. */
const TEMPLATE = 'https://traces.example.test/trace/{trace_id}?from=console';

interface TracedTurn {
  sessionId: string;
  turnId: string;
  traceId: string;
  /** The spans' names the route returned once the turn's run had exported its invoke_agent. */
  names: string[];
}

/**
 * A session of `owner` whose one turn completed, and its trace as the route returns it once the
 * worker's invoke_agent and chat spans are kept (spans are written a batch after they end).
 */
async function tracedTurn(owner: Caller, title: string, input: string): Promise<TracedTurn> {
  const session = await sessionOf(owner, { title, input });
  const turn = await until(
    async () => {
      const turns = await call(owner, `${API}/sessions/${session.id}/turns?order=asc&limit=10`);
      return turns.body?.data?.[0]?.status === 'completed' ? turns.body.data[0] : undefined;
    },
    { attempts: 150, intervalMs: 100 },
  );
  assert.ok(turn, `the turn of ${session.id} completed`);
  const entry = await until(
    async () => {
      const traces = await call(owner, `${API}/sessions/${session.id}/traces`);
      assert.equal(traces.status, 200, traces.text);
      const found = traces.body.data.find((trace: any) => trace.id === turn.id);
      const names: string[] = (found?.otlp.resourceSpans ?? []).flatMap((resource: any) => resource.scopeSpans.flatMap((scope: any) => scope.spans.map((span: any) => span.name)));
      return names.some((name) => name.startsWith('invoke_agent')) && names.some((name) => name.startsWith('chat')) ? { found, names } : undefined;
    },
    { attempts: 100, intervalMs: 200 },
  );
  assert.ok(entry, `the route returns the trace of turn ${turn.id} with its invoke_agent and chat spans`);
  const traceId: string = entry.found.otlp.resourceSpans[0].scopeSpans[0].spans[0].traceId;
  assert.equal(turn.yuxi.trace_id, traceId, 'the turn names the trace the route returns');
  return { sessionId: session.id, turnId: turn.id, traceId, names: entry.names };
}

/** Opens the Trace of the panel `label` names and waits for its waterfall; the list of its spans. */
async function openTrace(page: Page, label: string) {
  const panel = page.getByRole('group', { name: `Trace of ${label}` });
  await panel.getByRole('button', { name: 'Trace' }).click();
  const spans = panel.getByRole('list', { name: `Spans of ${label}` });
  await spans.getByRole('listitem').first().waitFor();
  return { panel, spans };
}

describe('console: a turn\u2019s trace', () => {
  it('an operator\u2019s turns view draws the turn\u2019s spans as a tree of bars; a span opens its attributes; the trace UI link; the dark theme', async () => {
    const nonce = randomUUID().slice(0, 8);
    const operator = await userWithRole(`trace operator ${nonce}`, 'operator');
    const traced = await tracedTurn(operator.caller, `Traced ${nonce}`, `trace me ${nonce}`);
    const settings = await call(operator.caller, '/api/v1/console/settings');
    assert.equal(settings.status, 200, settings.text);
    assert.deepEqual(settings.body, { object: 'console.settings', trace_url_template: TEMPLATE });

    const page = await signIn(browser, { apiKey: operator.caller.token });
    await page.goto(`${env.apiUrl}/console/sessions/${traced.sessionId}`);
    const turn = page.locator(`#turn-${traced.turnId}`);
    await turn.getByRole('heading', { name: /^Turn 1 · completed/ }).waitFor();
    const { panel, spans } = await openTrace(page, 'turn 1');
    // Every span the route returned is a row (spans of the trace written later, a webhook's, may add rows).
    const rows = await spans.getByRole('listitem').allInnerTexts();
    assert.ok(rows.length >= traced.names.length, `${rows.length} rows for ${traced.names.length} spans`);
    for (const name of traced.names) assert.ok(rows.some((row) => row.includes(name)), `a row for ${name}: ${rows.join(' | ')}`);
    assert.match(await panel.innerText(), /yuxi-worker/, 'the service that made the spans is named');
    const link = panel.getByRole('link', { name: 'Open in trace UI' });
    assert.equal(await link.getAttribute('href'), TEMPLATE.replace('{trace_id}', traced.traceId));
    assert.equal(await link.getAttribute('rel'), 'noopener noreferrer');

    // invoke_agent under the turn's accepted input, chat under invoke_agent: indented deeper.
    const invoke = spans.getByRole('button', { name: /invoke_agent/ }).first();
    await invoke.click();
    assert.equal(await invoke.getAttribute('aria-pressed'), 'true');
    const detail = panel.getByRole('region', { name: /^Span invoke_agent/ });
    await detail.waitFor();
    const attributes = await detail.getByRole('definition').allInnerTexts();
    const terms = await detail.getByRole('term').allInnerTexts();
    assert.equal(attributes[terms.indexOf('gen_ai.operation.name')], 'invoke_agent');
    assert.equal(attributes[terms.indexOf('yuxi.turn_id')], traced.turnId);
    assert.equal(attributes[terms.indexOf('yuxi.session_id')], traced.sessionId);
    const indent = async (name: RegExp) => Number(/padding-left: ([\d.]+)rem/.exec((await spans.getByRole('button', { name }).first().locator('.span-label').getAttribute('style')) ?? '')?.[1] ?? 0);
    assert.ok((await indent(/^chat/)) > (await indent(/^invoke_agent/)), 'chat is drawn as a child of invoke_agent');
    await assertAccessible(page, 'trace-waterfall');
    await page.context().close();

    const dark = await signIn(browser, { apiKey: operator.caller.token, colorScheme: 'dark' });
    await dark.goto(`${env.apiUrl}/console/sessions/${traced.sessionId}`);
    await dark.locator(`#turn-${traced.turnId}`).getByRole('heading', { name: /^Turn 1 · completed/ }).waitFor();
    const darkTrace = await openTrace(dark, 'turn 1');
    await darkTrace.spans.getByRole('button', { name: /invoke_agent/ }).first().click();
    await darkTrace.panel.getByRole('region', { name: /^Span invoke_agent/ }).waitFor();
    await assertAccessible(dark, 'trace-waterfall-dark');
    await dark.context().close();
  });

  it('a product user\u2019s messages view at phone width: the waterfall fits, the page does not scroll sideways', async () => {
    const nonce = randomUUID().slice(0, 8);
    const user = await userWithRole(`trace user ${nonce}`, null);
    const traced = await tracedTurn(user.caller, `Phone trace ${nonce}`, `phone ${nonce}`);
    const page = await signIn(browser, { apiKey: user.caller.token, viewport: { width: 390, height: 844 } });
    const pageWidth = () => page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    await page.goto(`${env.apiUrl}/console/sessions/${traced.sessionId}`);
    await page.getByRole('region', { name: 'Timeline' }).getByText(`Echo: phone ${nonce}`).waitFor();
    const { panel, spans } = await openTrace(page, 'this turn');
    assert.ok((await spans.getByRole('listitem').count()) >= traced.names.length);
    await spans.getByRole('button', { name: /^chat/ }).first().click();
    await panel.getByRole('region', { name: /^Span chat/ }).waitFor();
    assert.ok((await pageWidth()) <= 390, `the trace does not scroll the page sideways at 390 px: ${await pageWidth()}`);
    await assertAccessible(page, 'trace-waterfall-phone');
    await page.context().close();
  });

  it('says so when the route has no trace for the turn (tracing off), and links no trace UI without a template', async () => {
    const nonce = randomUUID().slice(0, 8);
    const user = await userWithRole(`untraced user ${nonce}`, null);
    const traced = await tracedTurn(user.caller, `Untraced ${nonce}`, `untraced ${nonce}`);
    const page = await signIn(browser, { apiKey: user.caller.token });
    // The route's answer where tracing is off (200, no entry) and a deployment without TRACE_URL_TEMPLATE:
    // this stack traces, so the browser is given those two answers in place of the server's.
    await page.route(`**${API}/sessions/${traced.sessionId}/traces*`, (route) => route.fulfill({ json: { object: 'list', data: [], first_id: null, last_id: null, has_more: false } }));
    await page.route('**/api/v1/console/settings', (route) => route.fulfill({ json: { object: 'console.settings', trace_url_template: null } }));
    await page.goto(`${env.apiUrl}/console/sessions/${traced.sessionId}`);
    await page.getByRole('region', { name: 'Timeline' }).getByText(`Echo: untraced ${nonce}`).waitFor();
    const panel = page.getByRole('group', { name: 'Trace of this turn' });
    await panel.getByRole('button', { name: 'Trace' }).click();
    await panel.getByText(/^No trace for this turn: tracing is off or no spans were kept/).waitFor();
    assert.equal(await panel.getByRole('list').count(), 0, 'no waterfall');
    assert.equal(await panel.getByRole('link', { name: 'Open in trace UI' }).count(), 0, 'no template: no link');
    await panel.getByRole('button', { name: 'Read again' }).waitFor();
    await assertAccessible(page, 'trace-empty');
    await page.context().close();
  });
});
