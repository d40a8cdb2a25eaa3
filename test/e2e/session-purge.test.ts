import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { createSessionWith } from '../support/agents.js';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { uploadDraft } from '../support/files.js';
import { API, http, newKey } from '../support/http.js';
import { until } from '../support/identity.js';
import { scrape, total } from '../support/metrics.js';
import { completedFollowUp } from '../support/scenarios.js';
import { SseStream } from '../support/sse.js';

// Retention kind deleted_sessions on the suite's stack (README "Retention"): once
// SESSION_PURGE_AFTER_S (7 days here, the default) has passed since a delete, by the lifecycle
// clock, every row the session owns is gone; one deleted less long ago, and live sessions, are
// untouched; a fork keeps its deleted source (its history stays readable) until the fork is purged
// too; a cooperation tree goes whole. The clock moves through the admin route and always goes back
// to 0; the rows are read straight from Postgres (read only).

const GRACE_S = 7 * 24 * 3600;
/** Long enough for the worker's sweep (every second here) to purge what is due, on a loaded machine. */
const PURGE_WAIT = { attempts: 600, intervalMs: 200 };

async function setClock(offsetS: number): Promise<void> {
  const res = await http('/api/v1/admin/lifecycle-clock', { method: 'PUT', body: { offset_s: offsetS } });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.offset_s, offsetS);
}

/** Every row of each session-owned table that names the session (its own rows; a fork's lineage by either end). */
async function rowsOf(sessionId: string): Promise<Record<string, number>> {
  const [row] = await query(
    `SELECT (SELECT count(*) FROM sessions WHERE id = $1)::int AS sessions,
            (SELECT count(*) FROM items WHERE session_id = $1)::int AS items,
            (SELECT count(*) FROM inputs WHERE session_id = $1)::int AS inputs,
            (SELECT count(*) FROM turns WHERE session_id = $1)::int AS turns,
            (SELECT count(*) FROM runs WHERE session_id = $1)::int AS runs,
            (SELECT count(*) FROM run_steps WHERE session_id = $1)::int AS steps,
            (SELECT count(*) FROM model_requests WHERE session_id = $1)::int AS model_requests,
            (SELECT count(*) FROM session_events WHERE session_id = $1)::int AS events,
            (SELECT count(*) FROM session_spans WHERE session_id = $1)::int AS spans,
            (SELECT count(*) FROM idempotency_receipts WHERE session_id = $1)::int AS receipts,
            (SELECT count(*) FROM cooperation_signals WHERE member_session_id = $1 OR parent_session_id = $1)::int AS signals,
            (SELECT count(*) FROM session_lineage WHERE session_id = $1 OR ancestor_id = $1)::int AS lineage,
            (SELECT count(*) FROM session_artifacts WHERE session_id = $1)::int AS artifacts,
            (SELECT count(*) FROM workspaces WHERE workdir_id = $1)::int AS workspaces,
            (SELECT count(*) FROM workspace_versions WHERE workdir_id = $1 OR session_id = $1)::int AS workspace_versions,
            (SELECT count(*) FROM files WHERE session_id = $1)::int AS files`,
    [sessionId],
  );
  return row;
}

const nothing = (rows: Record<string, number>): boolean => Object.values(rows).every((n) => n === 0);

/**
 * The session kept every row it had: the same counts, but spans, which arrive after the request
 * that made them (the DELETE's own span is exported in a later batch): at least as many.
 */
/**
 * Every row stays but the outbox's: its replay window goes by the lifecycle clock too, so a move past
 * EVENTS_REPLAY_TTL_SECONDS prunes it to the session's newest row, purge or not.
 */
async function keptEvery(sessionId: string, before: Record<string, number>, what: string): Promise<void> {
  const { spans, events, ...now } = await rowsOf(sessionId);
  const { spans: spansBefore, events: eventsBefore, ...rest } = before;
  assert.deepEqual(now, rest, what);
  assert.ok(spans! >= spansBefore!, `${what}: spans`);
  assert.ok(events! >= 1 && events! <= eventsBefore!, `${what}: the outbox keeps at least its newest row`);
}

/** Waits (bounded) until no row of the session is left; fails naming what is. */
async function purged(sessionId: string): Promise<void> {
  const gone = await until(async () => (nothing(await rowsOf(sessionId)) ? true : undefined), PURGE_WAIT);
  assert.ok(gone, `session ${sessionId} purged; left: ${JSON.stringify(await rowsOf(sessionId))}`);
}

/** The worker's failed deleted_sessions batches and the sessions it set aside: neither may rise while a test purges. */
async function purgeFailures(): Promise<number> {
  const metrics = await scrape(env.workerHealthUrl);
  return total(metrics, 'yuxi_retention_failures_total', { kind: 'deleted_sessions' }) + total(metrics, 'yuxi_session_purge_quarantined_total');
}

async function deleted(sessionId: string): Promise<void> {
  const res = await http(`${API}/sessions/${sessionId}`, { method: 'DELETE' });
  assert.equal(res.status, 200, res.text);
}

async function itemsOf(sessionId: string): Promise<any[]> {
  const res = await http(`${API}/sessions/${sessionId}/items?order=asc&limit=100`);
  assert.equal(res.status, 200, res.text);
  return res.body.data;
}

describe('retention deleted_sessions: the purge of deleted sessions', () => {
  const streams: SseStream[] = [];
  after(async () => {
    streams.forEach((stream) => stream.close());
    await setClock(0);
  });
  const open = async (id: string): Promise<{ id: string; stream: SseStream }> => {
    const stream = await SseStream.open(id);
    streams.push(stream);
    return { id, stream };
  };
  const tool = (name: string, args: object): string => `[[tool:${name} ${JSON.stringify(args)}]]`;

  it('removes every row of a session deleted longer ago than the grace, its workspace and files included; a session deleted less long ago and live ones stay', async () => {
    const draft = await uploadDraft('purged attachment\n'.repeat(20), 'notes.txt');
    const created = await http(`${API}/sessions`, {
      idempotencyKey: newKey('purge'),
      body: { agent_id: 'default-chatbot', input: 'first', environment: { type: 'openai_hosted' }, yuxi: { attachment_file_ids: [draft.id] } },
    });
    assert.equal(created.status, 201, created.text);
    const doomed = await open(created.body.id);
    await doomed.stream.waitFor((e) => e.type === 'agent.session.turn.completed', 60_000);
    await completedFollowUp(doomed, tool('write_file', { path: 'a.txt', content: 'to be purged\n' }));
    const live = await open((await createSessionWith('default-chatbot')).id);
    await completedFollowUp(live, 'stays');
    const recent = await open((await createSessionWith('default-chatbot')).id);
    await completedFollowUp(recent, 'deleted later');

    const before = await rowsOf(doomed.id);
    for (const table of ['sessions', 'items', 'inputs', 'turns', 'runs', 'steps', 'events', 'receipts', 'workspaces', 'workspace_versions', 'artifacts', 'files']) {
      assert.ok(before[table]! > 0, `the session has ${table} rows before (${JSON.stringify(before)})`);
    }
    const liveBefore = await rowsOf(live.id);
    const metricsBefore = total(await scrape(env.workerHealthUrl), 'yuxi_retention_rows_removed_total', { kind: 'deleted_sessions' });
    const failuresBefore = await purgeFailures();

    await deleted(doomed.id);
    try {
      // `recent` is deleted an hour later by the lifecycle clock (delete stamps deleted_at by it):
      // then the clock stands half an hour past the doomed session's grace, well before recent's.
      await setClock(3600);
      await deleted(recent.id);
      const recentBefore = await rowsOf(recent.id);
      await setClock(GRACE_S + 1800);
      await purged(doomed.id);

      await keptEvery(recent.id, recentBefore, 'a session deleted less long ago than the grace keeps every row');
      await keptEvery(live.id, liveBefore, 'a live session keeps every row');
      assert.equal((await itemsOf(live.id)).length, liveBefore.items);
      const again = await http(`${API}/sessions/${doomed.id}`, { method: 'DELETE' });
      assert.equal(again.status, 404, 'a purged session is not found (it answered 200 while only deleted)');
      assert.equal(again.body.error.code, 'not_found');
      assert.equal((await http(`${API}/sessions/${recent.id}`, { method: 'DELETE' })).status, 200, 'deleted, not purged: still the idempotent 200');
      const metricsAfter = total(await scrape(env.workerHealthUrl), 'yuxi_retention_rows_removed_total', { kind: 'deleted_sessions' });
      assert.ok(metricsAfter - metricsBefore >= before.items + before.turns + before.inputs, `the counter rose by the rows removed (${metricsBefore} → ${metricsAfter})`);
      assert.equal(await purgeFailures(), failuresBefore, 'no purge batch failed, no session was set aside');
    } finally {
      await setClock(0);
    }
  });

  it('keeps a deleted source while its fork exists (the fork reads its history); deleting the fork purges both', async () => {
    const source = await open((await createSessionWith('default-chatbot', 'the shared history')).id);
    await source.stream.waitFor((e) => e.type === 'agent.session.turn.completed', 60_000);
    await completedFollowUp(source, 'second turn');
    const forked = await http(`${API}/sessions/${source.id}/fork`, { idempotencyKey: newKey('fork'), body: {} });
    assert.equal(forked.status, 201, forked.text);
    const fork = await open(forked.body.id);
    await completedFollowUp(fork, 'the fork\'s own turn');
    const history = await itemsOf(fork.id);
    assert.ok(history.some((item) => JSON.stringify(item.content ?? '').includes('the shared history')), 'the fork lists its source\'s items');
    // Deleted after the source: the batch that purges it (oldest delete first) has seen the source due by time.
    const witness = (await open((await createSessionWith('default-chatbot', 'a witness')).id)).id;
    await streams.at(-1)!.waitFor((e) => e.type === 'agent.session.turn.completed', 60_000);

    await deleted(source.id);
    await deleted(witness);
    const sourceBefore = await rowsOf(source.id);
    const failuresBefore = await purgeFailures();
    try {
      await setClock(GRACE_S + 1800);
      await purged(witness);
      await keptEvery(source.id, sourceBefore, 'the deleted source keeps every row while a fork names it');
      assert.deepEqual(
        (await itemsOf(fork.id)).map((item) => item.id),
        history.map((item) => item.id),
        'the fork\'s history, its source\'s part included, reads as before',
      );

      // The fork deleted now is stamped by the moved clock: move it past that delete's grace too.
      await deleted(fork.id);
      await setClock(2 * GRACE_S + 3600);
      await purged(fork.id);
      await purged(source.id);
      assert.equal(await purgeFailures(), failuresBefore, 'no purge batch failed, no session was set aside');
    } finally {
      await setClock(0);
    }
  });

  it('purges a cooperation tree whole: its members, their signals, then its root', async () => {
    const root = await open((await createSessionWith('coordinator', '[[tool:create_subagent {"task":"alpha","name":"a"}]] [[tool:wait_subagents {}]]')).id);
    const end = await root.stream.waitFor((e) => ['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled'].includes(e.type), 60_000);
    assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data.turn?.error));
    const members = (await http(`${API}/sessions?root_session_id=${root.id}&order=asc`)).body.data.map((s: any) => s.id).filter((id: string) => id !== root.id);
    assert.equal(members.length, 1, 'one member');
    const member: string = members[0];
    const memberBefore = await rowsOf(member);
    assert.ok(memberBefore.turns > 0 && memberBefore.signals > 0, `the member ran and signalled (${JSON.stringify(memberBefore)})`);

    const failuresBefore = await purgeFailures();
    await deleted(root.id);
    try {
      await setClock(GRACE_S + 1800);
      await purged(member);
      await purged(root.id);
      assert.equal(await purgeFailures(), failuresBefore, 'no purge batch failed, no session was set aside');
    } finally {
      await setClock(0);
    }
  });
});
