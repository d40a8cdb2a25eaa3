import type { EntityManager } from 'typeorm';
import { newId } from '#libs/database';
import { type StoredTraceContext, tracingOn } from '#libs/telemetry';
import { inputTraceContext } from './accept-input-span.js';
import { type FrozenInputConfig, InputEntity } from '../tables/input.entity.js';
import type { NewInput } from '../tables/inputs.repository.js';
import { INPUT_TRANSITIONS } from '../machines/input-states.js';

/** The new input's row, as its insert writes it. */
export function newInputRow(manager: EntityManager, input: NewInput, receivedSeq: string): InputEntity {
  const id = newId();
  return manager.create(InputEntity, {
    id,
    sessionId: input.sessionId,
    receivedSeq,
    mode: input.mode,
    priority: input.priority ?? 0,
    status: 'pending',
    messages: input.messages,
    attachmentFileIds: input.attachmentFileIds,
    // Files attached to an input are copied into the workdir by a worker before it can run.
    attachmentStatus: input.attachmentFileIds.length > 0 ? 'preparing' : 'ready',
    attachmentError: null,
    // Tracing on: the acceptance's trace context travels with the input (through the queue, a
    // restart, a takeover) to the run it starts. Off: the config as it always was.
    config: tracingOn() ? withTrace(input.config, inputTraceContext(input.sessionId, id, input.mode)) : input.config,
    turnId: null,
    runId: null,
    receivedAt: input.receivedAt,
    consumedAt: null,
    cancelledAt: null,
  });
}

function withTrace(config: FrozenInputConfig, trace: StoredTraceContext | undefined): FrozenInputConfig {
  return trace === undefined ? config : { ...config, trace };
}

/** The parameters of `insertSql`, in its order ($first … $first+9); the received sequence number is not one of them. */
export function insertValues(row: InputEntity, recoveryGraceMs: number): unknown[] {
  return [
    row.id,
    row.sessionId,
    row.mode,
    row.priority,
    JSON.stringify(row.messages),
    JSON.stringify(row.attachmentFileIds),
    JSON.stringify(row.config),
    row.receivedAt,
    row.attachmentStatus,
    recoveryGraceMs,
  ];
}

/**
 * Raw SQL on the hottest write: the query builder's per-call SQL generation showed in profiles. An
 * input preparing its files is the accepting request's job first; the recovery sweep's first try
 * is due after the grace period (database clock). `from`: a CTE whose rows the insert is made of.
 */
export function insertSql(first: number, receivedSeq: string, from?: string): string {
  const $ = (n: number): string => `$${first + n - 1}`;
  const columns = '(id, session_id, received_seq, mode, priority, status, messages, attachment_file_ids, attachment_status, config, received_at, attachment_retry_at)';
  const row = `${$(1)}, ${$(2)}, ${receivedSeq}, ${$(3)}, ${$(4)}, '${INPUT_TRANSITIONS.accept.to[0]}', ${$(5)}, ${$(6)}, ${$(9)}::varchar, ${$(7)}, ${$(8)}, CASE WHEN ${$(9)}::varchar = 'preparing' THEN now() + ${$(10)}::int * interval '1 millisecond' END`;
  return from === undefined ? `INSERT INTO inputs ${columns} VALUES (${row})` : `INSERT INTO inputs ${columns} SELECT ${row} FROM ${from}`;
}
