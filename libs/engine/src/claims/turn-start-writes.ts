import { type SqlFragment } from '#libs/database';
import { traceIdOf } from '#libs/telemetry';
import { RunEntity, TurnEntity } from '../tables/turn.entities.js';
import { RUN_TRANSITIONS, TURN_TRANSITIONS } from '../machines/turn-states.js';
import type { NewTurn } from '../tables/turns.repository.js';

/** The rows a turn start writes, as entities (the run's epoch is the database's: 0 until it is known). */
export function turnStartRows(spec: NewTurn): { turn: TurnEntity; run: RunEntity } {
  const turn = Object.assign(new TurnEntity(), {
    id: spec.turnId,
    sessionId: spec.sessionId,
    seq: spec.seq,
    status: 'in_progress',
    agentId: spec.agentId,
    model: spec.model,
    currentRunId: spec.runId,
    resultRunId: null,
    waitpoint: null,
    cancellationPending: false,
    error: null,
    usage: null,
    traceId: traceIdOf(spec.config.trace),
    context: null,
    createdAt: spec.at,
    startedAt: spec.at,
    completedAt: null,
  } satisfies Partial<TurnEntity>);
  const run = Object.assign(new RunEntity(), {
    id: spec.runId,
    turnId: spec.turnId,
    sessionId: spec.sessionId,
    seq: 1,
    status: 'in_progress',
    inputIds: spec.inputIds,
    model: spec.model,
    config: spec.config,
    resumeFromRunId: null,
    leaseOwner: spec.leaseOwner,
    leaseExpiresAt: null,
    epoch: 0,
    checkpoint: null,
    createdAt: spec.at,
    startedAt: spec.at,
    completedAt: null,
    error: null,
    usage: null,
  } satisfies Partial<RunEntity>);
  return { turn, run };
}

/**
 * A turn start as two fragments of the claim's one write: the turn, and its first run (CTE `run`,
 * returning the run's fencing epoch, one above the session's highest).
 */
export function turnStartWrites(spec: NewTurn): SqlFragment[] {
  const traceId = traceIdOf(spec.config.trace);
  return [
    // Without a trace (tracing off): the text without trace_id, so no parameter is bound for it. The
    // claim's statement is prepared by its text, so each text is its own prepared statement.
    traceId === null
      ? {
          sql: `INSERT INTO turns (id, session_id, seq, status, agent_id, model, current_run_id, created_at, started_at, account_id)
       VALUES ($1, $2, $3, '${TURN_TRANSITIONS.start.to[0]}', $4, $5, $6, $7, $7, $8)`,
          params: [spec.turnId, spec.sessionId, spec.seq, spec.agentId, spec.model, spec.runId, spec.at, spec.accountId],
        }
      : {
          sql: `INSERT INTO turns (id, session_id, seq, status, agent_id, model, current_run_id, created_at, started_at, account_id, trace_id)
       VALUES ($1, $2, $3, '${TURN_TRANSITIONS.start.to[0]}', $4, $5, $6, $7, $7, $8, $9)`,
          params: [spec.turnId, spec.sessionId, spec.seq, spec.agentId, spec.model, spec.runId, spec.at, spec.accountId, traceId],
        },
    {
      name: 'run',
      sql: `INSERT INTO runs (id, turn_id, session_id, seq, status, input_ids, model, config, lease_owner, lease_expires_at, epoch, created_at, started_at)
       VALUES ($1, $2, $3, 1, '${RUN_TRANSITIONS.start.to[0]}', $4, $5, $6, $7, now() + make_interval(secs => $8::double precision / 1000),
               (SELECT coalesce(max(epoch), 0) + 1 FROM runs WHERE session_id = $3), $9, $9)
       RETURNING epoch`,
      params: [spec.runId, spec.turnId, spec.sessionId, spec.inputIds, spec.model, JSON.stringify(spec.config), spec.leaseOwner, spec.leaseMs, spec.at],
    },
  ];
}
