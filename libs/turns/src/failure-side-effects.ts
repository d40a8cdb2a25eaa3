/**
 * A failed turn's `side_effects` (FailureSideEffects in libs/errors), derived in SQL from what the
 * turn committed, in the settling statement itself (no statement of its own). Evaluated over `cur`
 * (the settling run's row: `cur.turn_id`) and only for a failure ($6, the error, not null: CASE
 * evaluates no subquery of a success):
 * - `possible`: a server tool not declared idempotent was started (its step records
 *   `side_effects` when it starts: it ran, or may have), or a client ran function tools (a
 *   `tool_results` waitpoint response);
 * - `output`: the turn produced assistant messages or tool calls ($14: the run's shown text,
 *   written as an item after settle);
 * - `none`: nothing but the user's messages.
 */
export const FAILURE_SIDE_EFFECTS_SQL = `CASE
  WHEN $6::jsonb IS NULL THEN 'none'
  WHEN EXISTS (SELECT 1 FROM run_steps s WHERE s.turn_id = cur.turn_id
                AND ((s.kind = 'tool_call' AND s.input->>'side_effects' = 'true') OR (s.kind = 'waitpoint' AND s.output->'response'->>'type' = 'tool_results'))) THEN 'possible'
  WHEN $14::boolean OR EXISTS (SELECT 1 FROM items i WHERE i.turn_id = cur.turn_id AND (i.role = 'assistant' OR (i.role IS NULL AND i.type <> 'compaction'))) THEN 'output'
  ELSE 'none' END`;
