import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSessionWith } from '../support/agents.js';
import { query } from '../support/db.js';
import { env } from '../support/env.js';
import { ADMIN, bootstrap, call, createKey, until } from '../support/identity.js';
import { scrape, total } from '../support/metrics.js';
import { SseStream } from '../support/sse.js';

// Retention on the suite's stack (README "Retention"): the worker sweeps every second
// (RETENTION_SWEEP_MS=1000) with the default retentions (scripts/test.mjs sets none of them), and
// the stack records model requests (MODEL_REQUEST_AUDIT=on). The lifecycle clock is moved just past
// one kind's retention at a time, shortest first, and put back at the end: the stack is shared.
// Rows are read straight from Postgres (read only). While the clock is 400 days ahead, every retention
// acts on the whole shared stack: earlier files' deleted sessions are purged, every delivered signal and
// audit entry goes, every outbox is pruned to its newest row. Later files must not count on any of those.

const DAY = 24 * 3600;
/** The defaults of COOPERATION_SIGNAL_RETENTION_S, MODEL_REQUEST_RETENTION_S and AUDIT_RETENTION_S. */
const SIGNALS_S = 7 * DAY;
const MODEL_REQUESTS_S = 30 * DAY;
const AUDIT_S = 400 * DAY;
/** How far past a retention the clock goes: every row this test wrote is due, none of a longer retention. */
const PAST = 60;

const TERMINAL = new Set(['agent.session.turn.completed', 'agent.session.turn.failed', 'agent.session.turn.cancelled']);

async function setClock(offsetS: number): Promise<void> {
  const res = await call(bootstrap, `${ADMIN}/lifecycle-clock`, { method: 'PUT', body: { offset_s: offsetS } });
  assert.equal(res.status, 200, res.text);
  assert.equal(res.body.offset_s, offsetS);
}

/** A session created with `input`, once its first turn completed. */
async function completedSession(agentId: string, input: string): Promise<string> {
  const session = await createSessionWith(agentId, input);
  const stream = await SseStream.open(session.id);
  try {
    const end = await stream.waitFor((e) => TERMINAL.has(e.type), 30_000);
    assert.equal(end.type, 'agent.session.turn.completed', JSON.stringify(end.data.turn?.error));
  } finally {
    stream.close();
  }
  return session.id;
}

const count = async (sql: string, params: unknown[]): Promise<number> => Number((await query<{ n: string }>(sql, params))[0]!.n);

/** The rows of `table` that `where` selects, and their stored bytes as retention counts them (a tuple header and each column as kept). */
async function stored(table: string, where: string, params: unknown[]): Promise<{ rows: number; bytes: number }> {
  const [columns] = await query<{ sum: string }>(
    `SELECT string_agg(format('coalesce(pg_column_size(t.%I), 0)', attname), ' + ') AS sum FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped`,
    [table],
  );
  const [row] = await query<{ rows: string; bytes: string }>(`SELECT count(*) AS rows, coalesce(sum(24 + ${columns!.sum}), 0) AS bytes FROM ${table} t WHERE ${where}`, params);
  return { rows: Number(row!.rows), bytes: Number(row!.bytes) };
}

/** What the worker reports it removed of `kind` so far (yuxi_retention_rows_removed_total, _bytes_removed_total). */
async function removed(kind: string): Promise<{ rows: number; bytes: number }> {
  const worker = await scrape(env.workerHealthUrl);
  return { rows: total(worker, 'yuxi_retention_rows_removed_total', { kind }), bytes: total(worker, 'yuxi_retention_bytes_removed_total', { kind }) };
}

describe('retention of model requests, cooperation signals and audit entries', () => {
  it('every retention setting removes what it names and nothing else', async () => {
    // What each kind names: a plain session's and a settled tree's model requests, the tree's
    // delivered signals, an audit entry (a key created).
    const plain = await completedSession('default-chatbot', 'kept: the conversation');
    const create = (task: string, name: string): string => `[[tool:create_subagent {"task":"${task}","name":"${name}"}]]`;
    const coordinator = await completedSession('coordinator', `${create('alpha', 'a')} ${create('beta', 'b')} [[tool:wait_subagents {}]]`);
    const key = await createKey({});
    const sessions = (await query<{ id: string }>(`SELECT id FROM sessions WHERE id = $1 OR root_session_id = $2`, [plain, coordinator])).map((r) => r.id);
    assert.equal(sessions.length, 4, 'the plain session, the coordinator and its two members');

    const signals = async () => (await stored('cooperation_signals', 't.parent_session_id = $1', [coordinator])).rows;
    const modelRequests = async () => (await stored('model_requests', 't.session_id = ANY ($1::uuid[])', [sessions])).rows;
    const auditEntries = async () => (await stored('audit_log', `t.action = 'api_key.created' AND t.target_id = $1`, [key.id])).rows;
    // What no retention names: the live sessions, their items and turns.
    const kept = async () => ({
      sessions: await count(`SELECT count(*) AS n FROM sessions WHERE id = ANY ($1::uuid[]) AND deleted_at IS NULL`, [sessions]),
      items: await count(`SELECT count(*) AS n FROM items WHERE session_id = ANY ($1::uuid[])`, [sessions]),
      turns: await count(`SELECT count(*) AS n FROM turns WHERE session_id = ANY ($1::uuid[])`, [sessions]),
    });

    // The tree settled: each member's signal delivered (the parent took it, or the sweep delivers it soon).
    const delivered = await until(async () => {
      const [row] = await query<{ all: string; undelivered: string }>(
        `SELECT count(*) AS all, count(*) FILTER (WHERE delivered_at IS NULL) AS undelivered FROM cooperation_signals WHERE parent_session_id = $1`,
        [coordinator],
      );
      return Number(row!.all) === 2 && Number(row!.undelivered) === 0 ? true : undefined;
    }, { attempts: 150, intervalMs: 100 });
    assert.ok(delivered, 'two signals, both delivered');
    const requestsWritten = await modelRequests();
    assert.ok(requestsWritten >= 4, `a request per answered turn at least (${requestsWritten})`);
    assert.equal(await auditEntries(), 1);
    const live = await kept();
    assert.ok(live.items > 0 && live.turns === 4, JSON.stringify(live));

    /**
     * Moves the clock just past `retentionS`, waits (bounded) until `gone` reads 0, and until the
     * worker's metrics count at least those rows and their stored bytes as removed (other tests'
     * rows of the kind may go with them).
     */
    const crossRetention = async (kind: string, retentionS: number, gone: () => Promise<number>, mine: { rows: number; bytes: number }): Promise<void> => {
      const before = await removed(kind);
      await setClock(retentionS + PAST);
      const emptied = await until(async () => ((await gone()) === 0 ? true : undefined), { attempts: 150, intervalMs: 200 });
      assert.ok(emptied, `${kind}: removed past its retention`);
      const reported = await until(async () => {
        const now = await removed(kind);
        return now.rows - before.rows >= mine.rows && now.bytes - before.bytes >= mine.bytes ? now : undefined;
      }, { attempts: 50, intervalMs: 200 });
      assert.ok(reported, `${kind}: the metrics count ${JSON.stringify(mine)} removed at least (before: ${JSON.stringify(before)}, now: ${JSON.stringify(await removed(kind))})`);
    };
    const mine = {
      signals: await stored('cooperation_signals', 't.parent_session_id = $1', [coordinator]),
      modelRequests: await stored('model_requests', 't.session_id = ANY ($1::uuid[])', [sessions]),
      audit: await stored('audit_log', `t.action = 'api_key.created' AND t.target_id = $1`, [key.id]),
    };
    assert.ok(mine.modelRequests.bytes > mine.modelRequests.rows * 24, JSON.stringify(mine));

    try {
      await crossRetention('cooperation_signals', SIGNALS_S, signals, mine.signals);
      assert.equal(await modelRequests(), requestsWritten, 'model requests stay (30 days)');
      assert.equal(await auditEntries(), 1, 'the audit entry stays');
      assert.deepEqual(await kept(), live);

      await crossRetention('model_requests', MODEL_REQUESTS_S, modelRequests, mine.modelRequests);
      assert.equal(await auditEntries(), 1, 'the audit entry stays (400 days)');
      assert.deepEqual(await kept(), live, 'the steps\' sessions, items and turns stay');

      await crossRetention('audit', AUDIT_S, auditEntries, mine.audit);
      assert.deepEqual(await kept(), live);
    } finally {
      await setClock(0);
    }
  });
});
