import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { EntityManager, Repository } from 'typeorm';
import { AppConfig } from '#libs/config';
import { isUuid, prepared, sqlList, statusGuard, unixSeconds } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { AttachmentDto } from '#libs/files';
import { InputDto } from '../views/input.dto.js';
import { type FrozenInputConfig, INPUT_COLUMNS, InputEntity, inputFromRow, type InputMessage, type InputMode } from './input.entity.js';
import { preparationRetryDelayMs } from '../acceptance/preparation-backoff.js';
import { insertSql, insertValues, newInputRow } from '../acceptance/input-insert.js';
import { ATTACHMENT_TRANSITIONS, INPUT_TRANSITIONS, MODE_TRANSITIONS } from '../machines/input-states.js';

export interface NewInput {
  sessionId: string;
  receivedSeq: number;
  mode: InputMode;
  priority?: number;
  messages: InputMessage[];
  attachmentFileIds: string[];
  config: FrozenInputConfig;
  receivedAt: Date;
}

/**
 * A write of the accepting transaction that needs no round trip of its own: it runs as a
 * data-modifying CTE of the transaction's last statement (the receipt insert). `sql(first)` is the
 * statement with its parameters numbered from `$first`.
 */
export interface RidingWrite {
  sql(first: number): string;
  values: unknown[];
}

/** A steer batch is bounded so one claim stays one reasonable model call. */
export const MAX_STEER_BATCH = 20;

/** The durable input queue of each session, ordered by the per-session received sequence. */
@Injectable()
export class InputsRepository {
  constructor(
    @InjectRepository(InputEntity) private readonly inputs: Repository<InputEntity>,
    private readonly config: AppConfig,
  ) {}

  /**
   * When each of these inputs was received (input id → received_at); no query for none. `sessionIds`:
   * the sessions of the listed items (a fork's inherited messages came from its ancestors' inputs).
   */
  async receivedAt(sessionIds: string[], inputIds: string[]): Promise<Map<string, Date>> {
    if (inputIds.length === 0) return new Map();
    const [one, ...more] = sessionIds;
    const sql = more.length === 0 ? `SELECT id, received_at FROM inputs WHERE session_id = $1 AND id = ANY($2::uuid[])` : `SELECT id, received_at FROM inputs WHERE session_id = ANY($1::uuid[]) AND id = ANY($2::uuid[])`;
    const rows = (await this.inputs.query(prepared(sql), [more.length === 0 ? one : sessionIds, inputIds])) as {
      id: string;
      received_at: Date;
    }[];
    return new Map(rows.map((row) => [row.id, row.received_at]));
  }

  async insert(manager: EntityManager, input: NewInput): Promise<InputEntity> {
    const { row, write } = this.insertion(manager, input);
    await manager.query(prepared(write.sql(1)), write.values);
    return row;
  }

  /**
   * The new input's row and the statement that inserts it, for a caller that runs it within
   * another statement of the same transaction (`riding`: with the receipt, one round trip fewer
   * per submission) rather than on its own (`insert`).
   */
  insertion(manager: EntityManager, input: NewInput): { row: InputEntity; write: RidingWrite } {
    const row = newInputRow(manager, input, String(input.receivedSeq));
    const values = [...insertValues(row, this.config.recoveryGraceMs), row.receivedSeq];
    return { row, write: { sql: (first) => insertSql(first, `$${first + values.length - 1}`), values } };
  }

  /**
   * The insert of a new input as a CTE body of a caller's one statement: its received sequence
   * number is `seqColumn` of the rows of the CTE `source` (the session's counter, raised by the
   * same statement), and it inserts nothing when `source` has no row. `receivedSeq` of the row is
   * unknown until the statement ran.
   */
  insertionFrom(manager: EntityManager, input: Omit<NewInput, 'receivedSeq'>, source: { cte: string; seqColumn: string }, first: number): { row: InputEntity; sql: string; values: unknown[] } {
    const row = newInputRow(manager, { ...input, receivedSeq: 0 }, '');
    return { row, sql: insertSql(first, `${source.cte}.${source.seqColumn}`, source.cte), values: insertValues(row, this.config.recoveryGraceMs) };
  }

  /**
   * The queue head, if a claim may take it: priority first, then steer inputs before follow-ups,
   * each group in received order. A head still preparing its attachments is not claimable, and
   * nothing behind it is either. Call under the session lock.
   */
  async head(manager: EntityManager, sessionId: string): Promise<InputEntity | null> {
    return (await claimable(manager, sessionId, 1))[0] ?? null;
  }

  async get(sessionId: string, inputId: string): Promise<InputEntity> {
    const row = isUuid(inputId) ? await this.inputs.findOneBy({ id: inputId, sessionId }) : null;
    if (!row) throw DomainError.notFound(`Input ${inputId}`);
    return row;
  }

  /** Pending inputs in the order they will be claimed (see head). */
  async pending(sessionId: string): Promise<InputEntity[]> {
    const rows = (await this.inputs.query(prepared(`SELECT ${INPUT_COLUMNS} FROM inputs i WHERE session_id = $1 AND status = 'pending' ORDER BY ${CLAIM_KEY('i')}`), [
      sessionId,
    ])) as Record<string, unknown>[];
    return rows.map(inputFromRow);
  }

  /** What an operator sees of the queue (the ops CLI): pending inputs in claim order, without their content. */
  async pendingSummary(sessionId: string): Promise<Record<string, unknown>[]> {
    const rows = (await this.inputs.query(
      prepared(`SELECT id, mode, priority, received_seq, received_at, jsonb_array_length(messages) AS message_count
       FROM inputs i WHERE session_id = $1 AND status = 'pending' ORDER BY ${CLAIM_KEY('i')}`),
      [sessionId],
    )) as Record<string, unknown>[];
    return rows.map((input) => ({ ...input, received_seq: Number(input.received_seq) }));
  }

  /**
   * How long the oldest input still pending across every session has waited, in seconds on the
   * database clock (the queues page); null when none is pending. Served by inputs_pending_age_idx.
   */
  async oldestPendingAgeSeconds(): Promise<number | null> {
    const rows = (await this.inputs.query(prepared(`SELECT floor(extract(epoch FROM now() - min(received_at)))::int AS age FROM inputs WHERE status = 'pending'`))) as {
      age: number | null;
    }[];
    return rows[0]?.age ?? null;
  }

  /**
   * The batch a claim takes when the head is a steer: the contiguous run of steer inputs at the
   * front of the claim order, in received order. Call under the session lock.
   */
  /** The claimable prefix read afresh under the session lock, up to a steer batch (see `claimBatch`). */
  async claimQueue(manager: EntityManager, sessionId: string): Promise<InputEntity[]> {
    return claimable(manager, sessionId, MAX_STEER_BATCH);
  }

  async steerPrefix(manager: EntityManager, sessionId: string): Promise<InputEntity[]> {
    const ordered = await claimable(manager, sessionId, MAX_STEER_BATCH);
    // The prefix stops where the priority changes: a message that resumed a paused queue is not
    // batched with steers that were waiting before it.
    const prefix: InputEntity[] = [];
    for (const input of ordered) {
      if (input.mode !== 'steer' || input.priority !== ordered[0]?.priority) break;
      prefix.push(input);
    }
    return prefix;
  }

  /**
   * The steers a running turn takes at a safe boundary: those received after the turn's own input
   * (`afterSeq`), in received order. Older steers that waited behind a message which resumed a
   * paused queue stay for the next claim. Call under the session lock.
   */
  async steersAfter(manager: EntityManager, sessionId: string, afterSeq: string): Promise<InputEntity[]> {
    // Up to the first steer still preparing its attachments: a later steer never overtakes it.
    const rows = (await manager.query(
      prepared(`SELECT ${INPUT_COLUMNS} FROM inputs s
       WHERE session_id = $1 AND status = 'pending' AND mode = 'steer' AND received_seq > $2
         AND NOT EXISTS (SELECT 1 FROM inputs u WHERE u.session_id = $1 AND u.status = 'pending' AND u.mode = 'steer'
                         AND u.received_seq > $2 AND u.received_seq <= s.received_seq AND u.attachment_status <> 'ready')
       ORDER BY received_seq LIMIT $3`),
      [sessionId, afterSeq, MAX_STEER_BATCH],
    )) as Record<string, unknown>[];
    return rows.map(inputFromRow);
  }

  /** Whether a steer received after `afterSeq` waits and could join now (see steersAfter). */
  async hasPendingSteer(sessionId: string, afterSeq: string): Promise<boolean> {
    const rows = (await this.inputs.query(
      prepared(`SELECT attachment_status = 'ready' AS ready FROM inputs WHERE session_id = $1 AND status = 'pending' AND mode = 'steer' AND received_seq > $2
       ORDER BY received_seq LIMIT 1`),
      [sessionId, afterSeq],
    )) as { ready: boolean }[];
    return rows[0]?.ready === true;
  }

  /** Cancels a pending input (call under the session lock, after input-gates allowed it); false when it is not pending any more. */
  async markCancelled(manager: EntityManager, inputId: string, at: Date): Promise<boolean> {
    const [, count] = (await manager.query(
      prepared(`UPDATE inputs SET status = '${INPUT_TRANSITIONS.cancel.to[0]}', cancelled_at = $2 WHERE id = $1 AND ${statusGuard('status', INPUT_TRANSITIONS.cancel.from)}`),
      [inputId, at],
    )) as [unknown[], number];
    return count === 1;
  }

  /**
   * Makes a pending follow-up a steer (call under the session lock, after input-gates allowed it); false when nothing changed.
   * The session row gets a new version too (nothing in it changes): a claim that waited for the lock meanwhile reads the queue again (`lockForClaim`).
   */
  async markSteer(manager: EntityManager, inputId: string): Promise<boolean> {
    const [, count] = (await manager.query(
      prepared(`WITH p AS (UPDATE inputs SET mode = '${MODE_TRANSITIONS.promote.to[0]}'
       WHERE id = $1 AND ${statusGuard('mode', MODE_TRANSITIONS.promote.from)} AND ${statusGuard('status', INPUT_TRANSITIONS.cancel.from)} RETURNING session_id)
       UPDATE sessions SET pending_input_count = pending_input_count WHERE id = (SELECT session_id FROM p)`),
      [inputId],
    )) as [unknown[], number];
    return count === 1;
  }

  /** The highest received_seq among the inputs a turn consumed: steers after it may still join the turn. */
  async lastConsumedSeq(manager: EntityManager, turnId: string): Promise<string> {
    const rows = (await manager.query(prepared(`SELECT coalesce(max(received_seq), 0) AS seq FROM inputs WHERE turn_id = $1`), [turnId])) as { seq: string }[];
    return String(rows[0]?.seq ?? '0');
  }

  /** Whether the session has any pending input (no lock: a hint for whether to claim). */
  async hasPending(sessionId: string): Promise<boolean> {
    const rows = (await this.inputs.query(prepared(`SELECT 1 FROM inputs WHERE session_id = $1 AND status = 'pending' LIMIT 1`), [sessionId])) as unknown[];
    return rows.length > 0;
  }

  async markConsumed(manager: EntityManager, inputIds: string[], turnId: string, runId: string, at: Date): Promise<void> {
    await manager.query(
      prepared(`UPDATE inputs SET status = '${INPUT_TRANSITIONS.consume.to[0]}', turn_id = $2, run_id = $3, consumed_at = $4
       WHERE id = ANY($1::uuid[]) AND ${statusGuard('status', INPUT_TRANSITIONS.consume.from)}`),
      [inputIds, turnId, runId, at],
    );
  }

  /** An input by id alone (the worker's preparation; never for a client, who is scoped by session). */
  async findById(inputId: string): Promise<InputEntity | null> {
    if (!isUuid(inputId)) return null;
    const rows = (await this.inputs.query(prepared(`SELECT ${INPUT_COLUMNS} FROM inputs WHERE id = $1`), [inputId])) as Record<string, unknown>[];
    return rows[0] ? inputFromRow(rows[0]) : null;
  }

  /** An input of the session by id, read in the caller's transaction (under the session lock); null when there is none. */
  async findInSession(manager: EntityManager, sessionId: string, inputId: string): Promise<InputEntity | null> {
    if (!isUuid(inputId)) return null;
    const rows = (await manager.query(prepared(`SELECT ${INPUT_COLUMNS} FROM inputs WHERE id = $1 AND session_id = $2`), [inputId, sessionId])) as Record<string, unknown>[];
    return rows[0] ? inputFromRow(rows[0]) : null;
  }

  /** Locks an input row (serialises concurrent preparations of its attachments); null when it does not exist. */
  async lockById(manager: EntityManager, inputId: string): Promise<InputEntity | null> {
    const rows = (await manager.query(prepared(`SELECT ${INPUT_COLUMNS} FROM inputs WHERE id = $1 FOR UPDATE`), [inputId])) as Record<string, unknown>[];
    return rows[0] ? inputFromRow(rows[0]) : null;
  }

  /** Every attached file is in the workdir: the input may run (call with the input locked). */
  async markAttachmentsReady(manager: EntityManager, inputId: string): Promise<boolean> {
    const [, count] = (await manager.query(
      prepared(`UPDATE inputs SET attachment_status = '${ATTACHMENT_TRANSITIONS.ready.to[0]}', attachment_error = NULL
       WHERE id = $1 AND ${statusGuard('attachment_status', ATTACHMENT_TRANSITIONS.ready.from)}`),
      [inputId],
    )) as [unknown[], number];
    return count === 1;
  }

  /** Why a preparation attempt failed, for clients (the input stays preparing; the sweep retries). */
  async recordAttachmentError(inputId: string, message: string): Promise<void> {
    await this.inputs.query(prepared(`UPDATE inputs SET attachment_error = $2 WHERE id = $1 AND attachment_status = 'preparing'`), [inputId, message]);
  }

  /**
   * Takes the preparations the recovery sweep should try now (crashed, lost or failed ones), at
   * most `limit`: those whose next try is due, longest due first, pending inputs before cancelled
   * ones (whose files are kept and still prepared for the session's workdir, but which no queue waits for). Each taken
   * input's next try is pushed back by the backoff (preparationRetryDelayMs) before it is returned,
   * so an input that keeps failing is taken less and less often and cannot starve newer ones, and
   * concurrent sweeps never take the same input.
   */
  async takeDuePreparations(limit: number): Promise<string[]> {
    return this.inputs.manager.transaction(async (manager) => {
      const due = (await manager.query(
        prepared(`SELECT id, attachment_attempts FROM inputs WHERE attachment_status = 'preparing' AND attachment_retry_at <= now()
         ORDER BY status <> 'pending', attachment_retry_at LIMIT $1 FOR UPDATE SKIP LOCKED`),
        [limit],
      )) as { id: string; attachment_attempts: number }[];
      if (due.length === 0) return [];
      await manager.query(
        prepared(`UPDATE inputs i SET attachment_attempts = i.attachment_attempts + 1, attachment_retry_at = now() + d.delay_ms * interval '1 millisecond'
         FROM unnest($1::uuid[], $2::bigint[]) AS d(id, delay_ms) WHERE i.id = d.id`),
        [due.map((row) => row.id), due.map((row) => preparationRetryDelayMs(row.attachment_attempts, this.config.recoveryGraceMs))],
      );
      return due.map((row) => row.id);
    });
  }

  /**
   * Sessions whose pending inputs waited past the grace period and that a worker could claim now
   * (queue not paused, no active turn, a ready input not behind one still preparing): candidates
   * for a lost nudge. Accounts (product users, with their apps' end users) are taken in turn (each
   * one's longest waiting session, then each one's second, …), not longest waiting first: one
   * account's flood of waiting sessions (held back by its cap of running turns) never fills the
   * batch while others wait. `activeTurnStatuses`: the
   * turn machine's, passed by the caller. Root sessions only: members of
   * cooperation trees wait for their tree's cap, and the sweep nudges each tree's next one
   * (TreeRepository.queuedTreeHeads).
   */
  async sessionsWithWaitingInputs(olderThan: Date, limit: number, activeTurnStatuses: readonly string[]): Promise<string[]> {
    const rows = (await this.inputs.query(
      prepared(`SELECT session_id FROM (
         SELECT i.session_id, ${ACCOUNT} AS account_id, min(i.received_at) AS oldest
         FROM inputs i JOIN sessions s ON s.id = i.session_id JOIN users u ON u.id = s.owner_id
         WHERE i.status = 'pending' AND i.received_at < $1 AND s.depth = 0 AND ${claimableNow(activeTurnStatuses)}
         GROUP BY i.session_id, account_id) w
       ORDER BY row_number() OVER (PARTITION BY account_id ORDER BY oldest, session_id), oldest, session_id LIMIT $2`),
      [olderThan, limit],
    )) as { session_id: string }[];
    return rows.map((row) => row.session_id);
  }

  /**
   * One account's sessions (the product user's and its apps' end users') whose inputs wait with
   * nothing running (members of trees too: their claim checks their tree's cap), longest waiting
   * first: nudged when a turn of the account, at its cap of running turns, ends (after commit; the
   * recovery sweep covers a lost nudge).
   */
  async accountSessionsWithWaitingInputs(accountId: string, limit: number, activeTurnStatuses: readonly string[]): Promise<string[]> {
    const rows = (await this.inputs.query(
      prepared(`SELECT i.session_id FROM inputs i JOIN sessions s ON s.id = i.session_id JOIN users u ON u.id = s.owner_id
       WHERE ${ACCOUNT} = $1 AND i.status = 'pending' AND ${claimableNow(activeTurnStatuses)}
       GROUP BY i.session_id ORDER BY min(i.received_at), i.session_id LIMIT $2`),
      [accountId, limit],
    )) as { session_id: string }[];
    return rows.map((row) => row.session_id);
  }
}

/** An input's place in the claim order (lower first): priority, then steer before follow-up, then received order. */
export const CLAIM_KEY = (alias: string): string => `-${alias}.priority, CASE WHEN ${alias}.mode = 'steer' THEN 0 ELSE 1 END, ${alias}.received_seq`;

/** The account (product user) of the owner `u` of a session: an app end user's is the product user behind the app. */
const ACCOUNT = `CASE WHEN u.kind = 'end_user' THEN u.parent_id ELSE u.id END`;

/** A pending input `i` of session `s` a worker could claim now: queue not paused, input ready, no active turn, no unready input before it. */
const claimableNow = (activeTurnStatuses: readonly string[]): string =>
  `NOT s.queue_paused AND i.attachment_status = 'ready'
   AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = i.session_id AND t.status IN (${sqlList(activeTurnStatuses)}))
   AND NOT EXISTS (SELECT 1 FROM inputs h WHERE h.session_id = i.session_id AND h.status = 'pending' AND h.attachment_status <> 'ready'
                   AND (${CLAIM_KEY('h')}) < (${CLAIM_KEY('i')}))`;

/**
 * The claimable prefix of a session's pending inputs: in claim order, up to (not including) the
 * first input still preparing its attachments. An unready input therefore blocks everything
 * behind it; it is never skipped.
 */
async function claimable(manager: EntityManager, sessionId: string, limit: number): Promise<InputEntity[]> {
  const rows = (await manager.query(
    prepared(`SELECT ${INPUT_COLUMNS} FROM (
       SELECT ${INPUT_COLUMNS}, bool_and(attachment_status = 'ready') OVER (ORDER BY ${CLAIM_KEY('i')} ROWS UNBOUNDED PRECEDING) AS ready_so_far
       FROM inputs i WHERE session_id = $1 AND status = 'pending') q
     WHERE ready_so_far ORDER BY ${CLAIM_KEY('q')} LIMIT $2`),
    [sessionId, limit],
  )) as Record<string, unknown>[];
  return rows.map(inputFromRow);
}

/** The input's projection; `attachments` are its files that still exist (any order: they are put in attachment_file_ids order). */
export function toInputDto(input: InputEntity, attachments: AttachmentDto[] = []): InputDto {
  const position = new Map(input.attachmentFileIds.map((id, index) => [id, index]));
  return {
    id: input.id,
    object: 'yuxi.session.input',
    session_id: input.sessionId,
    status: input.status,
    mode: input.mode,
    kind: input.config.compact ? 'compact' : 'message',
    received_seq: Number(input.receivedSeq),
    messages: input.messages,
    attachment_file_ids: input.attachmentFileIds,
    attachments: [...attachments].sort((a, b) => (position.get(a.id) ?? 0) - (position.get(b.id) ?? 0)),
    attachment_status: input.attachmentStatus,
    attachment_error: input.attachmentStatus === 'ready' ? null : input.attachmentError,
    turn_id: input.turnId,
    run_id: input.runId,
    received_at: unixSeconds(input.receivedAt),
    created_at: unixSeconds(input.consumedAt),
    cancelled_at: unixSeconds(input.cancelledAt),
    model: input.config.model,
  };
}
