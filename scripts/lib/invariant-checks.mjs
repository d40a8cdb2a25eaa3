// The durable core's invariants (docs/durable-core.md), each a read-only SQL query whose rows are
// violations. scripts/lib/invariants.mjs runs them over one snapshot; this file only states them.

// Statuses as the state machines declare them (defineMachine: libs/engine/src/machines/turn-states.ts,
// libs/engine/src/machines/input-states.ts, libs/files/src/file-states.ts, compiled into dist/ by `npm run build`,
// `npm test` and the fault suite): a status is spelled once.
const turnStates = await importBuilt('libs/engine/src/machines/turn-states.js');
const inputStates = await importBuilt('libs/engine/src/machines/input-states.js');
const { FILE_MACHINE } = await importBuilt('libs/files/src/file-states.js');
const sql = turnStates.sqlList;
const TERMINAL_TURN = sql(turnStates.TERMINAL_TURN_STATUSES);
/** A turn waiting at a waitpoint for a person or the client (a coordinator's cooperation wait stays in_progress). */
const WAITING_STATUSES = turnStates.TURN_TRANSITIONS.suspend.to.filter((status) => !turnStates.TURN_TRANSITIONS.suspend.from.includes(status));
const WAITING_TURN = sql(WAITING_STATUSES);
/** Active turns that need a run in progress: every active status but waiting at a waitpoint. */
const EXECUTING_TURN = sql(turnStates.ACTIVE_TURN_STATUSES.filter((status) => !WAITING_STATUSES.includes(status)));
const RUNNING = sql(turnStates.LEASABLE_RUN_STATUSES);
// A file of session f.session_id that clients of that session could read: an inline image, or an
// attachment in the session's own workdir (a project's attachments stay with the project).
const OWN_LIVE_FILE = `(${FILE_MACHINE.guard('f.status', 'inline')} OR (${FILE_MACHINE.guard('f.status', 'bound', 'ready')} AND (f.workdir_id IS NULL OR f.workdir_id = f.session_id)))`;
const FINAL_ITEM = sql(turnStates.ITEM_STATUSES.filter((status) => status !== 'in_progress'));
const PENDING = sql(inputStates.INPUT_TRANSITIONS.consume.from);
const CONSUMED = sql(inputStates.INPUT_TRANSITIONS.consume.to);
const PREPARING = sql(inputStates.ATTACHMENT_TRANSITIONS.ready.from);
const ATTACHMENTS_READY = sql(inputStates.ATTACHMENT_TRANSITIONS.ready.to);

async function importBuilt(relative) {
  const url = new URL(`../../dist/${relative}`, import.meta.url);
  try {
    return await import(url.href);
  } catch (error) {
    throw new Error(`the invariant checks read the state machines from the build (${relative}): run \`npm run build\` first`, { cause: error });
  }
}

/**
 * `{{S:expr}}` restricts a check to the sessions passed in `sessionIds` (all sessions when none
 * are given): it becomes `($1::uuid[] IS NULL OR expr = ANY($1::uuid[]))`. Every check uses it
 * at least once, since each query gets the one parameter.
 *
 * The outbox payload is text (the exact public event JSON); `(payload::text)::jsonb` also works
 * should it ever become jsonb. The outbox has no counter of its own (the next sequence number is
 * max(seq) + 1): the rows themselves and their payloads are checked. `{{JSON_OK:expr}}` guards the cast where Postgres can test it
 * first (16+: pg_input_is_valid), so one malformed row cannot abort a check; the
 * `outbox_payload_is_json` check reports such rows instead.
 */
export const INVARIANTS = [
  {
    name: 'receipt_input_exists',
    description: 'every idempotency receipt with an input_id points at an existing input of the same session',
    sql: `
      SELECT r.id AS receipt_id, r.scope, r.idempotency_key, r.session_id, r.input_id, i.session_id AS input_session_id
      FROM idempotency_receipts r
      LEFT JOIN inputs i ON i.id = r.input_id
      WHERE r.input_id IS NOT NULL AND {{S:r.session_id}}
        AND (i.id IS NULL OR r.session_id IS DISTINCT FROM i.session_id)`,
  },
  {
    name: 'consumed_input_has_turn',
    description: 'every consumed input has a turn_id naming an existing turn of its session',
    sql: `
      SELECT i.id AS input_id, i.session_id, i.received_seq, i.turn_id, t.session_id AS turn_session_id
      FROM inputs i
      LEFT JOIN turns t ON t.id = i.turn_id
      WHERE i.status IN (${CONSUMED}) AND {{S:i.session_id}}
        AND (i.turn_id IS NULL OR t.id IS NULL OR t.session_id <> i.session_id)`,
  },
  {
    name: 'active_turn_has_current_in_progress_run',
    description:
      'every turn is terminal or requires_action, or is queued/in_progress with current_run_id naming an in_progress run of that turn, or is a coordinator waiting for its members (cooperation waitpoint) whose current run is requires_action and unleased',
    sql: `
      SELECT t.id AS turn_id, t.session_id, t.seq, t.status, t.current_run_id, r.turn_id AS run_turn_id, r.status AS run_status
      FROM turns t
      LEFT JOIN runs r ON r.id = t.current_run_id
      WHERE {{S:t.session_id}}
        AND t.status NOT IN (${TERMINAL_TURN}, ${WAITING_TURN})
        AND NOT (t.waitpoint->>'kind' = 'cooperation' AND r.turn_id = t.id AND ${turnStates.RUN_MACHINE.guard('r.status', 'requires_action')} AND r.lease_owner IS NULL)
        AND (t.status NOT IN (${EXECUTING_TURN}) OR r.id IS NULL OR r.turn_id <> t.id OR r.status NOT IN (${RUNNING}))`,
  },
  {
    name: 'no_in_progress_run_on_terminal_turn',
    description: 'no in_progress run belongs to a completed, failed or cancelled turn',
    sql: `
      SELECT r.id AS run_id, r.session_id, r.turn_id, r.seq, r.lease_owner, t.status AS turn_status
      FROM runs r
      JOIN turns t ON t.id = r.turn_id
      WHERE r.status IN (${RUNNING}) AND t.status IN (${TERMINAL_TURN}) AND {{S:r.session_id}}`,
  },
  {
    name: 'one_in_progress_run_per_turn',
    description: 'at most one in_progress run per turn',
    sql: `
      SELECT r.turn_id, r.session_id, count(*)::int AS in_progress_runs, array_agg(r.id ORDER BY r.seq) AS run_ids
      FROM runs r
      WHERE r.status IN (${RUNNING}) AND {{S:r.session_id}}
      GROUP BY r.turn_id, r.session_id
      HAVING count(*) > 1`,
  },
  {
    name: 'run_epochs_fence_older_runs',
    description:
      "each lease of a session has a fencing epoch of its own, above every earlier one (the session's counter is max(runs.epoch)): no two runs of a session share an epoch above 0, and a run that resumes another holds a higher epoch than it",
    sql: `
      SELECT a.session_id, a.id AS run_id, a.epoch, b.id AS other_run_id, b.epoch AS other_epoch,
             CASE WHEN a.epoch = b.epoch THEN 'shared epoch' ELSE 'successor not above' END AS problem
      FROM runs a
      JOIN runs b ON b.session_id = a.session_id AND b.id <> a.id
      WHERE {{S:a.session_id}} AND a.epoch > 0 AND b.epoch > 0
        AND ((a.epoch = b.epoch AND a.id < b.id) OR (b.resume_from_run_id = a.id AND b.epoch <= a.epoch))`,
  },
  {
    name: 'outbox_seq_contiguous',
    description: 'per session, session_events.seq is contiguous up to max (no gaps, no duplicates) and starts at 1 (a session older than the replay window, EVENTS_REPLAY_TTL_SECONDS, by the lifecycle clock the prune goes by, may have its oldest rows pruned)',
    sql: `
      SELECT s.id AS session_id, coalesce(e.n, 0) AS events, coalesce(e.distinct_seqs, 0) AS distinct_seqs, e.min_seq, e.max_seq
      FROM sessions s
      LEFT JOIN (
        SELECT session_id, count(*)::bigint AS n, count(DISTINCT seq)::bigint AS distinct_seqs, min(seq) AS min_seq, max(seq) AS max_seq
        FROM session_events
        WHERE {{S:session_id}}
        GROUP BY session_id
      ) e ON e.session_id = s.id
      WHERE {{S:s.id}}
        AND (coalesce(e.n, 0) <> coalesce(e.distinct_seqs, 0)
          OR (e.n > 0 AND e.max_seq - e.min_seq + 1 <> e.n)
          OR (e.n > 0 AND e.min_seq <> 1 AND s.created_at > lifecycle_now() - make_interval(secs => {{RETENTION_SECONDS}})))`,
  },
  {
    name: 'outbox_payload_seq_matches',
    description: "every outbox row's public event carries its own sequence number (yuxi.seq = seq): the order clients see is the outbox's",
    sql: `
      SELECT e.session_id, e.seq, e.type, ((e.payload::text)::jsonb) -> 'yuxi' ->> 'seq' AS payload_seq
      FROM session_events e
      WHERE {{S:e.session_id}} AND {{JSON_OK:e.payload::text}}
        AND (((e.payload::text)::jsonb) -> 'yuxi' ->> 'seq') IS DISTINCT FROM e.seq::text`,
  },
  {
    name: 'outbox_rows_belong_to_sessions',
    description: 'every session_events row belongs to an existing session',
    sql: `
      SELECT e.session_id, count(*)::int AS events
      FROM session_events e
      LEFT JOIN sessions s ON s.id = e.session_id
      WHERE s.id IS NULL AND {{S:e.session_id}}
      GROUP BY e.session_id`,
  },
  {
    name: 'outbox_event_id_unique',
    description: 'every outbox event_id appears once',
    sql: `
      SELECT e.event_id, count(*)::int AS copies, array_agg(e.session_id::text || '#' || e.seq::text) AS at
      FROM session_events e
      WHERE {{S:e.session_id}}
      GROUP BY e.event_id
      HAVING count(*) > 1`,
  },
  {
    name: 'outbox_payload_is_json',
    description: 'every outbox payload is a JSON object',
    requires: 'pg_input_is_valid',
    sql: `
      SELECT e.session_id, e.seq, e.type, left(e.payload::text, 200) AS payload
      FROM session_events e
      WHERE {{S:e.session_id}} AND NOT pg_input_is_valid(e.payload::text, 'jsonb')`,
  },
  {
    name: 'item_seq_unique',
    description: 'per session, items.seq is unique',
    sql: `
      SELECT i.session_id, i.seq, count(*)::int AS copies, array_agg(i.id) AS item_ids
      FROM items i
      WHERE {{S:i.session_id}}
      GROUP BY i.session_id, i.seq
      HAVING count(*) > 1`,
  },
  {
    name: 'assistant_item_settled',
    description: 'every assistant item is completed or incomplete unless its run is in_progress',
    sql: `
      SELECT i.id AS item_id, i.session_id, i.turn_id, i.run_id, i.seq, i.status, r.status AS run_status
      FROM items i
      LEFT JOIN runs r ON r.id = i.run_id
      WHERE i.role = 'assistant' AND i.status NOT IN (${FINAL_ITEM})
        AND (r.status IS NULL OR r.status NOT IN (${RUNNING})) AND {{S:i.session_id}}`,
  },
  {
    name: 'item_added_has_item_done',
    description:
      'every agent.session.turn.item.added in the outbox has a later agent.session.turn.item.done for the same item, unless its run is in_progress',
    sql: `
      WITH events AS (
        SELECT e.session_id, e.seq, e.type, ((e.payload::text)::jsonb) -> 'item' ->> 'id' AS item_id,
               ((e.payload::text)::jsonb) -> 'yuxi' ->> 'run_id' AS payload_run_id
        FROM session_events e
        WHERE e.type IN ('agent.session.turn.item.added', 'agent.session.turn.item.done')
          AND {{S:e.session_id}} AND {{JSON_OK:e.payload::text}}
      ),
      added AS (SELECT * FROM events WHERE type = 'agent.session.turn.item.added'),
      done AS (SELECT session_id, item_id, max(seq) AS done_seq FROM events WHERE type = 'agent.session.turn.item.done' GROUP BY 1, 2)
      SELECT a.session_id, a.seq AS added_seq, a.item_id, d.done_seq, coalesce(i.run_id::text, a.payload_run_id) AS run_id,
             r.status AS run_status, i.status AS item_status
      FROM added a
      LEFT JOIN done d ON d.session_id = a.session_id AND d.item_id = a.item_id
      LEFT JOIN items i ON i.id::text = a.item_id
      LEFT JOIN runs r ON r.id::text = coalesce(i.run_id::text, a.payload_run_id)
      WHERE (d.done_seq IS NULL OR d.done_seq < a.seq) AND (r.status IS NULL OR r.status NOT IN (${RUNNING}))`,
  },
  {
    name: 'input_consumed_exactly_once',
    description:
      "every consumed input appears in exactly one run's input_ids, a run of its own turn; a pending or cancelled input appears in none",
    sql: `
      WITH uses AS (
        SELECT r.id AS run_id, r.turn_id, r.status AS run_status, u.input_id
        FROM runs r CROSS JOIN LATERAL unnest(r.input_ids) AS u(input_id)
        WHERE {{S:r.session_id}}
      )
      SELECT i.id AS input_id, i.session_id, i.received_seq, i.status, i.turn_id,
             count(u.run_id)::int AS runs_using_it,
             coalesce(array_agg(u.run_id::text || ':' || u.run_status) FILTER (WHERE u.run_id IS NOT NULL), '{}') AS runs
      FROM inputs i
      LEFT JOIN uses u ON u.input_id = i.id
      WHERE {{S:i.session_id}}
      GROUP BY i.id, i.session_id, i.received_seq, i.status, i.turn_id
      HAVING count(u.run_id) <> (CASE WHEN i.status IN (${CONSUMED}) THEN 1 ELSE 0 END)
          OR bool_or(u.turn_id IS DISTINCT FROM i.turn_id) FILTER (WHERE u.run_id IS NOT NULL)`,
  },
  {
    name: 'run_inputs_exist',
    description: "every id in a run's input_ids names an input of the run's session",
    sql: `
      SELECT r.id AS run_id, r.session_id, u.input_id
      FROM runs r CROSS JOIN LATERAL unnest(r.input_ids) AS u(input_id)
      LEFT JOIN inputs i ON i.id = u.input_id AND i.session_id = r.session_id
      WHERE i.id IS NULL AND {{S:r.session_id}}`,
  },
  {
    name: 'run_step_matches_run',
    description: "every run_steps row names the turn and session of its run",
    sql: `
      SELECT st.id AS step_id, st.run_id, st.turn_id, st.session_id, r.turn_id AS run_turn_id, r.session_id AS run_session_id
      FROM run_steps st
      JOIN runs r ON r.id = st.run_id
      WHERE (r.turn_id <> st.turn_id OR r.session_id <> st.session_id) AND {{S:st.session_id}}`,
  },
  {
    name: 'compaction_item_matches_step',
    description: 'every compaction item was written by exactly one committed compaction step of its turn, and every such step wrote its item (a compaction is never lost nor done twice)',
    sql: `
      SELECT i.id AS item_id, st.id AS step_id, coalesce(i.session_id, st.session_id) AS session_id
      FROM (SELECT * FROM items WHERE type = 'compaction' AND {{S:session_id}}) i
      FULL JOIN (SELECT * FROM run_steps WHERE kind = 'compaction' AND output ? 'item_id' AND {{S:session_id}}) st
        ON st.ref = i.id::text AND st.turn_id = i.turn_id AND st.output->>'item_id' = i.id::text
      WHERE i.id IS NULL OR st.id IS NULL`,
  },
  {
    name: 'pending_input_count_matches',
    description: 'sessions.pending_input_count equals the number of pending inputs',
    sql: `
      SELECT s.id AS session_id, s.pending_input_count, coalesce(p.n, 0) AS pending_inputs
      FROM sessions s
      LEFT JOIN (SELECT session_id, count(*)::int AS n FROM inputs WHERE status IN (${PENDING}) AND {{S:session_id}} GROUP BY session_id) p
        ON p.session_id = s.id
      WHERE {{S:s.id}} AND s.pending_input_count <> coalesce(p.n, 0)`,
  },
  {
    name: 'input_attachments_match_files',
    description:
      "an input is ready exactly when none of its files is still being prepared, and a consumed input's files are all in the workdir",
    sql: `
      SELECT i.id AS input_id, i.session_id, i.status, i.attachment_status, f.id AS file_id, f.status AS file_status
      FROM inputs i
      JOIN files f ON f.input_id = i.id
      WHERE {{S:i.session_id}}
        AND ((i.attachment_status IN (${ATTACHMENTS_READY}) AND ${FILE_MACHINE.guard('f.status', 'bound')}) OR (i.status IN (${CONSUMED}) AND f.status NOT IN (${FILE_MACHINE.list('ready', 'deleting')})))`,
  },
  {
    name: 'preparing_input_has_bound_files',
    description: "an input still preparing has attachment ids and files bound to it (else nothing would ever make it ready)",
    sql: `
      SELECT i.id AS input_id, i.session_id, i.attachment_file_ids
      FROM inputs i
      WHERE i.attachment_status IN (${PREPARING}) AND {{S:i.session_id}}
        AND NOT EXISTS (SELECT 1 FROM files f WHERE f.input_id = i.id AND ${FILE_MACHINE.guard('f.status', 'bound')})`,
  },
  {
    name: 'consumed_attachments_bound_to_last_message',
    description: "every file of a consumed input is bound to that input's last user message",
    sql: `
      SELECT f.id AS file_id, f.input_id, f.message_id, i.session_id
      FROM files f
      JOIN inputs i ON i.id = f.input_id
      WHERE i.status IN (${CONSUMED}) AND ${FILE_MACHINE.guard('f.status', 'ready')} AND {{S:i.session_id}}
        AND f.message_id IS DISTINCT FROM (SELECT it.id FROM items it WHERE it.input_id = i.id AND it.role = 'user' ORDER BY it.seq DESC LIMIT 1)`,
  },  {
    name: 'member_root_matches_parent',
    description: "a member's root is its parent's root and its depth one more than its parent's; a root names itself at depth 0",
    sql: `
      SELECT m.id AS session_id, m.parent_session_id, m.root_session_id, m.depth, p.root_session_id AS parent_root, p.depth AS parent_depth
      FROM sessions m
      LEFT JOIN sessions p ON p.id = m.parent_session_id
      WHERE {{S:m.id}}
        AND CASE WHEN m.parent_session_id IS NULL THEN m.root_session_id <> m.id OR m.depth <> 0
                 ELSE p.id IS NULL OR m.root_session_id <> p.root_session_id OR m.depth <> p.depth + 1 END`,
  },
  {
    name: 'members_within_cap',
    description: "no more of a tree's members hold a slot (an active turn that is not a coordinator waiting for its own members) than its root's max_concurrent_subagents",
    sql: `
      SELECT r.id AS root_session_id, r.tree_max_concurrent, count(*) AS running
      FROM sessions r
      JOIN sessions m ON m.root_session_id = r.id AND m.depth > 0
      JOIN turns t ON t.session_id = m.id AND t.status IN (${sql(turnStates.ACTIVE_TURN_STATUSES)}) AND coalesce(t.waitpoint->>'kind', '') <> 'cooperation'
      WHERE r.tree_max_concurrent IS NOT NULL AND {{S:r.id}}
      GROUP BY r.id, r.tree_max_concurrent
      HAVING count(*) > r.tree_max_concurrent`,
  },
  {
    name: 'stopped_tree_claims_nothing',
    description: 'in a stopped tree, no session started a turn after the stop unless it received an input after it (a message lifts its own gate)',
    sql: `
      SELECT m.id AS session_id, r.id AS root_session_id, t.id AS turn_id, t.created_at, r.tree_stopped_at
      FROM sessions r
      JOIN sessions m ON m.root_session_id = r.id
      JOIN turns t ON t.session_id = m.id AND t.created_at > r.tree_stopped_at
      WHERE r.tree_stopped_at IS NOT NULL AND {{S:m.id}}
        AND NOT EXISTS (SELECT 1 FROM inputs i WHERE i.session_id = m.id AND i.received_at > r.tree_stopped_at)`,
  },
  {
    name: 'member_turn_end_signalled',
    description:
      "every ended turn of a member left its signal for the parent (the coordinator's wake-up is durable), unless it ended longer than COOPERATION_SIGNAL_RETENTION_S ago by the lifecycle clock (retention removes delivered signals then)",
    // A signal is delivered after its turn ended and removed only once delivered longer than the
    // retention ago (lifecycle_now()): a missing signal is a violation unless its turn ended before that.
    sql: `
      SELECT t.id AS turn_id, t.session_id, t.status, t.completed_at
      FROM turns t
      JOIN sessions m ON m.id = t.session_id AND m.depth > 0
      WHERE t.status IN (${TERMINAL_TURN}) AND {{S:t.session_id}}
        AND NOT (t.completed_at IS NOT NULL AND t.completed_at < lifecycle_now() - make_interval(secs => {{SIGNAL_RETENTION_SECONDS}}))
        AND NOT EXISTS (SELECT 1 FROM cooperation_signals c WHERE c.member_session_id = t.session_id AND c.turn_id = t.id)`,
  },
  {
    name: 'session_rows_belong_to_sessions',
    description:
      "no row of a session-owned table names a session that no longer exists (the purge of deleted sessions removes a session's rows before its own, and a fork's source only after the fork): inputs, turns, runs, steps, items, model requests, events, spans, receipts, signals, lineage (either end), artifacts, workspace versions, files, members, session budgets",
    sql: `
      SELECT o.tbl, o.session_id, count(*)::int AS rows
      FROM (
        SELECT 'inputs' AS tbl, session_id FROM inputs
        UNION ALL SELECT 'turns', session_id FROM turns
        UNION ALL SELECT 'runs', session_id FROM runs
        UNION ALL SELECT 'run_steps', session_id FROM run_steps
        UNION ALL SELECT 'items', session_id FROM items
        UNION ALL SELECT 'model_requests', session_id FROM model_requests
        UNION ALL SELECT 'session_events', session_id FROM session_events
        UNION ALL SELECT 'session_spans', session_id FROM session_spans
        UNION ALL SELECT 'idempotency_receipts', session_id FROM idempotency_receipts WHERE session_id IS NOT NULL
        UNION ALL SELECT 'cooperation_signals.member', member_session_id FROM cooperation_signals
        UNION ALL SELECT 'cooperation_signals.parent', parent_session_id FROM cooperation_signals
        UNION ALL SELECT 'session_lineage', session_id FROM session_lineage
        UNION ALL SELECT 'session_lineage.ancestor', ancestor_id FROM session_lineage
        UNION ALL SELECT 'session_artifacts', session_id FROM session_artifacts
        UNION ALL SELECT 'workspace_versions', session_id FROM workspace_versions WHERE session_id IS NOT NULL
        UNION ALL SELECT 'files', session_id FROM files WHERE session_id IS NOT NULL
        UNION ALL SELECT 'sessions.root', root_session_id FROM sessions
        UNION ALL SELECT 'sessions.forked_from', forked_from_session_id FROM sessions WHERE forked_from_session_id IS NOT NULL
        -- scope_id is text (other kinds name other things): the CASE casts only a session's, whatever order the quals run in.
        UNION ALL SELECT 'budgets.session', CASE WHEN scope_kind = 'session' THEN scope_id::uuid END FROM budgets WHERE scope_kind = 'session'
      ) o
      WHERE {{S:o.session_id}} AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = o.session_id)
      GROUP BY o.tbl, o.session_id`,
  },
  {
    name: 'deleted_session_is_idle',
    description:
      'a deleted session has no active turn, no pending input and no file of its own clients could still read (tombstones or gone; attachments in a project workdir stay with the project): deletion waits for its work and takes its files',
    sql: `
      SELECT s.id AS session_id, s.pending_input_count,
             (SELECT count(*) FROM turns t WHERE t.session_id = s.id AND t.status IN (${sql(turnStates.ACTIVE_TURN_STATUSES)})) AS active_turns,
             (SELECT count(*) FROM files f WHERE f.session_id = s.id AND ${OWN_LIVE_FILE}) AS live_files
      FROM sessions s
      WHERE s.deleted_at IS NOT NULL AND {{S:s.id}}
        AND (s.pending_input_count > 0
             OR EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id AND t.status IN (${sql(turnStates.ACTIVE_TURN_STATUSES)}))
             OR EXISTS (SELECT 1 FROM files f WHERE f.session_id = s.id AND ${OWN_LIVE_FILE}))`,
  },
];
