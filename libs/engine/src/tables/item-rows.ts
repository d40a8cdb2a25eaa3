import { ItemEntity } from './turn.entities.js';

/** The columns of an `items` row as raw statements select them (named, never `*`: prepared plans outlive migrations). */
export const ITEM_COLUMNS = 'id, session_id, turn_id, run_id, input_id, seq, type, role, status, content, phase, tokens, created_at';

/** An `items` row selected with ITEM_COLUMNS as the entity TypeORM would have built (seq as a string, like its bigint). */
export function itemFromRow(row: Record<string, unknown>): ItemEntity {
  return Object.assign(new ItemEntity(), {
    id: row.id as string,
    sessionId: row.session_id as string,
    turnId: row.turn_id as string,
    runId: (row.run_id as string | null) ?? null,
    inputId: (row.input_id as string | null) ?? null,
    seq: String(row.seq),
    type: row.type as string,
    role: (row.role as string | null) ?? null,
    status: row.status as ItemEntity['status'],
    content: row.content as ItemEntity['content'],
    phase: (row.phase as string | null) ?? null,
    tokens: (row.tokens as number | null) ?? null,
    createdAt: row.created_at as Date,
  });
}
