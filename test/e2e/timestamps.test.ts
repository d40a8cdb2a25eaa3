import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, it } from 'node:test';
import { fakeModel, putAgent } from '../support/agents.js';
import { useFakeOpenAi } from '../support/fake-openai-suite.js';
import { API, http, newKey, postEvent } from '../support/http.js';
import { SseStream } from '../support/sse.js';

// Resource times are Unix seconds. Each step below starts in a later second than the one before
// (`nextSecond`), so a time that did not move, or moved with the wrong step, shows; every
// before/after comparison is between the server's own timestamps.

/** Waits until the clock is in a later second than when called. */
async function nextSecond(): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  while (Math.floor(Date.now() / 1000) === now) await sleep(20);
}

/** Waits on a condition read from outside (bounded: 300 reads, 50 ms apart). */
async function waitUntil(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 300; i += 1) {
    if (await condition()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting until ${what}`);
}

/** A reply the fake server holds back until `release()`: the run stays executing meanwhile. */
function held(): { until: Promise<void>; release: () => void } {
  let release!: () => void;
  const until = new Promise<void>((resolve) => (release = resolve));
  return { until, release };
}

async function create(body: Record<string, unknown>): Promise<any> {
  const res = await http(`${API}/sessions`, { body, idempotencyKey: newKey('create') });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function follow(sessionId: string, input: string): Promise<string> {
  const res = await postEvent(sessionId, { type: 'agent.session.input.message', input, yuxi: { mode: 'follow_up' } });
  assert.equal(res.status, 202, res.text);
  return res.body.input_id;
}

const session = async (id: string): Promise<any> => (await http(`${API}/sessions/${id}`)).body;
const input = async (sessionId: string, id: string): Promise<any> => (await http(`${API}/sessions/${sessionId}/inputs/${id}`)).body;
const turn = async (sessionId: string, id: string): Promise<any> => (await http(`${API}/sessions/${sessionId}/turns/${id}`)).body;

describe('resource timestamps', () => {
  const holds: (() => void)[] = [];
  // Registered first, so it runs first: held replies are let go before the fake server closes.
  after(() => holds.forEach((release) => release()));
  const openAi = useFakeOpenAi();
  const open = (sessionId: string): Promise<SseStream> => openAi.open(sessionId);
  function hold(): { until: Promise<void>; release: () => void } {
    const h = held();
    holds.push(h.release);
    return h;
  }

  it('last_active_at is the creation time while nothing happened; renaming, pinning, reading and archiving do not move it', async () => {
    const { id: agentId } = await putAgent({});
    const created = await create({ agent_id: agentId });
    assert.equal(created.last_active_at, created.created_at);
    await nextSecond();
    const renamed = await http(`${API}/sessions/${created.id}`, { body: { yuxi: { title: 'renamed', is_pinned: true, unread: false, metadata: { k: 'v' } } } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.last_active_at, created.created_at);
    await nextSecond();
    const archived = await http(`${API}/sessions/${created.id}/archive`, { method: 'POST' });
    assert.equal(archived.status, 200, archived.text);
    assert.equal(archived.body.last_active_at, created.created_at);
    assert.equal((await session(created.id)).last_active_at, created.created_at);
  });

  it('last_active_at moves with receipts, consumption, input cancels, runs and a turn cancel', async () => {
    const { id: agentId, model } = await putAgent({});
    const [h1, h2, h3] = [hold(), hold(), hold()];
    openAi.fake.script(fakeModel(model), [
      { text: 'one', until: h1.until },
      { text: 'two', until: h2.until },
      { text: 'four', until: h3.until },
    ]);
    const s = await create({ agent_id: agentId });
    const stream = await open(s.id);
    const requests = (n: number) => waitUntil(() => openAi.fake.requests(fakeModel(model)).length === n, `model call ${n} arrives`);

    // Received and consumed at once: the session moved to the consumption.
    await nextSecond();
    const first = await follow(s.id, 'one');
    await requests(1);
    const firstInput = await input(s.id, first);
    assert.ok(firstInput.received_at > s.created_at);
    assert.ok(firstInput.created_at >= firstInput.received_at);
    assert.equal((await session(s.id)).last_active_at, firstInput.created_at, 'consumption');

    // A receipt while the turn runs.
    await nextSecond();
    const before2 = Math.floor(Date.now() / 1000);
    const second = await follow(s.id, 'two');
    const after2 = Math.ceil(Date.now() / 1000);
    const queued = await input(s.id, second);
    assert.ok(queued.received_at >= before2 && queued.received_at <= after2, 'received_at is the receipt time');
    assert.ok(queued.received_at > firstInput.created_at);
    assert.equal((await session(s.id)).last_active_at, queued.received_at, 'receipt');

    // An input cancelled in a later second than it was received.
    const third = await follow(s.id, 'three');
    await nextSecond();
    assert.equal((await postEvent(s.id, { type: 'yuxi.session.input.cancel_input', input_id: third })).status, 202);
    const cancelled = await input(s.id, third);
    assert.equal(cancelled.status, 'cancelled');
    assert.ok(cancelled.cancelled_at > cancelled.received_at);
    assert.equal((await session(s.id)).last_active_at, cancelled.cancelled_at, 'input cancel');

    // The first turn ends and the queued input is consumed by the next.
    await nextSecond();
    h1.release();
    await requests(2);
    const firstTurn = await turn(s.id, firstInput.turn_id);
    assert.equal(firstTurn.status, 'completed');
    assert.ok(firstTurn.completed_at > cancelled.cancelled_at);
    const consumed = await input(s.id, second);
    assert.equal(consumed.received_at, queued.received_at, 'consumption does not change received_at');
    assert.ok(consumed.created_at >= firstTurn.completed_at);
    assert.equal((await session(s.id)).last_active_at, consumed.created_at, 'run end, then consumption');

    // The second turn's run ends in a later second.
    await nextSecond();
    h2.release();
    await stream.waitForType('agent.session.turn.completed', consumed.turn_id);
    const secondTurn = await turn(s.id, consumed.turn_id);
    assert.ok(secondTurn.completed_at > consumed.created_at);
    assert.equal((await session(s.id)).last_active_at, secondTurn.completed_at, 'run');

    // A turn cancelled in a later second than it started.
    const fourth = await follow(s.id, 'four');
    await requests(3);
    const running = await input(s.id, fourth);
    await nextSecond();
    assert.equal((await postEvent(s.id, { type: 'agent.session.input.cancel' })).status, 202);
    await stream.waitForType('agent.session.turn.cancelled', running.turn_id);
    const cancelledTurn = await turn(s.id, running.turn_id);
    assert.ok(cancelledTurn.completed_at > running.created_at);
    assert.equal((await session(s.id)).last_active_at, cancelledTurn.completed_at, 'turn cancel');
  });

  it('a session created with input was active at its creation, when the input was received', async () => {
    const { id: agentId, model } = await putAgent({});
    openAi.fake.script(fakeModel(model), [{ text: 'hi' }]);
    const before = Math.floor(Date.now() / 1000);
    const created = await create({ agent_id: agentId, input: 'hello' });
    const after = Math.ceil(Date.now() / 1000);
    const received = await input(created.id, created.yuxi.receipt.input_id);
    assert.equal(received.received_at, created.created_at);
    assert.ok(received.received_at >= before && received.received_at <= after, 'received_at is the receipt time');
    assert.equal(created.last_active_at, created.created_at);
  });

  it('a turn’s started_at is its first execution: runs resumed later do not reset it', async () => {
    const { id: agentId, model } = await putAgent({
      tools: [{ type: 'function', name: 'lookup', description: 'Looks something up', parameters: { type: 'object', properties: {} } }],
    });
    const resumed = hold();
    openAi.fake.script(fakeModel(model), [{ tool_calls: [{ id: 'l1', name: 'lookup', arguments: '{}' }] }, { text: 'found', until: resumed.until }]);
    const s = await create({ agent_id: agentId, input: 'look it up' });
    const stream = await open(s.id);
    const waiting = await stream.waitForType('yuxi.session.turn.waiting');
    const turnId = waiting.data.turn_id;
    const waited = await turn(s.id, turnId);
    assert.equal(waited.yuxi.runs.length, 1);
    assert.equal(waited.started_at, waited.yuxi.runs[0].started_at);
    const idle = (await session(s.id)).last_active_at;

    await nextSecond();
    const result = await postEvent(s.id, { type: 'tool_result', turn_id: turnId, call_id: 'l1', success: true, output: 'it' });
    assert.equal(result.status, 202, result.text);
    // The resumed run executes (its model call is held): the session was active when it resumed.
    await waitUntil(() => openAi.fake.requests(fakeModel(model)).length === 2, 'the resumed run calls the model');
    const executing = await turn(s.id, turnId);
    assert.equal(executing.started_at, waited.started_at, 'not reset while the resumed run executes');
    const resumedRun = (await http(`${API}/sessions/${s.id}/runs/${executing.yuxi.runs[1].id}`)).body;
    const active = (await session(s.id)).last_active_at;
    assert.ok(active > idle && active <= resumedRun.started_at, `last_active_at ${active} moved with the resumed run (${idle} before, run started ${resumedRun.started_at})`);
    resumed.release();
    const completed = await stream.waitForType('agent.session.turn.completed', turnId);
    const done = await turn(s.id, turnId);
    assert.equal(done.yuxi.runs.length, 2);
    assert.ok(done.yuxi.runs[1].started_at > waited.started_at, 'the resumed run started in a later second');
    assert.equal(done.started_at, waited.started_at);
    assert.equal(completed.data.turn.started_at, waited.started_at);
    assert.ok(done.completed_at >= done.yuxi.runs[1].started_at);
    assert.equal((await session(s.id)).last_active_at, done.completed_at);
  });
});
