import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { env } from '../support/env.js';
import { API, http, newKey } from '../support/http.js';
import { SseStream } from '../support/sse.js';
import { PNG, uploadDraft } from '../support/files.js';
import { describeExchange, type Exchange, problemsOf, send, type SendOptions } from '../support/fuzz/exchange.js';
import { type Operation, operationsOf, ResponseChecker, type Schema } from '../support/fuzz/openapi-model.js';
import { type CaseContext, type FuzzCase, fuzzCases } from '../support/fuzz/requests.js';

// OpenAPI-driven fuzzing of the live stack: for every operation of /openapi.json,
// requests generated from its parameter and body schemas — valid ones, boundary values and
// mutations — filled with real ids of resources made here first, so that they reach the handlers.
// Every answer must be declared for its operation, conform to the declared schema, carry
// X-Request-Id, and never be a 5xx (the stack is healthy). Named zz- to run last: what it creates
// and archives cannot disturb the other files. Each operation gets the same fixed number of cases,
// whatever the machine's speed, so a seed (and a case count) reproduces a run exactly: reproduce a
// failure with the FUZZ_SEED (and FUZZ_RUNS, if it was set) that the failure prints. How fast the
// stack answers is the bench's business (bench/run.mjs), not this file's.

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_130);
/** Cases per operation, all of them sent (but admin writes aimed at what the fuzzer did not create): about 30 s for every operation on a 2-core machine. */
const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const ADMIN = '/api/v1/admin';
/** Drafts uploaded while fuzzing that join the file_id pool, beside the ones made first. */
const MAX_UPLOADED_IDS = 5;
const PIXEL = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

const document = (await (await fetch(`${env.apiUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, any>>; components?: { schemas?: Record<string, Schema> } };
const checker = new ResponseChecker(document);
// Destructive operations last: archiving and deleting would otherwise cut the others short of real resources.
const destructive = (op: Operation) => op.method === 'DELETE' || op.path.endsWith('/archive');
const operations = [...operationsOf(document).filter((op) => !destructive(op)), ...operationsOf(document).filter(destructive)];

/** Real ids and values, by field or parameter name, that the fuzzer owns or may use. */
type Pools = Record<string, string[]>;

/** Whatever existed before the fuzzer ran is out of bounds for its admin writes (the suite key, fixture agents). */
interface Protected {
  agents: Set<string>;
  keys: Set<string>;
}

async function ok<T = any>(path: string, options: Parameters<typeof http>[1], status: number): Promise<T> {
  const res = await http<T>(path, options);
  assert.equal(res.status, status, `fuzz setup: ${options?.method ?? 'GET'} ${path} answered ${res.status} ${res.text}`);
  return res.body;
}

/** Polls a session (bounded) until its status is one of these. */
async function until(sessionId: string, statuses: string[]): Promise<any> {
  let session: any;
  for (let i = 0; i < 150; i += 1) {
    session = await ok(`${API}/sessions/${sessionId}`, {}, 200);
    if (statuses.includes(session.status)) return session;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  assert.fail(`fuzz setup: session ${sessionId} stayed ${session?.status}, expected ${statuses.join(' or ')}`);
}

/** Sessions in each interesting state, agents and keys of the fuzzer's own, and their ids. */
async function prepare(nonce: string): Promise<{ pools: Pools; revokedKey: string; protect: Protected; streams: SseStream[] }> {
  const protect: Protected = {
    agents: new Set((await ok(`${ADMIN}/agents`, {}, 200)).data.map((a: any) => a.id)),
    keys: new Set((await ok(`${ADMIN}/api-keys`, {}, 200)).data.map((k: any) => k.id)),
  };
  const plainAgent = `fuzz-${nonce}`;
  const approvalAgent = `fuzz-approval-${nonce}`;
  await ok(`${ADMIN}/agents/${plainAgent}`, { method: 'PUT', body: { name: 'Fuzz', model: 'scripted:echo' } }, 201);
  await ok(`${ADMIN}/agents/${approvalAgent}`, { method: 'PUT', body: { name: 'Fuzz approvals', tools: [{ type: 'builtin', name: 'calculator', requires_approval: true }] } }, 201);
  const keyIds: string[] = [];
  for (const name of ['fuzz-a', 'fuzz-b', 'fuzz-c']) keyIds.push((await ok(`${ADMIN}/api-keys`, { body: { name, access: 'full' } }, 201)).id);
  const revoked = await ok(`${ADMIN}/api-keys`, { body: { name: 'fuzz-revoked', access: 'agents' } }, 201);
  await ok(`${ADMIN}/api-keys/${revoked.id}`, { method: 'DELETE' }, 200);

  const idempotencyKeys: string[] = [];
  const create = async (body: object) => {
    const key = newKey('fuzz-setup');
    idempotencyKeys.push(key);
    return ok(`${API}/sessions`, { body, idempotencyKey: key }, 201);
  };
  const done = await create({ agent_id: 'default-chatbot', title: 'fuzz: done', input: 'hello fuzz' });
  const question = await create({ agent_id: 'default-chatbot', title: 'fuzz: question', input: '[[ask:Which colour?]]' });
  const approval = await create({ agent_id: approvalAgent, title: 'fuzz: approval', input: '[[tool:calculator {"expression":"1+1"}]]' });
  const empty = await create({ agent_id: 'default-chatbot' });
  // A long turn with a follow-up behind it: a pending input to promote or cancel, a turn to cancel or steer.
  const busy = await create({ agent_id: 'default-chatbot', title: 'fuzz: busy', input: '[[delay:300]][[words:200]]' });
  const followUpKey = newKey('fuzz-setup');
  idempotencyKeys.push(followUpKey);
  const followUp = await ok(`${API}/sessions/${busy.id}/events`, { body: { events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: 'later' }] }, idempotencyKey: followUpKey }, 202);

  // Files: drafts that stay drafts, and a session with attachments and an inline image (session
  // files), so that the files operations get real ids (drafts, bound files, a session's files).
  const drafts = [await uploadDraft('fuzz draft\n', 'fuzz-draft.txt'), await uploadDraft(PNG, 'fuzz-draft.png'), await uploadDraft('a,b\n1,2\n', 'fuzz-draft.csv')];
  const attached = [await uploadDraft('fuzz attachment\n', 'fuzz-attached.txt'), await uploadDraft(PNG, 'fuzz-attached.png')];
  const withFiles = await create({
    agent_id: 'default-chatbot',
    title: 'fuzz: files',
    input: [{ role: 'user', content: [{ type: 'input_text', text: 'see attached' }, { type: 'input_image', image_url: PIXEL }] }],
    yuxi: { attachment_file_ids: attached.map((f) => f.id) },
  });

  // A project of the fuzzer's, with a session in it: sessions may be created in it, and it may be read and deleted.
  const project = await ok(`${API}/projects`, { body: { name: `fuzz ${nonce}` } }, 201);
  await create({ agent_id: 'default-chatbot', project_id: project.id });

  await until(done.id, ['completed']);
  await until(question.id, ['requires_action']);
  await until(approval.id, ['requires_action']);
  await until(busy.id, ['in_progress']);
  await until(withFiles.id, ['completed']);
  const inlineFiles = [...JSON.stringify(await ok(`${API}/sessions/${withFiles.id}/inputs/${withFiles.yuxi.receipt.input_id}`, {}, 200)).matchAll(/\/files\/([0-9a-f]{32})\/content/g)].map((m) => m[1]!);
  assert.ok(inlineFiles.length > 0, 'fuzz setup: the inline image became a session file');

  const pools: Pools = { turn_id: [], run_id: [], waitpoint_id: [], call_id: [], question_id: [] };
  const sessions = [done, question, approval, empty, busy, withFiles];
  for (const session of sessions) {
    for (const turn of (await ok(`${API}/sessions/${session.id}/turns`, {}, 200)).data) {
      pools.turn_id!.push(turn.id);
      const detail = await ok(`${API}/sessions/${session.id}/turns/${turn.id}`, {}, 200);
      pools.run_id!.push(...detail.yuxi.runs.map((r: any) => r.id));
      const waitpoint = detail.yuxi.waitpoint;
      if (waitpoint) {
        pools.waitpoint_id!.push(waitpoint.id);
        pools.question_id!.push(...(waitpoint.questions ?? []).map((q: any) => q.question_id));
        pools.call_id!.push(...(waitpoint.tool_calls ?? []).map((c: any) => c.call_id));
      }
    }
  }
  // A real cursor for Last-Event-ID: the first event of a stream.
  const stream = await SseStream.open(done.id);
  const first = await stream.waitFor(() => true);
  stream.close();
  return {
    pools: {
      ...pools,
      session_id: sessions.map((s) => s.id),
      input_id: [...sessions.flatMap((s) => (s.yuxi.receipt?.input_id ? [s.yuxi.receipt.input_id] : [])), followUp.input_id],
      expected_run_id: pools.run_id!,
      idempotency_key: idempotencyKeys,
      'last-event-id': [first.id],
      model: ['scripted:echo'],
      image_url: [PIXEL],
      file_id: [...drafts.map((f) => f.id), ...attached.map((f) => f.id), ...inlineFiles],
      key_id: keyIds,
      project_id: [project.id],
      public_agent_id: ['default-chatbot', 'file-declared', plainAgent, approvalAgent],
      own_agent_id: [plainAgent, approvalAgent, `fuzz-new-${nonce}`],
    },
    revokedKey: revoked.secret,
    protect,
    streams: [stream],
  };
}

/** A forged HS256 token without a valid signature, and one with alg none. */
function forgedTokens(): string[] {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = part({ sub: 'fuzz', iss: 'https://issuer.test', aud: 'yuxi-tests', exp: 4_102_444_800 });
  return [`Bearer ${part({ alg: 'HS256', typ: 'JWT' })}.${claims}.${randomBytes(32).toString('base64url')}`, `Bearer ${part({ alg: 'none', typ: 'JWT' })}.${claims}.`];
}

/** The settings that replay this run: the seed, and the case count where it is not the default. */
const reproduce = `FUZZ_SEED=${SEED}${process.env.FUZZ_RUNS === undefined ? '' : ` FUZZ_RUNS=${RUNS}`}`;

/** A stable 32-bit seed per operation, derived from the run's seed. */
function seedFor(op: Operation): number {
  let hash = SEED >>> 0;
  for (const char of op.name) hash = Math.imul(hash ^ char.charCodeAt(0), 16_777_619) >>> 0;
  return hash;
}

/** One line per distinct problem, with its first example; the count of the rest. */
function report(op: Operation, failures: { problems: string[]; exchange: Exchange }[]): string {
  const byProblem = new Map<string, { count: number; exchange: Exchange }>();
  for (const { problems, exchange } of failures) {
    for (const problem of problems) {
      const key = problem.replace(/"[^"]*"/g, '"…"');
      const seen = byProblem.get(key);
      if (seen) seen.count += 1;
      else byProblem.set(key, { count: 1, exchange });
    }
  }
  const lines = [...byProblem.entries()].slice(0, 8).map(([problem, { count, exchange }]) => `  • ${problem} (×${count}), e.g.\n${describeExchange(exchange)}`);
  const more = byProblem.size > 8 ? `\n  … and ${byProblem.size - 8} more distinct problems` : '';
  return `${op.name}: ${failures.length} non-conforming answers (${reproduce} reproduces):\n${lines.join('\n')}${more}`;
}

describe('OpenAPI-driven fuzzing (bounded)', () => {
  const nonce = `${SEED}-${Date.now().toString(36)}`;
  let fixtures: Awaited<ReturnType<typeof prepare>>;
  let sendOptions: SendOptions;
  let total = 0;
  let uploaded = 0;

  before(async () => {
    console.log(`[fuzz] seed ${SEED} (${reproduce} reproduces), ${RUNS} cases per operation, ${operations.length} operations`);
    fixtures = await prepare(nonce);
    let counter = 0;
    sendOptions = { baseUrl: env.apiUrl, apiKey: env.apiKey, nextIdempotencyKey: () => `fuzz-${nonce}-${(counter += 1)}`, lastKeys: new Map(), timeoutMs: 15_000 };
  });

  after(() => {
    for (const stream of fixtures?.streams ?? []) stream.close();
    console.log(`[fuzz] ${total} requests (${reproduce})`);
  });

  for (const op of operations) {
    it(`${op.name}: every answer declared and conforming, no 5xx`, async () => {
      const admin = op.path.startsWith(`${ADMIN}/`);
      const context: CaseContext = {
        components: document.components?.schemas ?? {},
        known: (name) => {
          if (name === 'agent_id') return fixtures.pools[admin ? 'own_agent_id' : 'public_agent_id'] ?? [];
          return fixtures.pools[name] ?? [];
        },
        badCredentials: ['', 'Bearer', 'Bearer junk', 'Basic dXNlcjpwYXNz', `bearer ${env.apiKey}x`, `Bearer ${fixtures.revokedKey}`, `Bearer ${'k'.repeat(4000)}`, 'Bearer a.b.c', ...forgedTokens()],
      };
      const cases = fc.sample(fuzzCases(op, context), { seed: seedFor(op), numRuns: RUNS });
      const failures: { problems: string[]; exchange: Exchange }[] = [];
      const statuses = new Map<number, number>();
      let sent = 0;
      for (const fuzz of cases) {
        // The fuzzer's admin writes stay off what it did not create: the suite's key, fixture agents.
        if (admin && op.method !== 'GET') {
          const target = fuzz.pathParams.agent_id ?? fuzz.pathParams.key_id;
          if (target !== undefined && (fixtures.protect.agents.has(target) || fixtures.protect.keys.has(target))) continue;
        }
        const exchange = await send(op, fuzz, sendOptions);
        sent += 1;
        // Drafts the fuzzer uploads join the file ids the operations after this one use (a few).
        if (op.multipart && exchange.status === 201 && uploaded < MAX_UPLOADED_IDS) {
          fixtures.pools.file_id!.push((JSON.parse(exchange.text) as { id: string }).id);
          uploaded += 1;
        }
        statuses.set(exchange.status, (statuses.get(exchange.status) ?? 0) + 1);
        const problems = problemsOf(checker, op, exchange);
        if (problems.length > 0) failures.push({ problems, exchange });
      }
      total += sent;
      const histogram = [...statuses.entries()].sort(([a], [b]) => a - b).map(([status, count]) => `${status}×${count}`).join(' ');
      console.log(`[fuzz] ${op.name}: ${sent} requests: ${histogram}`);
      if (failures.length > 0) assert.fail(report(op, failures));
    });
  }

  it('concurrent duplicates and races on one resource answer as declared, never with a 5xx', async () => {
    const find = (name: string) => operations.find((op) => op.name === name)!;
    // Fresh sessions: the fuzzing above may have archived its own.
    const create = async (input: string) => (await ok(`${API}/sessions`, { body: { agent_id: 'default-chatbot', input }, idempotencyKey: newKey('fuzz-race') }, 201)).id as string;
    const quiet = await create('race');
    const busy = await create('[[delay:300]][[words:100]]');
    const raceAgent = `fuzz-race-${nonce}`;
    const raceKey = (await ok(`${ADMIN}/api-keys`, { body: { name: 'fuzz-race', access: 'agents' } }, 201)).id;
    const message = (text: string) => ({ events: [{ type: 'agent.session.input.message', yuxi: { mode: 'follow_up' }, input: text }] });
    const request = (pathParams: Record<string, string>, value?: unknown, key?: string): FuzzCase => ({
      pathParams,
      query: [],
      headers: key ? { 'idempotency-key': key } : {},
      body: value === undefined ? undefined : { kind: 'json', value },
      notes: ['one of 8 concurrent requests'],
    });
    const sameKey = newKey('fuzz-race');
    const otherKey = newKey('fuzz-race');
    // Each race: 8 requests at once, then (where the answers must agree) what they must agree on.
    const races: { name: string; op: Operation; make: (i: number) => FuzzCase; agree?: boolean }[] = [
      { name: 'one create, one key', op: find(`POST ${API}/sessions`), make: () => request({}, { agent_id: 'default-chatbot', input: 'race' }, sameKey), agree: true },
      { name: 'creates of different intents, one key', op: find(`POST ${API}/sessions`), make: (i) => request({}, { agent_id: 'default-chatbot', title: `race ${i}` }, otherKey) },
      { name: 'one follow-up, one key', op: find(`POST ${API}/sessions/{session_id}/events`), make: () => request({ session_id: quiet }, message('same'), `${sameKey}-event`), agree: true },
      { name: 'follow-ups, a key each', op: find(`POST ${API}/sessions/{session_id}/events`), make: (i) => request({ session_id: busy }, message(`race ${i}`), newKey('fuzz-race')) },
      { name: 'cancels of one turn', op: find(`POST ${API}/sessions/{session_id}/events`), make: () => request({ session_id: busy }, { events: [{ type: 'agent.session.input.cancel' }] }, newKey('fuzz-race')) },
      { name: 'updates of one session', op: find(`POST ${API}/sessions/{session_id}`), make: (i) => request({ session_id: quiet }, { yuxi: { title: `race ${i}`, is_pinned: i % 2 === 0 } }) },
      { name: 'creates of one new agent', op: find(`PUT ${ADMIN}/agents/{agent_id}`), make: (i) => request({ agent_id: raceAgent }, { name: `race ${i}`, model: 'scripted:echo' }) },
      { name: 'deletes of one agent', op: find(`DELETE ${ADMIN}/agents/{agent_id}`), make: () => request({ agent_id: raceAgent }) },
      { name: 'revocations of one key', op: find(`DELETE ${ADMIN}/api-keys/{key_id}`), make: () => request({ key_id: raceKey }) },
      { name: 'archives of one session', op: find(`POST ${API}/sessions/{session_id}/archive`), make: () => request({ session_id: quiet }) },
    ];
    const problems: string[] = [];
    for (const race of races) {
      const exchanges = await Promise.all(Array.from({ length: 8 }, (_, i) => send(race.op, race.make(i), sendOptions)));
      total += exchanges.length;
      for (const exchange of exchanges) {
        const found = problemsOf(checker, race.op, exchange);
        if (found.length > 0) problems.push(`${race.name}: ${found.join('; ')}\n${describeExchange(exchange)}`);
      }
      // A retry with the same key and intent gets the first answer, however the retries interleave.
      const answers = new Set(exchanges.filter((e) => e.status < 300).map((e) => `${e.status} ${e.text}`));
      if (race.agree && answers.size !== 1) problems.push(`${race.name}: ${answers.size} different successful answers to one key and intent: ${[...answers].map((a) => a.slice(0, 120)).join(' | ')}`);
    }
    assert.deepEqual(problems, []);
  });

  it('a wrong method on every documented path is a 405 with Allow; an unknown path a 404', async () => {
    const problems: string[] = [];
    for (const path of Object.keys(document.paths as Record<string, unknown>)) {
      const concrete = path.replace(/\{\w+\}/g, '0190f6a2-8bdf-7435-8da3-a93fcf70dbb0');
      // Allow lists what every documented template matching the path takes (/agents/files is also /agents/{agent_id}).
      const matching = Object.entries(document.paths as Record<string, Record<string, unknown>>).filter(([template]) => templateMatches(template, concrete));
      const methods = ['get', 'post', 'put', 'delete', 'patch'].filter((m) => matching.some(([, other]) => other[m]));
      const wrong = ['put', 'patch', 'delete', 'post'].find((m) => !methods.includes(m))!;
      const res = await http(concrete, { method: wrong.toUpperCase() });
      const allow = [...new Set([...methods.map((m) => m.toUpperCase()), ...(methods.includes('get') ? ['HEAD'] : [])])].sort().join(', ');
      if (res.status !== 405 || res.headers.get('allow') !== allow || res.body?.error?.code !== 'method_not_allowed' || !res.headers.get('x-request-id')) {
        problems.push(`${wrong.toUpperCase()} ${concrete}: ${res.status} Allow=${res.headers.get('allow')} (expected 405 Allow=${allow}) ${res.text.slice(0, 200)}`);
      }
    }
    for (const path of ['/api/v1/nothing', `${API}/sessions/x/y/z/w`, '/api/v2/agents']) {
      const res = await http(path);
      if (res.status !== 404 || res.body?.error?.code !== 'route_not_found') problems.push(`GET ${path}: ${res.status} ${res.text.slice(0, 200)}`);
    }
    assert.deepEqual(problems, []);
  });
});

/** Whether a document path template (`{param}` = one segment) matches a concrete path. */
function templateMatches(template: string, path: string): boolean {
  const pattern = template.split(/\{\w+\}/).map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')).join('[^/]+');
  return new RegExp(`^${pattern}$`).test(path);
}
