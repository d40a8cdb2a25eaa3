import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { newId, prepared } from '#libs/database';
import type { CommittedStep, StepKind, StepOutput } from './turn.entities.js';
import { HELD, type Lease } from '../claims/lease.js';
import { TIMELINE_TEXT_MAX, type TimelineStepRow } from '../views/operator-reads.js';
import { STEP_TRANSITIONS, statusGuard } from '../machines/turn-states.js';

export interface NewStep {
  /** Chosen by the caller when it writes more keyed by the step in the same transaction (a model request); a fresh one otherwise. */
  id?: string;
  runId: string;
  turnId: string;
  sessionId: string;
  kind: StepKind;
  status: CommittedStep['status'];
  ref: string | null;
  input: object;
  output: StepOutput;
  at: Date;
}

/**
 * The `run_steps` table: the committed steps of a turn (model calls, tool calls, waitpoint
 * responses), what a takeover replays from and what the per-turn limits count.
 */
@Injectable()
export class StepsRepository {
  /** The committed steps of the turn since its latest run that took new input (what a takeover plans from). */
  async stepsSinceLastInput(manager: EntityManager, turnId: string): Promise<CommittedStep[]> {
    const rows = (await manager.query(
      prepared(`SELECT s.run_id, s.kind, s.status, s.ref, s.output FROM run_steps s JOIN runs r ON r.id = s.run_id
       WHERE s.turn_id = $1 AND r.seq >= (SELECT coalesce(max(seq), 1) FROM runs WHERE turn_id = $1 AND cardinality(input_ids) > 0)
       ORDER BY s.seq`),
      [turnId],
    )) as { run_id: string; kind: CommittedStep['kind']; status: CommittedStep['status']; ref: string | null; output: CommittedStep['output'] }[];
    return rows.map((row) => ({ runId: row.run_id, kind: row.kind, status: row.status, ref: row.ref, output: row.output }));
  }

  /**
   * Records a step of the turn (call under the session lock). Through `lease` it is written only
   * while the lease holds; without one (the api resolving a waitpoint) it is written as is. A tool
   * call's result completes its `started` row; a second result for a completed call, or a second
   * response to a waitpoint, writes nothing (false).
   */
  async recordStep(manager: EntityManager, lease: Lease | null, step: NewStep): Promise<boolean> {
    // An INSERT answers its rows (TypeORM pairs rows with a count only for UPDATE and DELETE).
    const rows = (await manager.query(
      // completed_at: when the step's outcome was written (a started tool call has none yet; its
      // completing upsert sets it), so the timeline shows how long a tool ran. No extra statement.
      prepared(`INSERT INTO run_steps (id, run_id, turn_id, session_id, seq, kind, status, ref, input, output, created_at, completed_at)
       SELECT $1, $2, $3, $4, (SELECT coalesce(max(seq), 0) + 1 FROM run_steps WHERE turn_id = $3), $5, $6, $7, $8::jsonb, $9::jsonb, $10, $13::timestamptz
       WHERE $11::text IS NULL OR EXISTS (SELECT 1 FROM runs WHERE ${HELD('$2', '$11', '$12')})
       ON CONFLICT (turn_id, kind, ref) WHERE ref IS NOT NULL
       DO UPDATE SET status = excluded.status, output = excluded.output, run_id = excluded.run_id, completed_at = excluded.completed_at
       WHERE ${statusGuard('run_steps.status', STEP_TRANSITIONS.record.from)} AND excluded.status <> 'started'
       RETURNING id`),
      [
        step.id ?? newId(),
        step.runId,
        step.turnId,
        step.sessionId,
        step.kind,
        step.status,
        step.ref,
        JSON.stringify(step.input),
        JSON.stringify(step.output),
        step.at,
        lease?.owner ?? null,
        lease?.epoch ?? 0,
        step.status === 'started' ? null : step.at,
      ],
    )) as { id: string }[];
    return rows.length > 0;
  }

  /** Model and tool calls the turn has made so far (all its runs): what the per-turn limits count. */
  async callCounts(manager: EntityManager, turnId: string): Promise<{ modelCalls: number; toolCalls: number }> {
    const rows = (await manager.query(
      prepared(`SELECT count(*) FILTER (WHERE kind = 'model_call')::int AS model_calls, count(*) FILTER (WHERE kind = 'tool_call')::int AS tool_calls
       FROM run_steps WHERE turn_id = $1`),
      [turnId],
    )) as { model_calls: number; tool_calls: number }[];
    return { modelCalls: rows[0]?.model_calls ?? 0, toolCalls: rows[0]?.tool_calls ?? 0 };
  }

  /** Every call id the turn's model calls have used. */
  async usedCallIds(manager: EntityManager, turnId: string): Promise<Set<string>> {
    const rows = (await manager.query(
      prepared(`SELECT tc->>'call_id' AS id FROM run_steps s, jsonb_array_elements(coalesce(s.output->'tool_calls', '[]'::jsonb)) tc
       WHERE s.turn_id = $1 AND s.kind = 'model_call'`),
      [turnId],
    )) as { id: string }[];
    return new Set(rows.map((row) => row.id));
  }

  /** The stored results among the given tool calls of a turn. */
  async toolResults(manager: EntityManager, turnId: string, callIds: string[]): Promise<Set<string>> {
    const rows = (await manager.query(
      prepared(`SELECT ref FROM run_steps WHERE turn_id = $1 AND kind = 'tool_call' AND status = 'completed' AND ref = ANY($2::varchar[])`),
      [turnId, callIds],
    )) as { ref: string }[];
    return new Set(rows.map((row) => row.ref));
  }

  /**
   * The steps of a page of turns, in one statement (the operator timeline), in turn order. Long
   * texts (a tool's arguments and output, a model's text) are cut at TIMELINE_TEXT_MAX characters
   * here, not in the api. `previous_at` is when the step before it in the same run ended (or the
   * run started): a model call ran from there until it was recorded. A compaction brings its
   * item's token counts (by primary key, only for compaction rows).
   */
  async timelineSteps(manager: EntityManager, turnIds: string[]): Promise<TimelineStepRow[]> {
    if (turnIds.length === 0) return [];
    const cut = (json: string, field: string): string =>
      `CASE WHEN ${json} ? '${field}' THEN jsonb_build_object('${field}', left(${json}->>'${field}', $2)) ELSE '{}'::jsonb END`;
    const rows = (await manager.query(
      prepared(`SELECT s.id, s.run_id, s.turn_id, s.seq, s.kind, s.status, s.ref, s.created_at, s.completed_at,
              (s.input - 'arguments') || ${cut('s.input', 'arguments')} AS input,
              (s.output - 'text' - 'output' - 'trace') || ${cut('s.output', 'text')} || ${cut('s.output', 'output')} AS output,
              (coalesce(length(s.input->>'arguments'), 0) > $2 OR coalesce(length(s.output->>'text'), 0) > $2 OR coalesce(length(s.output->>'output'), 0) > $2) AS truncated,
              coalesce(lag(coalesce(s.completed_at, s.created_at)) OVER (PARTITION BY s.run_id ORDER BY s.seq), r.started_at) AS previous_at,
              CASE WHEN s.kind = 'compaction' THEN (SELECT jsonb_build_object('tokens_before', i.content->0->'compaction'->'tokens_before', 'tokens_after', i.content->0->'compaction'->'tokens_after')
                FROM items i WHERE i.id = (s.output->>'item_id')::uuid) END AS compaction
       FROM run_steps s JOIN runs r ON r.id = s.run_id
       WHERE s.turn_id = ANY($1::uuid[]) ORDER BY s.turn_id, s.seq`),
      [turnIds, TIMELINE_TEXT_MAX],
    )) as Record<string, unknown>[];
    return rows.map((row) => ({
      id: row.id as string,
      runId: row.run_id as string,
      turnId: row.turn_id as string,
      seq: Number(row.seq),
      kind: row.kind as TimelineStepRow['kind'],
      status: row.status as TimelineStepRow['status'],
      ref: row.ref as string | null,
      input: row.input as TimelineStepRow['input'],
      output: row.output as TimelineStepRow['output'],
      truncated: row.truncated as boolean,
      createdAt: row.created_at as Date,
      completedAt: row.completed_at as Date | null,
      previousAt: row.previous_at as Date | null,
      compaction: row.compaction as TimelineStepRow['compaction'],
    }));
  }
}
