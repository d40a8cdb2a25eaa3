import { type SqlFragment, statusGuard } from '#libs/database';
import { INPUT_COLUMNS, type InputEntity, inputFromRow } from '../tables/input.entity.js';
import { CLAIM_KEY, MAX_STEER_BATCH } from '../tables/inputs.repository.js';
import { INPUT_TRANSITIONS } from '../machines/input-states.js';

const PREFIX = 'q_';
const COLUMNS = INPUT_COLUMNS.split(',').map((column) => column.trim());

/**
 * The session's claimable queue prefix as a subquery over `sessions.id`, for the claim's read
 * under the session lock (`lockForClaim`): pending inputs in claim order up to (not including)
 * the first still preparing its attachments, at most a steer batch. Its columns carry a prefix.
 */
export const CLAIM_QUEUE = {
  sql: `SELECT ${COLUMNS.map((c) => `${c} AS ${PREFIX}${c}`).join(', ')} FROM (
       SELECT ${INPUT_COLUMNS}, bool_and(attachment_status = 'ready') OVER (ORDER BY ${CLAIM_KEY('i')} ROWS UNBOUNDED PRECEDING) AS ready_so_far
       FROM inputs i WHERE session_id = sessions.id AND status = 'pending') cq
     WHERE ready_so_far ORDER BY ${CLAIM_KEY('cq')} LIMIT $1`,
  params: [MAX_STEER_BATCH],
  columns: COLUMNS.map((c) => `q.${PREFIX}${c}`).join(', '),
};

/** The inputs of the rows `CLAIM_QUEUE` read, in claim order. */
export function claimQueueInputs(rows: Record<string, unknown>[]): InputEntity[] {
  return rows
    .filter((row) => row[`${PREFIX}id`] !== null && row[`${PREFIX}id`] !== undefined)
    .map((row) => inputFromRow(Object.fromEntries(COLUMNS.map((c) => [c, row[`${PREFIX}${c}`]]))));
}

/**
 * What a claim takes from the queue (in claim order): a steer head takes the whole contiguous steer
 * prefix as one batch, stopping where the priority changes (a message that resumed a paused queue
 * is not batched with steers that were waiting before it); a follow-up runs alone.
 */
export function claimBatch(queue: InputEntity[]): InputEntity[] {
  const head = queue[0];
  if (!head) return [];
  if (head.mode !== 'steer') return [head];
  const prefix: InputEntity[] = [];
  for (const input of queue) {
    if (input.mode !== 'steer' || input.priority !== head.priority) break;
    prefix.push(input);
  }
  return prefix;
}

/** The batch's inputs consumed by the turn's run (composed into the claim's one write), as `InputsRepository.markConsumed`. */
export function consumedWrite(inputIds: string[], turnId: string, runId: string, at: Date): SqlFragment {
  return {
    sql: `UPDATE inputs SET status = '${INPUT_TRANSITIONS.consume.to[0]}', turn_id = $2, run_id = $3, consumed_at = $4
     WHERE id = ANY($1::uuid[]) AND ${statusGuard('status', INPUT_TRANSITIONS.consume.from)}`,
    params: [inputIds, turnId, runId, at],
  };
}
