/**
 * The SSE event vocabulary this build emits, in the order a turn produces them. The OpenAPI
 * document lists this catalog; a new event type is added here first.
 */
export const EVENT_TYPES = {
  'agent.session.created': 'The session was created; `session` is the same resource as the create response (the first event of every session stream).',
  'yuxi.session.event.accepted':
    'An input or control was durably accepted. `receipt` is the 202 receipt itself: for a message its turn_id and run_id are null (its consumption is read from the input); a cancel names the turn it targets and that turn\'s run, a resume or a tool_result the turn and the new run that continues it (null while a client_tool waitpoint still waits for other results).',
  'yuxi.session.run.created': 'A run (an execution segment with a lease owner) started; `run` lists its input_ids. The first run of a turn is announced just before the turn.',
  'agent.session.turn.created': 'A turn was created for the head of the input queue. `turn` is the committed turn.',
  'agent.session.turn.in_progress': 'The turn is executing.',
  'yuxi.session.turn.capability_limited':
    'The turn goes on with fewer capabilities than its agent declares: `reason` `tool_source_unavailable` (a tool source, such as an MCP server, could not be reached when the run planned its tools). The model is told that some tools are unavailable. `message` is generic: it names no source, tool or address. Sent at most once per turn and reason (durable), whatever the number of model calls or runs.',
  'agent.session.turn.item.added':
    'An item was added to the turn: a user message, a `function_call` (a tool call with its complete `arguments`) or its `function_call_output` (linked by `call_id`), all durable; a `command_execution` (a `shell` call in the session\'s workspace, durable, added `in_progress`: its item.done follows with its exit code and output once it ended); or an assistant message that starts streaming (live, with its first text or reasoning; its item.done follows once it is written, as an incomplete item if the run stops first).',
  'agent.session.turn.content_part.added': 'A content part of an assistant message started (live, with the message\'s first text).',
  'agent.session.turn.output_text.delta': 'Text appended to a content part (`delta`); merge by item_id, output_index and content_index.',
  'yuxi.session.turn.reasoning.delta': 'Reasoning text the model streamed (live, where the provider streams it), linked to the assistant message `item_id` and its `reasoning_index`; raw reasoning, not a summary.',
  'yuxi.session.turn.reasoning.done':
    'The full reasoning text of that model call, sent once it is saved with the message (the item\'s `yuxi.reasoning`; while the message streams, an items read shows it with `yuxi.completed_reasoning_indices`).',
  'yuxi.session.turn.tool_progress':
    'A server tool call in flight reported progress (an MCP server\'s `notifications/progress`): `call_id` names its `function_call` item; `progress` grows with each report, `total` (null when the server gave none) and `message` (null when none) are as the server sent them. Live, like the deltas (Redis only: no `seq`, never in the items); at most about 4 per second per call (reports in between are dropped, the latest is always sent), all before the call\'s `function_call_output`.',
  'agent.output.command_execution_output.delta':
    'A command the agent runs in the session\'s workspace (`shell`) wrote output: `delta` is the text appended (stdout and stderr together, in order), `item_id` and `output_index` its `command_execution` item. Live, like the text deltas (no `seq`); the item\'s `output` once done is the whole output (cut at SANDBOX_OUTPUT_MAX_BYTES), which replaces the deltas.',
  'agent.session.turn.output_text.done': 'The full text of a content part, after it is committed; replaces the accumulated deltas.',
  'agent.session.turn.content_part.done': 'A content part is complete and committed.',
  'agent.session.turn.item.done':
    'An item is complete and committed; it can be read back from the items endpoints at once. An event carries at most EVENT_ITEM_CONTENT_BYTES of an item\'s content (this one, item.added, content_part.*, output_text.done and reasoning.done): past it the content is cut and `yuxi.truncated` is true; read the whole item from the items endpoints.',
  'yuxi.session.turn.context_compression':
    'The model context is being compacted (README "Context and compaction"). `phase`: `started` (live; `trigger` auto | manual | overflow), `completed` (durable; `item` is the `compaction` item, also in the items lists; `output_index` its index in the turn) or `failed` (`error` {code, message}: durable when nothing was compacted, e.g. `nothing_to_compact`; live when the summariser failed and the turn went on or failed with its own event).',
  'agent.session.subagent.created':
    'On a coordinator\'s stream: its `create_subagent` call created a member (README "Cooperation: subagents and trees"). `subagent` = {id (the member\'s session id), agent_id, name, task, parent_session_id, root_session_id, depth}; the member\'s own stream starts with its `agent.session.created`.',
  'yuxi.session.subagent.state':
    'On a coordinator\'s stream: a member\'s turn settled. `subagent_id`, `name`, `turn_id`, `status` (completed | failed | cancelled), `error_code` (failed turns). A coordinator waiting at a `cooperation` waitpoint continues once the members it waits for have settled.',
  'yuxi.session.run.yielded': 'The run stopped at a safe boundary to take a steer; the next run of the same turn follows (`run.resume_from_run_id`).',
  'yuxi.session.run.interrupted': 'The run stopped because its worker died or shut down; the text it showed is kept as an incomplete item, and the next run of the same turn (`run.resume_from_run_id`) continues on another worker.',
  'yuxi.session.run.requires_action': 'The run stopped at a waitpoint (a question, an approval, or client tool calls); the turn waits (`yuxi.session.turn.waiting`). A coordinator\'s wait for its members (`wait_subagents`) stops its run too, but its turn stays `in_progress` (`yuxi.session.turn.state` shows `yuxi.waitpoint.kind = cooperation`) and nobody is asked anything.',
  'yuxi.session.turn.waiting':
    'The turn (and the session) is `requires_action`: `waitpoint` = {id, kind (question | approval | client_tool), run_id, created_at, questions? [{question_id, question, options, multi_select, allow_other}], tool_calls? [{call_id, name, arguments}]}. Answer with `yuxi.session.input.resume` (question, approval) or one `tool_result` per call (client_tool); the turn then continues in a new run (`run.resume_from_run_id`).',
  'yuxi.session.run.completed': 'The run settled successfully.',
  'yuxi.session.run.failed': 'The run failed; `run.error` has the code.',
  'yuxi.session.run.cancelled': 'The run stopped because its turn was cancelled; text already shown is kept as an incomplete item.',
  'yuxi.session.turn.state': 'The turn changed state without a status change: after an accepted cancel, `turn.yuxi.cancellation_pending` is true until the terminal event.',
  'agent.session.turn.completed': 'The turn completed and its result is committed; `turn.yuxi.result_run_id` names the result run, `turn.yuxi.usage` what all its runs used (tokens, model and tool calls, cost).',
  'agent.session.turn.failed':
    'The turn failed; `turn.error.code` is one of: `model_rate_limited`, `model_timeout`, `model_context_length_exceeded`, `model_auth_failed`, `model_bad_request`, `model_unavailable` (after retries where retryable), `turn_model_call_limit`, `turn_tool_call_limit`, `turn_timeout`, `context_window_exceeded` (the context cannot fit the model window: one message too large, or compaction off or manual), `run_takeover_limit`, `run_failed`. `turn.error.retryable` says whether submitting the input again is advised and `turn.error.side_effects` (none | output | possible) what the turn may have done before it failed. A tool source that cannot be reached does not fail the turn (`yuxi.session.turn.capability_limited`). Pending inputs wait in a paused queue.',
  'agent.session.turn.cancelled': 'The turn was cancelled and its cleanup is done; pending inputs, if any, wait in a paused queue (`yuxi.session.input.continue`).',
  'yuxi.session.resync': 'Events may have been missed (`reason`: `cursor_expired` when the Last-Event-ID cursor is older than the replay window, `events_lost` when durable events or deltas were lost on the way, e.g. during a Redis outage): re-read the turn and its items, then continue from this event.',
} as const;

export type EventType = keyof typeof EVENT_TYPES;

/**
 * The format of the events this build writes, in every event's `yuxi.format` (live and durable
 * alike, and the resync a subscriber gets). It changes only when an event's envelope or meaning
 * changes incompatibly; a stream never mixes two formats (the SSE cursor has one format too).
 */
export const EVENT_FORMAT = 2;

/**
 * Every event carries these; the rest depends on the type. Durable events (all but the live ones:
 * the deltas (a command's output too), `tool_progress`, and the `item.added` / `content_part.added` that announce an
 * assistant message with its first text) also carry `yuxi.seq`: 1, 2, 3… per session, without gaps, so a
 * client can tell it missed one (the server then sends `yuxi.session.resync` first).
 */
export interface PublicEvent {
  type: EventType | string;
  event_id: string;
  session_id: string;
  created_at: number;
  [field: string]: unknown;
}
