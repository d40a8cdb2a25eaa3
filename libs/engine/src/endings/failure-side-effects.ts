/**
 * A failed turn's `side_effects` (FailureSideEffects in libs/errors), derived in SQL from what the
 * turn committed, in the settling statement itself (no statement of its own). Evaluated over `cur`
 * (the settling run's row: `cur.turn_id`) and only for a failure ($6, the error, not null: CASE
 * evaluates no subquery of a success). A started tool step records two facts with its input:
 * `side_effects` (the tool may change something outside the turn) and `idempotent` (repeating it
 * is harmless: it is declared so).
 * - `possible`: a tool that may have side effects was started (it ran, or may have), idempotent or
 *   not, or a client ran function tools (a `tool_results` waitpoint response);
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

/**
 * Whether a failed turn ran (or may have run) a tool whose effect a retry would repeat harmfully:
 * one that may have side effects and is not idempotent, or a client's function tools (nothing says
 * they are idempotent). False for a success. A step recorded before `idempotent` was recorded
 * flagged `side_effects` only for tools not declared idempotent: a missing flag reads as not idempotent.
 */
export const FAILURE_UNSAFE_EFFECTS_SQL = `($6::jsonb IS NOT NULL AND EXISTS (SELECT 1 FROM run_steps s WHERE s.turn_id = cur.turn_id
  AND ((s.kind = 'tool_call' AND s.input->>'side_effects' = 'true' AND s.input->>'idempotent' IS DISTINCT FROM 'true')
       OR (s.kind = 'waitpoint' AND s.output->'response'->>'type' = 'tool_results'))))`;
