import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { assertAccessible, launchBrowser, signedIn } from '../support/browser.js';
import { userWithRole } from '../support/console-users.js';
import { env } from '../support/env.js';
import { API, newKey } from '../support/http.js';
import { type Caller, call, until } from '../support/identity.js';

// A session's environment on the console's session page, in a real browser against the real stack
// (real sandboxes): the scripted model's `shell` calls shown as command blocks (their output, exit
// code and status; live output while one runs), the files it wrote as a tree with downloads, and
// the environment's settings. The session's owner signs in, so the page reads its items and
// follows its event stream.

let browser: Browser;
let owner: { userId: string; caller: Caller };

before(async () => {
  browser = await launchBrowser();
  owner = await userWithRole('workspace owner', null);
});
after(async () => {
  await browser?.close();
});

const HOSTED = { type: 'openai_hosted', network: { access: 'disabled' } };
const tool = (name: string, args: Record<string, unknown>) => `[[tool:${name} ${JSON.stringify(args)}]]`;

async function createSession(body: Record<string, unknown>): Promise<any> {
  const res = await call(owner.caller, `${API}/sessions`, { body: { agent_id: 'default-chatbot', ...body }, idempotencyKey: newKey('console-env') });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function send(sessionId: string, input: string): Promise<void> {
  const res = await call(owner.caller, `${API}/sessions/${sessionId}/events`, { body: { events: [{ type: 'agent.session.input.message', input }] }, idempotencyKey: newKey('console-env') });
  assert.equal(res.status, 202, res.text);
}

/** Waits (bounded: sandboxed commands take a while on a loaded machine) until the session's turns have all ended. */
async function settled(sessionId: string, status = 'completed'): Promise<any> {
  const read = await until(
    async () => {
      const res = await call(owner.caller, `${API}/sessions/${sessionId}`);
      return res.body?.status === status && res.body.yuxi.queued_input_count === 0 ? res.body : undefined;
    },
    { attempts: 600, intervalMs: 100 },
  );
  assert.ok(read, `session ${sessionId} reached ${status}`);
  return read;
}

async function artifactsOf(sessionId: string): Promise<any[]> {
  const res = await call(owner.caller, `${API}/sessions/${sessionId}/artifacts?order=asc&limit=100`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

const ownerPage = () => signedIn(browser, { apiKey: owner.caller.token });

/** The command block of a command (its accessible name is the command). */
const commandBlock = (page: Page, command: string) => page.getByRole('figure', { name: `Command: ${command}` });

describe('console: a session with an environment', () => {
  const build = 'mkdir -p out && printf "built <b>ok</b>\\n" > out/report.md && cat src/app.py && exit 3';
  /** The session of the first test (the later ones read it as other people and on other screens). */
  let built: { id: string };

  it('shows its commands with output and exit code, and the files it wrote as a tree whose downloads hold their bytes', async () => {
    const session = await createSession({
      title: 'Builds in its workspace',
      environment: HOSTED,
      input: `${tool('write_file', { path: 'src/app.py', content: 'print("v1")\n' })} ${tool('shell', { command: build })}`,
    });
    await settled(session.id);
    built = session;
    // A second turn writes app.py again: the tree shows its latest version, the first one under it.
    await send(session.id, `${tool('write_file', { path: 'src/app.py', content: 'print("version two")\n' })}`);
    await settled(session.id);
    const written = await artifactsOf(session.id);
    assert.deepEqual([...new Set(written.map((artifact) => artifact.path))].sort(), ['/workspace/out/report.md', '/workspace/src/app.py']);

    const page = await ownerPage();
    await page.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    // The command: its line, its output (markup in it shown as text), its exit code and status.
    const block = commandBlock(page, build);
    await block.waitFor();
    await block.getByText('exit code 3').waitFor();
    assert.match(await block.locator('pre.command-output').innerText(), /print\("v1"\)/);
    assert.equal(await block.locator('.badge').innerText(), 'completed');
    assert.equal(await page.locator('.command b').count(), 0, 'output is text, never markup');
    assert.equal(await page.locator('.item-function_call_output').count(), 2, "write_file's two results: the command's output is on its block only");

    // The environment's settings.
    const environment = page.getByRole('region', { name: 'Environment' });
    await environment.getByText(/^disabled/).waitFor();
    await environment.getByText('Wall time per command').waitFor();

    // The files: a tree of folders under /workspace, each file with a download of its bytes.
    const files = page.getByRole('region', { name: 'Files' });
    await files.getByText('src/', { exact: true }).waitFor();
    await files.getByText('out/', { exact: true }).waitFor();
    await files.getByText('1 earlier version').waitFor();
    const report = await download(page, 'Download /workspace/out/report.md');
    assert.equal(report.name, 'report.md');
    assert.equal(report.text, 'built <b>ok</b>\n');
    const latest = await download(page, 'Download /workspace/src/app.py');
    assert.equal(latest.text, 'print("version two")\n', 'the latest version of a path written twice');
    await files.getByText('1 earlier version').click();
    const earlier = await download(page, /^Download \/workspace\/src\/app\.py as of /);
    assert.equal(earlier.text, 'print("v1")\n');
    // A file's turn link lands on that turn's first item.
    const turnLink = files.getByRole('link', { name: /^turn / }).first();
    const target = (await turnLink.getAttribute('href'))!.replace(/^#/, '');
    assert.equal(await page.locator(`[id="${target}"]`).count(), 1, `${target} is on the page`);
    await assertAccessible(page, 'session-environment');
    await page.context().close();
  });

  it('shows a running command’s output live, then its persisted result', async () => {
    const session = await createSession({ title: 'Runs a slow command', environment: HOSTED });
    const page = await ownerPage();
    await page.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    await page.getByRole('region', { name: 'Files' }).getByText('No files yet').waitFor();
    // The page follows the stream before the command starts; the command prints a line, then runs on for 10 s.
    const slow = 'echo first line; sleep 10; echo second line';
    await send(session.id, tool('shell', { command: slow }));
    const running = page.getByRole('figure', { name: `Command: ${slow}` });
    const output = running.locator('pre.command-output');
    await output.getByText('first line').waitFor({ timeout: 60_000 });
    assert.equal(await running.locator('.badge').innerText(), 'running');
    assert.equal(await output.getByText('second line').count(), 0, 'the command is still running');
    await settled(session.id);
    await running.getByText('exit code 0').waitFor({ timeout: 10_000 });
    await output.getByText('second line').waitFor();
    assert.equal(await running.locator('.badge').innerText(), 'completed');
    assert.equal(await page.getByRole('figure', { name: /^Command: / }).count(), 1, 'one block: the live copy left once the item ended');
    await page.context().close();
  });

  it("an administrator reads another user's environment session: the shell step as a terminal, the files left to the owner; axe on a phone and in the dark", async () => {
    const page = await signedIn(browser, { viewport: { width: 390, height: 844 } });
    await page.goto(`${env.apiUrl}/console/sessions/${built.id}`);
    // Not the administrator's session: the admin timeline (turns, runs, steps), where the shell call reads as a terminal.
    const step = commandBlock(page, build);
    await step.waitFor();
    assert.match(await step.locator('pre.command-output').innerText(), /print\("v1"\)/);
    await page.getByRole('region', { name: 'Environment' }).getByText(/^disabled/).waitFor();
    await page.getByText(/files this session’s agent wrote are read by its owner/).waitFor();
    await assertAccessible(page, 'session-environment-phone');
    const width = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    assert.ok(width <= 390, `the page does not scroll sideways at 390 px: ${width}`);
    await page.context().close();

    const dark = await signedIn(browser, { apiKey: owner.caller.token, colorScheme: 'dark' });
    await dark.goto(`${env.apiUrl}/console/sessions/${built.id}`);
    await commandBlock(dark, build).getByText('exit code 3').waitFor();
    await dark.getByRole('region', { name: 'Files' }).getByText('report.md').waitFor();
    await assertAccessible(dark, 'session-environment-dark');
    await dark.context().close();
  });

  it('a session without an environment shows neither settings nor files', async () => {
    const session = await createSession({ title: 'No environment', input: 'hello there' });
    await settled(session.id);
    const page = await ownerPage();
    await page.goto(`${env.apiUrl}/console/sessions/${session.id}`);
    await page.getByRole('region', { name: 'Timeline' }).getByText('Echo: hello there').waitFor();
    assert.equal(await page.getByRole('region', { name: 'Environment' }).count(), 0);
    assert.equal(await page.getByRole('region', { name: 'Files' }).count(), 0);
    await page.context().close();
  });
});

/** Clicks a download button and reads what the browser saved. */
async function download(page: Page, name: string | RegExp): Promise<{ name: string; text: string }> {
  const [saved] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name, exact: typeof name === 'string' }).click()]);
  const file = await saved.path();
  return { name: saved.suggestedFilename(), text: await readFile(file, 'utf8') };
}
