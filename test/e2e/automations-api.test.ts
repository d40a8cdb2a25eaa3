import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { before, describe, it } from 'node:test';
import { env } from '../support/env.js';
import { uploadDraft } from '../support/files.js';
import { API, type HttpResult, newKey } from '../support/http.js';
import { asEndUser, call, type Caller, createSessionAs, newProductUser, openStreamAs, until } from '../support/identity.js';

// The automations resource through the public API: create (periodic with 5 and 6 fields, once),
// what a create refuses and why, pages, updates that move the next time, pause and resume, delete.
// Firing itself (timers, the sweep, overlap) is tested where the clock is.

const AUTOMATIONS = `${API}/automations`;
const PREVIEW = `${API}/automation-schedules/preview`;

const INPUT = [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Summarise the day.' }] }];
const newSessionTarget = (extra: object = {}) => ({ type: 'new_session', agent_id: 'default-chatbot', environment: { type: 'none' }, input: INPUT, ...extra });
const periodic = (expression: string, timezone = 'UTC', extra: object = {}) => ({ name: `p ${expression}`, type: 'periodic', expression, timezone, target: newSessionTarget(), ...extra });

function assertError(res: HttpResult, status: number, code: string, field?: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.body.error.code, code, res.text);
  if (field !== undefined) {
    const named = res.body.error.details?.field ?? res.body.error.details?.fields?.map((f: { field: string }) => f.field);
    assert.ok([named].flat().includes(field), `${field} is named: ${res.text}`);
  }
}

async function create(caller: Caller, body: object, baseUrl?: string): Promise<any> {
  const res = await call(caller, AUTOMATIONS, { body, idempotencyKey: newKey('automation'), baseUrl });
  assert.equal(res.status, 201, res.text);
  return res.body;
}

async function preview(caller: Caller, expression: string, timezone: string, count = 5): Promise<number[]> {
  const res = await call(caller, `${PREVIEW}?${new URLSearchParams({ expression, timezone, count: String(count) })}`);
  assert.equal(res.status, 200, res.text);
  return res.body.next_run_times;
}

describe('automations: the resource in the public API', () => {
  let owner: Caller;

  before(async () => {
    owner = (await newProductUser('automation owner')).caller;
  });

  it('creates periodic automations of 5 and 6 fields with their next time in the zone, and once automations at run_at', async () => {
    const weekday = await create(owner, periodic('0 9 * * 1-5', 'America/New_York', { metadata: { team: 'ops' }, yuxi: { overlap: 'queue', catch_up: 'all' } }));
    assert.equal(weekday.object, 'agent.automation');
    assert.equal(weekday.type, 'periodic');
    assert.equal(weekday.expression, '0 9 * * 1-5');
    assert.equal(weekday.timezone, 'America/New_York');
    assert.equal(weekday.run_at, undefined);
    assert.equal(weekday.status, 'active');
    assert.equal(weekday.pause_reason, null);
    assert.deepEqual(weekday.created_by, { type: 'developer' });
    assert.deepEqual(weekday.metadata, { team: 'ops' });
    assert.deepEqual(weekday.target, { type: 'new_session', agent: null, agent_id: 'default-chatbot', environment: { type: 'none' }, input: INPUT, metadata: {}, vault_ids: [] });
    assert.equal(weekday.yuxi.overlap, 'queue');
    assert.equal(weekday.yuxi.catch_up, 'all');
    // 09:00 in New York on a weekday: the preview (the same schedule after now) agrees.
    assert.equal(weekday.yuxi.next_run_at, (await preview(owner, '0 9 * * 1-5', 'America/New_York'))[0]);
    const at = new Date(weekday.yuxi.next_run_at * 1000);
    assert.equal(new Intl.DateTimeFormat('en-US', { timeZone: 'America/New_York', hour: 'numeric', minute: 'numeric', hourCycle: 'h23' }).format(at), '09:00');
    assert.ok(weekday.yuxi.next_run_at > weekday.created_at);

    const everyTen = await create(owner, periodic('*/10 * * * * *'));
    assert.equal(everyTen.yuxi.overlap, 'skip', 'the default overlap');
    assert.equal(everyTen.yuxi.catch_up, 'latest', 'the default catch-up');
    assert.equal(everyTen.yuxi.next_run_at % 10, 0, 'six fields: seconds first');
    assert.ok(everyTen.yuxi.next_run_at - everyTen.created_at <= 11);
    // It would fire every ten seconds for the rest of the run: gone once read.
    assert.equal((await call(owner, `${AUTOMATIONS}/${everyTen.id}`, { method: 'DELETE' })).status, 200);

    const runAt = Math.floor(Date.now() / 1000) + 3600;
    const once = await create(owner, { name: 'once', type: 'once', run_at: runAt, target: newSessionTarget() });
    assert.equal(once.type, 'once');
    assert.equal(once.run_at, runAt);
    assert.equal(once.expression, undefined);
    assert.equal(once.yuxi.next_run_at, runAt);

    const read = await call(owner, `${AUTOMATIONS}/${once.id}`);
    assert.deepEqual(read.body, once);
  });

  it('refuses bad schedules, past times, unsupported and invisible targets, naming the field', async () => {
    const bad = async (body: object, status: number, code: string, field?: string) => assertError(await call(owner, AUTOMATIONS, { body, idempotencyKey: newKey('bad') }), status, code, field);
    await bad(periodic('61 * * * *'), 422, 'validation_failed', 'expression');
    await bad(periodic('* * *'), 422, 'validation_failed', 'expression');
    await bad(periodic('0 9 * * *', 'Mars/Olympus_Mons'), 422, 'validation_failed', 'timezone');
    await bad({ name: 'no zone', type: 'periodic', expression: '0 9 * * *', target: newSessionTarget() }, 422, 'validation_failed', 'timezone');
    await bad({ name: 'past', type: 'once', run_at: Math.floor(Date.now() / 1000) - 60, target: newSessionTarget() }, 422, 'validation_failed', 'run_at');
    await bad({ name: 'mixed', type: 'once', run_at: Math.floor(Date.now() / 1000) + 60, expression: '0 9 * * *', target: newSessionTarget() }, 422, 'validation_failed', 'expression');
    await bad(periodic('0 9 * * *', 'UTC', { name: '' }), 422, 'validation_failed', 'name');
    await bad(periodic('0 9 * * *', 'UTC', { target: newSessionTarget({ agent_id: undefined, agent: { model: 'scripted:echo' } }) }), 422, 'not_implemented', 'target.agent');
    await bad(periodic('0 9 * * *', 'UTC', { target: newSessionTarget({ vault_ids: ['vault_1'] }) }), 422, 'not_implemented', 'target.vault_ids');
    await bad(periodic('0 9 * * *', 'UTC', { target: newSessionTarget({ input: [{ role: 'assistant', content: 'hi' }] }) }), 422, 'validation_failed', 'target.input');
    await bad(periodic('0 9 * * *', 'UTC', { target: newSessionTarget({ environment: { type: 'elsewhere' } }) }), 422, 'validation_failed', 'target.environment.type');
    await bad(periodic('0 9 * * *', 'UTC', { target: newSessionTarget({ agent_id: 'no-such-agent' }) }), 404, 'not_found');
    await bad(periodic('0 9 * * *', 'UTC', { target: { type: 'existing_session', session_id: randomUUID(), instructions: 'go' } }), 404, 'not_found');
    const foreign = await createSessionAs((await newProductUser('someone else')).caller);
    await bad(periodic('0 9 * * *', 'UTC', { target: { type: 'existing_session', session_id: foreign.id, instructions: 'go' } }), 404, 'not_found');
    const mine = await createSessionAs(owner);
    await bad(periodic('0 9 * * *', 'UTC', { target: { type: 'existing_session', session_id: mine.id, instructions: '' } }), 422, 'validation_failed', 'target.instructions');
    await bad(periodic('0 9 * * *', 'UTC', { target: { type: 'existing_session', session_id: mine.id, instructions: 'go', input: INPUT } }), 422, 'validation_failed', 'target.input');
    assertError(await call(owner, AUTOMATIONS, { body: periodic('0 9 * * *') }), 422, 'idempotency_key_required');

    // A member of a cooperation tree is no target: its root is.
    const root = await createSessionAs(owner, '[[tool:create_subagent {"task":"hidden","name":"m"}]] [[tool:wait_subagents {}]]', newKey('create'), 'coordinator');
    const stream = await openStreamAs(owner, root.id);
    try {
      await stream.waitForType('agent.session.turn.completed');
    } finally {
      stream.close();
    }
    const member = ((await call(owner, `${API}/sessions?root_session_id=${root.id}`)).body.data as any[]).find((s) => s.id !== root.id);
    assert.ok(member, 'the tree has a member');
    await bad(periodic('0 9 * * *', 'UTC', { target: { type: 'existing_session', session_id: member.id, instructions: 'go' } }), 409, 'state_conflict', 'target.session_id');
    const onRoot = await create(owner, periodic('0 9 * * *', 'UTC', { target: { type: 'existing_session', session_id: root.id, instructions: 'go on' } }));
    assert.deepEqual(onRoot.target, { type: 'existing_session', session_id: root.id, instructions: 'go on' });
  });

  it('checks a new session target\'s environment files as a session create does: another caller\'s or an unknown one is 404 naming it, at create and update', async () => {
    const withFile = (fileId: string) => newSessionTarget({ environment: { type: 'openai_hosted', files: [{ type: 'file_id', file_id: fileId, path: 'data/in.csv' }] } });
    const theirs = await uploadDraft('theirs', 'theirs.txt', { token: (await newProductUser('file owner')).caller.token });
    for (const fileId of [theirs.id, '0'.repeat(32)]) {
      const res = await call(owner, AUTOMATIONS, { body: periodic('0 9 * * *', 'UTC', { target: withFile(fileId) }), idempotencyKey: newKey('file') });
      assertError(res, 404, 'not_found', 'target.environment.files[0].file_id');
      assert.equal(res.body.error.details.file_id, fileId, res.text);
    }
    const mine = await uploadDraft('a,b\n1,2\n', 'in.csv', { token: owner.token });
    const a = await create(owner, periodic('0 9 * * *', 'UTC', { target: withFile(mine.id) }));
    assertError(await call(owner, `${AUTOMATIONS}/${a.id}`, { body: { target: withFile(theirs.id) } }), 404, 'not_found', 'target.environment.files[0].file_id');
    assert.deepEqual((await call(owner, `${AUTOMATIONS}/${a.id}`)).body.target, a.target, 'a refused update changes nothing');
  });

  it('previews a schedule: the next times in order, 422 naming the field for a bad one', async () => {
    const times = await preview(owner, '30 2 * * *', 'Europe/Berlin', 3);
    assert.equal(times.length, 3);
    assert.ok(times[0]! > Date.now() / 1000 - 1 && times[0]! < times[1]! && times[1]! < times[2]!);
    assert.equal((await preview(owner, '*/15 * * * * *', 'UTC')).length, 5, 'five by default');
    assertError(await call(owner, `${PREVIEW}?expression=nope&timezone=UTC`), 422, 'validation_failed', 'expression');
    assertError(await call(owner, `${PREVIEW}?expression=${encodeURIComponent('0 9 * * *')}&timezone=Nowhere%2FCity`), 422, 'validation_failed', 'timezone');
    assertError(await call(owner, `${PREVIEW}?expression=${encodeURIComponent('0 9 * * *')}&timezone=UTC&count=21`), 422, 'validation_failed', 'count');
  });

  it('lists the caller\'s automations in pages, newest first or oldest first, and by target session', async () => {
    const caller = (await newProductUser('lister')).caller;
    const session = await createSessionAs(caller);
    const made = [];
    for (let i = 0; i < 3; i += 1) made.push(await create(caller, periodic(`${i} 9 * * *`)));
    made.push(await create(caller, periodic('0 10 * * *', 'UTC', { target: { type: 'existing_session', session_id: session.id, instructions: 'check in' } })));
    const ids = made.map((a) => a.id);

    const first = await call(caller, `${AUTOMATIONS}?limit=3`);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.object, 'list');
    assert.deepEqual(first.body.data.map((a: any) => a.id), ids.slice().reverse().slice(0, 3), 'newest first');
    assert.equal(first.body.has_more, true);
    assert.equal(first.body.first_id, ids[3]);
    assert.equal(first.body.last_id, ids[1]);
    const rest = await call(caller, `${AUTOMATIONS}?limit=3&after=${first.body.last_id}`);
    assert.deepEqual(rest.body.data.map((a: any) => a.id), [ids[0]]);
    assert.equal(rest.body.has_more, false);
    const asc = await call(caller, `${AUTOMATIONS}?order=asc`);
    assert.deepEqual(asc.body.data.map((a: any) => a.id), ids);
    const bySession = await call(caller, `${AUTOMATIONS}?session_id=${session.id}`);
    assert.deepEqual(bySession.body.data.map((a: any) => a.id), [ids[3]]);
    assert.deepEqual((await call(caller, `${AUTOMATIONS}?session_id=${randomUUID()}`)).body.data, []);
    assertError(await call(caller, `${AUTOMATIONS}?after=${randomUUID()}`), 400, 'invalid_cursor');
    assertError(await call(caller, `${AUTOMATIONS}?limit=101`), 422, 'validation_failed', 'limit');
  });

  it('updates fields; a schedule change moves the next time; the other type\'s fields and another target type are 422', async () => {
    const a = await create(owner, periodic('0 9 * * *', 'UTC'));
    const renamed = await call(owner, `${AUTOMATIONS}/${a.id}`, { body: { name: 'renamed', metadata: { k: 'v' }, yuxi: { overlap: 'cancel_previous' } } });
    assert.equal(renamed.status, 200, renamed.text);
    assert.equal(renamed.body.name, 'renamed');
    assert.deepEqual(renamed.body.metadata, { k: 'v' });
    assert.equal(renamed.body.yuxi.overlap, 'cancel_previous');
    assert.equal(renamed.body.yuxi.next_run_at, a.yuxi.next_run_at, 'no schedule change, the same next time');

    const moved = await call(owner, `${AUTOMATIONS}/${a.id}`, { body: { expression: '15 14 * * *', timezone: 'Asia/Tokyo' } });
    assert.equal(moved.status, 200, moved.text);
    assert.equal(moved.body.expression, '15 14 * * *');
    assert.equal(moved.body.timezone, 'Asia/Tokyo');
    assert.equal(moved.body.yuxi.next_run_at, (await preview(owner, '15 14 * * *', 'Asia/Tokyo'))[0]);
    assert.notEqual(moved.body.yuxi.next_run_at, a.yuxi.next_run_at);

    const retargeted = await call(owner, `${AUTOMATIONS}/${a.id}`, { body: { target: newSessionTarget({ input: [{ role: 'user', content: 'other words' }], metadata: { from: 'automation' } }) } });
    assert.equal(retargeted.status, 200, retargeted.text);
    assert.deepEqual(retargeted.body.target.input, [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'other words' }] }]);
    assert.deepEqual(retargeted.body.target.metadata, { from: 'automation' });

    assertError(await call(owner, `${AUTOMATIONS}/${a.id}`, { body: { run_at: Math.floor(Date.now() / 1000) + 60 } }), 422, 'validation_failed', 'run_at');
    assertError(await call(owner, `${AUTOMATIONS}/${a.id}`, { body: { expression: '99 * * * *' } }), 422, 'validation_failed', 'expression');
    const session = await createSessionAs(owner);
    assertError(await call(owner, `${AUTOMATIONS}/${a.id}`, { body: { target: { type: 'existing_session', session_id: session.id, instructions: 'x' } } }), 422, 'validation_failed', 'target.type');

    const runAt = Math.floor(Date.now() / 1000) + 7200;
    const once = await create(owner, { name: 'once', type: 'once', run_at: runAt, target: newSessionTarget() });
    const later = await call(owner, `${AUTOMATIONS}/${once.id}`, { body: { run_at: runAt + 60 } });
    assert.equal(later.status, 200, later.text);
    assert.equal(later.body.run_at, runAt + 60);
    assert.equal(later.body.yuxi.next_run_at, runAt + 60);
    assertError(await call(owner, `${AUTOMATIONS}/${once.id}`, { body: { expression: '0 9 * * *' } }), 422, 'validation_failed', 'expression');
    assertError(await call(owner, `${AUTOMATIONS}/${once.id}`, { body: { run_at: Math.floor(Date.now() / 1000) - 1 } }), 422, 'validation_failed', 'run_at');
  });

  it('pauses and resumes by state: paused has no next time, resumed counts it from now; a once whose time passed cannot resume', async () => {
    const a = await create(owner, periodic('0 */2 * * *', 'UTC'));
    const paused = await call(owner, `${AUTOMATIONS}/${a.id}/pause`, { method: 'POST' });
    assert.equal(paused.status, 200, paused.text);
    assert.equal(paused.body.status, 'paused');
    assert.equal(paused.body.pause_reason, null);
    assert.equal(paused.body.yuxi.next_run_at, null);
    const again = await call(owner, `${AUTOMATIONS}/${a.id}/pause`, { method: 'POST' });
    assert.deepEqual(again.body, paused.body, 'pausing a paused automation answers it as it is');
    // A schedule change while paused is kept for the resume.
    const edited = await call(owner, `${AUTOMATIONS}/${a.id}`, { body: { expression: '0 */3 * * *' } });
    assert.equal(edited.body.yuxi.next_run_at, null);
    const resumed = await call(owner, `${AUTOMATIONS}/${a.id}/resume`, { method: 'POST' });
    assert.equal(resumed.status, 200, resumed.text);
    assert.equal(resumed.body.status, 'active');
    assert.equal(resumed.body.yuxi.next_run_at, (await preview(owner, '0 */3 * * *', 'UTC'))[0]);
    const resumedAgain = await call(owner, `${AUTOMATIONS}/${a.id}/resume`, { method: 'POST' });
    assert.deepEqual(resumedAgain.body, resumed.body);

    const runAt = Math.floor(Date.now() / 1000) + 2;
    const once = await create(owner, { name: 'soon', type: 'once', run_at: runAt, target: newSessionTarget() });
    assert.equal((await call(owner, `${AUTOMATIONS}/${once.id}/pause`, { method: 'POST' })).body.status, 'paused');
    await until(async () => (Date.now() / 1000 > runAt + 1 ? true : undefined), { attempts: 100, intervalMs: 100 });
    assertError(await call(owner, `${AUTOMATIONS}/${once.id}/resume`, { method: 'POST' }), 409, 'state_conflict');
    const moved = await call(owner, `${AUTOMATIONS}/${once.id}`, { body: { run_at: Math.floor(Date.now() / 1000) + 3600 } });
    assert.equal(moved.body.yuxi.next_run_at, null, 'paused: the new time waits for the resume');
    const back = await call(owner, `${AUTOMATIONS}/${once.id}/resume`, { method: 'POST' });
    assert.equal(back.status, 200, back.text);
    assert.equal(back.body.yuxi.next_run_at, moved.body.run_at);
  });

  it('makes a completed once automation active again when given a future run_at, and fires it again then', async () => {
    const firstAt = Math.floor(Date.now() / 1000) + 2;
    const once = await create(owner, { name: 'twice', type: 'once', run_at: firstAt, target: newSessionTarget() });
    const completedWith = (count: number) => until(async () => {
      const read = await call(owner, `${AUTOMATIONS}/${once.id}`);
      const invocations = await call(owner, `${AUTOMATIONS}/${once.id}/invocations`);
      return read.body.status === 'completed' && invocations.body.data.length === count ? { read, invocations } : undefined;
    }, { attempts: 150, intervalMs: 200 });
    const first = await completedWith(1);
    assert.ok(first, 'its one time fired and it completed');
    assert.equal(first.read.body.yuxi.next_run_at, null);
    const resume = await call(owner, `${AUTOMATIONS}/${once.id}/resume`, { method: 'POST' });
    assertError(resume, 409, 'state_conflict');
    assert.match(resume.body.error.message, /set a future run_at/);
    assertError(await call(owner, `${AUTOMATIONS}/${once.id}`, { body: { run_at: Math.floor(Date.now() / 1000) - 1 } }), 422, 'validation_failed', 'run_at');
    assert.equal((await call(owner, `${AUTOMATIONS}/${once.id}`)).body.status, 'completed', 'a refused update leaves it completed');

    const againAt = Math.floor(Date.now() / 1000) + 2;
    const restarted = await call(owner, `${AUTOMATIONS}/${once.id}`, { body: { run_at: againAt } });
    assert.equal(restarted.status, 200, restarted.text);
    assert.equal(restarted.body.status, 'active');
    assert.equal(restarted.body.pause_reason, null);
    assert.equal(restarted.body.run_at, againAt);
    assert.equal(restarted.body.yuxi.next_run_at, againAt);
    const second = await completedWith(2);
    assert.ok(second, 'the new time fired too, and it completed again');
    assert.deepEqual(second.invocations.body.data.map((v: any) => v.scheduled_at), [againAt, firstAt]);
  });

  it('runs now: a manual invocation into a new session, replayed under the same key, listed and read; the schedule unchanged', async () => {
    const a = await create(owner, periodic('0 9 * * *', 'UTC'));
    const key = newKey('run');
    const run = await call(owner, `${AUTOMATIONS}/${a.id}/invocations`, { method: 'POST', idempotencyKey: key });
    assert.equal(run.status, 201, run.text);
    const invocation = run.body;
    assert.equal(invocation.object, 'agent.automation.invocation');
    assert.equal(invocation.automation_id, a.id);
    assert.deepEqual(invocation.source, { type: 'manual' });
    assert.equal(invocation.scheduled_at, null);
    assert.equal(invocation.status, 'completed');
    assert.equal(invocation.yuxi.reason, 'manual');
    assert.ok(invocation.session_id && invocation.yuxi.input_id, run.text);
    assert.equal((await call(owner, `${API}/sessions/${invocation.session_id}`)).status, 200, 'the session is the owner\'s');

    const replay = await call(owner, `${AUTOMATIONS}/${a.id}/invocations`, { method: 'POST', idempotencyKey: key });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.body.id, invocation.id, 'the same key, the same invocation');
    assertError(await call(owner, `${AUTOMATIONS}/${a.id}/invocations`, { method: 'POST' }), 422, 'idempotency_key_required');

    const listed = await call(owner, `${AUTOMATIONS}/${a.id}/invocations`);
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(listed.body.data.map((v: any) => v.id), [invocation.id], 'one fire for one key');
    const read = await call(owner, `${AUTOMATIONS}/${a.id}/invocations/${invocation.id}`);
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.id, invocation.id);
    assertError(await call(owner, `${AUTOMATIONS}/${a.id}/invocations/${randomUUID()}`), 404, 'not_found');
    assertError(await call(owner, `${AUTOMATIONS}/${randomUUID()}/invocations/${invocation.id}`), 404, 'not_found');
    assert.equal((await call(owner, `${AUTOMATIONS}/${a.id}`)).body.yuxi.next_run_at, a.yuxi.next_run_at, 'run now leaves the schedule as it was');
  });

  it('deletes an automation and its invocations; the target session stays', async () => {
    const session = await createSessionAs(owner);
    const a = await create(owner, periodic('0 9 * * *', 'UTC', { target: { type: 'existing_session', session_id: session.id, instructions: 'x' } }));
    const deleted = await call(owner, `${AUTOMATIONS}/${a.id}`, { method: 'DELETE' });
    assert.equal(deleted.status, 200, deleted.text);
    assert.deepEqual(deleted.body, { id: a.id, object: 'agent.automation.deleted', deleted: true });
    assertError(await call(owner, `${AUTOMATIONS}/${a.id}`), 404, 'not_found');
    assertError(await call(owner, `${AUTOMATIONS}/${a.id}/invocations`), 404, 'not_found');
    assertError(await call(owner, `${AUTOMATIONS}/${a.id}`, { method: 'DELETE' }), 404, 'not_found');
    assert.equal((await call(owner, `${API}/sessions/${session.id}`)).status, 200);
  });

  it('replays a create under the same Idempotency-Key and refuses another body under it', async () => {
    const key = newKey('automation');
    const body = periodic('0 7 * * *', 'UTC');
    const first = await call(owner, AUTOMATIONS, { body, idempotencyKey: key });
    assert.equal(first.status, 201, first.text);
    const replay = await call(owner, AUTOMATIONS, { body, idempotencyKey: key });
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('idempotent-replayed'), 'true');
    assert.equal(replay.text, first.text, 'byte for byte');
    assertError(await call(owner, AUTOMATIONS, { body: { ...body, name: 'other' }, idempotencyKey: key }), 409, 'idempotency_conflict');
    const listed = (await call(owner, `${AUTOMATIONS}?limit=100`)).body.data.filter((a: any) => a.id === first.body.id);
    assert.equal(listed.length, 1, 'one automation');
  });

  it('holds each owner to AUTOMATION_MAX_PER_OWNER and AUTOMATION_MIN_INTERVAL_S (a replica with 3 and 60 s)', async () => {
    const caller = (await newProductUser('limited')).caller;
    const base = env.apiUrlFileLimits;
    assertError(await call(caller, AUTOMATIONS, { body: periodic('*/30 * * * * *'), idempotencyKey: newKey('often'), baseUrl: base }), 422, 'validation_failed', 'expression');
    // Four creates at once against a limit of three: the owner's lock lets exactly three through.
    const raced = await Promise.all([0, 1, 2, 3].map((i) => call(caller, AUTOMATIONS, { body: periodic(`${i} * * * *`), idempotencyKey: newKey('race'), baseUrl: base })));
    assert.deepEqual(raced.map((res) => res.status).sort(), [201, 201, 201, 409], raced.map((res) => res.text).join('\n'));
    const over = raced.find((res) => res.status === 409)!;
    assertError(over, 409, 'automation_limit');
    assert.equal(over.body.error.details.limit, 3);
    const listed = await call(caller, AUTOMATIONS, { baseUrl: base });
    assert.equal(listed.body.data.length, 3);
    // Room again once one is deleted.
    assert.equal((await call(caller, `${AUTOMATIONS}/${listed.body.data[0].id}`, { method: 'DELETE', baseUrl: base })).status, 200);
    await create(caller, periodic('5 * * * *'), base);
  });

  it('counts an app\'s end users together against AUTOMATION_MAX_PER_OWNER: X-End-User-Id does not multiply it (a replica with 3)', async () => {
    const { caller } = await newProductUser('automating app', { app_id: 'automator' });
    const base = env.apiUrlFileLimits;
    const [first, second, third] = ['e1', 'e2', 'e3'].map((id) => asEndUser(caller, id));
    await create(first!, periodic('1 * * * *'), base);
    await create(first!, periodic('2 * * * *'), base);
    await create(second!, periodic('3 * * * *'), base);
    const over = await call(third!, AUTOMATIONS, { body: periodic('4 * * * *'), idempotencyKey: newKey('over'), baseUrl: base });
    assertError(over, 409, 'automation_limit');
    assert.equal(over.body.error.details.limit, 3);
    // Each end user still sees only their own.
    assert.equal((await call(first!, AUTOMATIONS, { baseUrl: base })).body.data.length, 2);
    assert.equal((await call(third!, AUTOMATIONS, { baseUrl: base })).body.data.length, 0);
  });
});
