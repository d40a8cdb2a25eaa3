// The console scenario of `npm run bench`: a session with 10,000 items opens
// its page in the browser (first page rendered), and the sessions explorer pages through 100,000
// sessions with cursors. The long session is made through the API (20-message inputs, each turn
// answered by scripted:echo); the 100,000 sessions are copied in SQL from one made through the API,
// since making them one by one would take the bench longer than everything else together. Seeding
// with SQL is for the bench only: tests never fake state.
import { randomUUID } from 'node:crypto';
import { nextEvent, opened } from './client.mjs';
import { round, summarize } from './measure.mjs';

const ITEMS = 10_000;
const SESSIONS = 100_000;
const PAGE = 50;

export async function consoleScenario({ stack, client, apiKey, pg, chromiumPath, log }) {
  const { chromium } = await import('playwright-core');
  const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' };
  const api = (path, init = {}) => fetch(`${stack.url}${path}`, { ...init, headers: { ...headers, ...init.headers } });

  // ---- the long session: 10,000 items through the API
  log(`console: a session of ${ITEMS} items…`);
  const seedStarted = performance.now();
  const long = await client.createSession(undefined);
  const source = client.subscribe(long.id);
  await opened(source);
  let items = 0;
  let turn = 0;
  while (items < ITEMS) {
    const messages = Math.min(20, ITEMS - items - 1);
    const last = items + messages + 1 >= ITEMS;
    const input = Array.from({ length: messages }, (_, i) => ({ role: 'user', content: [{ type: 'input_text', text: last && i === messages - 1 ? 'the final message of the long session' : `turn ${turn} message ${i}` }] }));
    const completed = nextEvent(source, 'agent.session.turn.completed');
    const res = await api(`/api/v1/agents/sessions/${long.id}/events`, {
      method: 'POST',
      headers: { 'idempotency-key': randomUUID() },
      body: JSON.stringify({ events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input }] }),
    });
    if (res.status !== 202) throw new Error(`seed long session: ${res.status} ${await res.text()}`);
    await completed;
    turn += 1;
    items += messages + 1;
  }
  source.close();
  const itemCount = await countItems(stack, pg, long.id);
  const longSeedS = round((performance.now() - seedStarted) / 1000, 1);

  // ---- 100,000 sessions: one through the API, copied in SQL
  log(`console: ${SESSIONS} sessions…`);
  const template = await client.createSession(undefined);
  const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  await db.connect();
  const copyStarted = performance.now();
  try {
    const columns = (await db.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'sessions' AND table_schema = current_schema() AND is_generated = 'NEVER' ORDER BY ordinal_position`)).rows.map((r) => r.column_name);
    // A UUIDv7 per copy, older than the template by g seconds (the explorer's order is created_at, id).
    const newId = `(lpad(to_hex((extract(epoch FROM t.created_at) * 1000)::bigint - g * 1000), 12, '0') || '7' || substr(md5(g::text), 1, 3) || '8' || substr(md5(g::text), 4, 15))::uuid`;
    const expr = (c) => {
      // Each copy is the root of its own tree, as every session made without a parent is.
      if (c === 'id' || c === 'root_session_id') return 'c.new_id';
      if (c === 'created_at' || c === 'updated_at' || c === 'last_active_at') return `c.${c} - c.g * interval '1 second'`;
      if (c === 'title') return `'Seeded session ' || c.g`;
      return `c.${c}`;
    };
    for (let from = 1; from <= SESSIONS; from += 20_000) {
      await db.query(
        `INSERT INTO sessions (${columns.join(', ')}) SELECT ${columns.map(expr).join(', ')}
           FROM (SELECT t.*, g, ${newId} AS new_id FROM sessions t CROSS JOIN generate_series($2::int, $3::int) g WHERE t.id = $1) c`,
        [template.id, from, Math.min(SESSIONS, from + 19_999)],
      );
    }
    await db.query('ANALYZE sessions');
  } finally {
    await db.end();
  }
  const copyS = round((performance.now() - copyStarted) / 1000, 1);

  // ---- the explorer's API: first page, cursor pages deep into the list, filters
  log('console: the explorer API…');
  const timed = async (path) => {
    const started = performance.now();
    const res = await api(path);
    const body = await res.json();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
    return { ms: performance.now() - started, body };
  };
  const firstPage = [];
  for (let i = 0; i < 20; i += 1) firstPage.push((await timed(`/api/v1/admin/sessions?limit=${PAGE}`)).ms);
  const walk = [];
  let after;
  let listed = 0;
  for (let page = 0; page < 100; page += 1) {
    const { ms, body } = await timed(`/api/v1/admin/sessions?limit=${PAGE}${after ? `&after=${after}` : ''}`);
    walk.push(ms);
    listed += body.data.length;
    if (!body.has_more) break;
    after = body.last_id;
  }
  const filters = {};
  for (const [name, query] of [
    ['q (title contains)', 'q=Seeded%20session%2099999'],
    ['status=idle', 'status=idle'],
    ['waiting=true', 'waiting=true'],
    ['agent_id', 'agent_id=default-chatbot'],
  ]) {
    const samples = [];
    for (let i = 0; i < 10; i += 1) samples.push((await timed(`/api/v1/admin/sessions?limit=${PAGE}&${query}`)).ms);
    filters[name] = summarize(samples);
  }

  // ---- the browser: the explorer's first page and the long session's page, first page rendered
  log('console: in the browser…');
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
  const rendered = { explorer: [], session: [] };
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${stack.url}/console/`);
    await page.getByLabel('API key').fill(apiKey);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    for (let i = 0; i < 6; i += 1) {
      let started = performance.now();
      await page.goto(`${stack.url}/console/`);
      await page.locator('a[href^="/console/sessions/"]').first().waitFor({ timeout: 30_000 });
      rendered.explorer.push(performance.now() - started);
      started = performance.now();
      await page.goto(`${stack.url}/console/sessions/${long.id}`);
      await page.getByRole('region', { name: 'Timeline' }).getByText('the final message of the long session').first().waitFor({ timeout: 30_000 });
      rendered.session.push(performance.now() - started);
    }
  } finally {
    await browser.close();
  }
  // The first visit loads the console's assets; the rest find them cached, as a person's next page does.
  const sessionFirst = round(rendered.session[0]);
  const sessionWarm = summarize(rendered.session.slice(1));
  return {
    description: `the console's measures: a session of ${itemCount} items (made through the API in ${longSeedS} s) opened in chromium until its newest message shows; ${SESSIONS} more sessions (copied in SQL in ${copyS} s) paged through the admin search`,
    session_page_ms: { first_visit: sessionFirst, warm: sessionWarm },
    explorer_page_ms: { first_visit: round(rendered.explorer[0]), warm: summarize(rendered.explorer.slice(1)) },
    api_first_page_ms: summarize(firstPage),
    api_cursor_walk_ms: { pages: walk.length, sessions_listed: listed, ...summarize(walk) },
    api_filters_ms: filters,
    items: itemCount,
    target: 'a 10,000-item session renders its first page < 2 s; the explorer lists 100,000 sessions with cursor pages',
    met: itemCount >= ITEMS && sessionFirst < 2000 && walk.length === 100 && listed === 100 * PAGE,
  };
}

async function countItems(stack, pg, sessionId) {
  const db = new pg.Client({ connectionString: stack.env.DATABASE_URL });
  await db.connect();
  try {
    return Number((await db.query('SELECT count(*)::int AS n FROM items WHERE session_id = $1', [sessionId])).rows[0].n);
  } finally {
    await db.end();
  }
}
