/**
 * Examples of the document: what a session of `default-chatbot` (the `scripted:echo` model of a
 * fresh install) looks like on the wire. The lint test (test/e2e/openapi-lint.test.ts) checks each
 * against its schema, so they stay true as the DTOs change. Request examples are meant to succeed
 * as they are in Swagger's "Try it out" on a fresh install; ids in them would not, so the default
 * request bodies name none.
 */
import { AT, INPUT_ID, MODEL, RUN_ID, SESSION_ID, TURN_ID, USER_ID } from './example-ids.js';

// The agents' and the webhooks' examples are in files of their own; controllers import every example from here.
export { AT, INPUT_ID, MODEL, RUN_ID, SESSION_ID, TURN_ID, USER_ID };
export * from './agent-examples.js';
export * from './webhook-examples.js';

const USER_ITEM_ID = '0193a5c2-7e54-7c21-9f3e-1a2b3c4d5e06';
const ASSISTANT_ITEM_ID = '0193a5c2-7e58-7d32-8a4f-2b3c4d5e6f07';
const KEY_ID = '0193a5b0-1c2d-7e3f-9a4b-5c6d7e8f9a08';

const usage = { input_tokens: 1, output_tokens: 2, cached_tokens: 0, reasoning_tokens: 0, total_tokens: 3, model_calls: 1, tool_calls: 0, cost_microusd: 2 };

export const RECEIPT_EXAMPLE = {
  object: 'yuxi.session.event.accepted',
  event_id: 'evt_0193a5c27e4d7b3c8e1f2a4b6c8d0e05',
  session_id: SESSION_ID,
  input_id: INPUT_ID,
  turn_id: null,
  run_id: null,
  status: 'accepted',
};

const CURRENT_TURN = { id: TURN_ID, status: 'completed', current_run_id: null, result_run_id: RUN_ID, waitpoint: null };

function session(overrides: { status: string; receipt: object | null; title: string }) {
  return {
    id: SESSION_ID,
    object: 'agent.session',
    agent: { id: 'default-chatbot', model: MODEL },
    created_at: AT,
    last_active_at: AT + 1,
    status: overrides.status,
    environment: { type: 'none' },
    metadata: { channel: 'web' },
    usage: null,
    required_actions: [],
    error: null,
    yuxi: {
      title: overrides.title,
      project_id: null,
      is_pinned: false,
      archived: false,
      unread: true,
      tool_approval_mode: 'default',
      compaction_mode: null,
      queue_paused: false,
      queued_input_count: 0,
      current_turn: overrides.receipt ? null : CURRENT_TURN,
      parent_session_id: null,
      root_session_id: SESSION_ID,
      depth: 0,
      spawned_by: null,
      subagent: null,
      forked_from: null,
      metadata: { channel: 'web' },
      revision: 1,
      receipt: overrides.receipt,
      ttl: null,
      expires_at: null,
    },
  };
}

/** The create response: the initial input is accepted and pending, its turn not yet created. */
const CREATED = session({ status: 'in_progress', receipt: RECEIPT_EXAMPLE, title: 'Quarterly report' });
export const CREATED_SESSION_EXAMPLE = { ...CREATED, last_active_at: AT, yuxi: { ...CREATED.yuxi, unread: false, queued_input_count: 1 } };
export const SESSION_EXAMPLE = session({ status: 'completed', receipt: null, title: 'Quarterly report' });
export const SESSION_LIST_EXAMPLE = { object: 'list', data: [SESSION_EXAMPLE], first_id: SESSION_ID, last_id: SESSION_ID, has_more: false };
/** A session as operators see it: with its owner. */
export const ADMIN_SESSION_EXAMPLE = {
  ...SESSION_EXAMPLE,
  yuxi: { ...SESSION_EXAMPLE.yuxi, owner_id: USER_ID, owner: { kind: 'user', subject: 'alice', app_id: null, name: null } },
};
export const ADMIN_SESSION_LIST_EXAMPLE = { object: 'list', data: [ADMIN_SESSION_EXAMPLE], first_id: SESSION_ID, last_id: SESSION_ID, has_more: false };

const PROJECT_ID = '0193a5c1-2b3c-7d4e-8f5a-6b7c8d9e0f10';
export const CREATE_PROJECT_EXAMPLE = { name: 'Quarterly reporting', description: 'Sessions about the Q3 report share its files.' };
export const PROJECT_EXAMPLE = { id: PROJECT_ID, object: 'agent.project', ...CREATE_PROJECT_EXAMPLE, created_at: AT - 60, updated_at: AT - 60, yuxi: { ttl: null } };
export const PROJECT_LIST_EXAMPLE = { object: 'list', data: [PROJECT_EXAMPLE], first_id: PROJECT_ID, last_id: PROJECT_ID, has_more: false };
export const PROJECT_DELETED_EXAMPLE = { id: PROJECT_ID, object: 'agent.project', deleted: true };

export const SESSION_STORAGE_EXAMPLE = {
  object: 'yuxi.session.storage',
  session_id: SESSION_ID,
  items: { rows: 8, bytes: 3912 },
  events: { rows: 37, bytes: 41_236 },
  inputs: { rows: 4, bytes: 5120 },
  turns: { rows: 4, bytes: 2860 },
  runs: { rows: 4, bytes: 4210 },
  steps: { rows: 4, bytes: 2954 },
  model_requests: { rows: 0, bytes: 0 },
  files: { count: 1, bytes: 18_432 },
  workspace: { bytes: 20_480, files: 3, versions: { rows: 2, bytes: 1184 }, shared: false, inherited: false },
  total_bytes: 100_388,
  measured_at: AT + 60,
};

/** A W3C trace id (the turn's and its runs' `yuxi.trace_id` when tracing is on). */
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

const RUN = {
  id: RUN_ID,
  object: 'yuxi.session.run',
  session_id: SESSION_ID,
  turn_id: TURN_ID,
  status: 'completed',
  usage,
  input_ids: [INPUT_ID],
  model: MODEL,
  resume_from_run_id: null,
  created_at: AT,
  started_at: AT,
  completed_at: AT + 1,
  yuxi: { trace_id: TRACE_ID },
  error: null,
};
export const RUN_EXAMPLE = RUN;

const USER_ITEM = {
  id: USER_ITEM_ID,
  type: 'message',
  role: 'user',
  status: 'completed',
  content: [{ type: 'input_text', text: 'Hello!' }],
  yuxi: { turn_id: TURN_ID, run_id: RUN_ID, input_id: INPUT_ID, created_at: AT, received_at: AT },
};
const ASSISTANT_ITEM = {
  id: ASSISTANT_ITEM_ID,
  type: 'message',
  role: 'assistant',
  status: 'completed',
  content: [{ type: 'output_text', text: 'Echo: Hello!', annotations: [] }],
  phase: 'final_answer',
  yuxi: { turn_id: TURN_ID, run_id: RUN_ID, input_id: null, created_at: AT + 1, received_at: null },
};

const CONTEXT = { tokens: 42, window_tokens: 32768, compaction_item_id: null };

const TURN = {
  id: TURN_ID,
  object: 'agent.session.turn',
  session_id: SESSION_ID,
  agent: { id: 'default-chatbot', model: MODEL },
  status: 'completed',
  created_at: AT,
  started_at: AT,
  completed_at: AT + 1,
  error: null,
  usage: null,
  yuxi: { current_run_id: null, result_run_id: RUN_ID, waitpoint: null, usage, context: CONTEXT, trace_id: TRACE_ID },
};
export const TURN_LIST_EXAMPLE = { object: 'list', data: [TURN], first_id: TURN_ID, last_id: TURN_ID, has_more: false };
export const TURN_DETAIL_EXAMPLE = { ...TURN, yuxi: { ...TURN.yuxi, cancellation_pending: false, runs: [RUN], output: [ASSISTANT_ITEM] } };

export const ITEM_LIST_EXAMPLE = {
  object: 'list',
  data: [USER_ITEM, ASSISTANT_ITEM],
  first_id: USER_ITEM_ID,
  last_id: ASSISTANT_ITEM_ID,
  has_more: false,
  yuxi: { runs: [{ id: RUN_ID, status: 'completed', input_ids: [INPUT_ID], created_at: AT, completed_at: AT + 1, error: null }] },
};

const INPUT = {
  id: INPUT_ID,
  object: 'yuxi.session.input',
  session_id: SESSION_ID,
  status: 'consumed',
  mode: 'follow_up',
  kind: 'message',
  received_seq: 1,
  messages: [{ role: 'user', content: [{ type: 'input_text', text: 'Hello!' }] }],
  attachment_file_ids: [],
  attachments: [],
  attachment_status: 'ready',
  attachment_error: null,
  turn_id: TURN_ID,
  run_id: RUN_ID,
  received_at: AT,
  created_at: AT,
  cancelled_at: null,
  model: MODEL,
};
export const INPUT_DETAIL_EXAMPLE = { ...INPUT, items: [USER_ITEM] };
export const QUEUE_EXAMPLE = {
  object: 'yuxi.session.queue',
  session_id: SESSION_ID,
  paused: false,
  data: [{ ...INPUT, id: '0193a5c2-8f01-7a2b-9c3d-4e5f6a7b8c10', status: 'pending', received_seq: 2, turn_id: null, run_id: null, created_at: null }],
};
export const STATE_EXAMPLE = {
  object: 'yuxi.session.state',
  session_id: SESSION_ID,
  status: 'completed',
  current_turn: CURRENT_TURN,
  queue_paused: false,
  queued_input_count: 0,
  archived: false,
  context: CONTEXT,
  compaction_mode: null,
  agent_state: {},
};

export const CREATE_API_KEY_EXAMPLE = { name: 'CI key', access: 'agents' };
/** A key for the user whose tokens carry `sub: "alice"`: the key and the tokens are one principal. */
export const CREATE_API_KEY_FOR_SUBJECT_EXAMPLE = { name: 'Alice\'s CLI', access: 'agents', user_subject: 'alice' };
const API_KEY = {
  id: KEY_ID,
  object: 'api_key',
  name: 'CI key',
  access: 'agents',
  app_id: null,
  user_id: USER_ID,
  prefix: 'yuxi_3kTq9Zb',
  rate_limit_per_minute: null,
  max_streams: null,
  created_at: AT,
  expires_at: null,
  last_used_at: null,
  revoked_at: null,
};
export const API_KEY_CREATED_EXAMPLE = { ...API_KEY, secret: 'yuxi_3kTq9ZbX2mLw8RcV1nHs7JdP4fYg6AeU0oKiabc123' };
export const API_KEY_LIST_EXAMPLE = { object: 'list', data: [API_KEY], first_id: KEY_ID, last_id: KEY_ID, has_more: false };
export const API_KEY_DELETED_EXAMPLE = { id: KEY_ID, object: 'api_key.deleted', deleted: true };

export const PUT_SECRET_EXAMPLE = { value: 'ghp_exampletoken' };

export const SECRET_EXAMPLE = {
  id: '0193a7c2-5e1f-7a3b-9c4d-2e6f8a1b3c5d',
  object: 'secret',
  name: 'github-token',
  scope: 'own',
  owner_id: USER_ID,
  version: 1,
  created_at: 1764547200,
  updated_at: 1764547200,
};

export const AUDIT_LIST_EXAMPLE = {
  object: 'list',
  data: [
    {
      id: '0193a5b0-2d3e-7f4a-8b5c-6d7e8f9a0b11',
      object: 'audit_entry',
      action: 'api_key.created',
      actor_id: USER_ID,
      key_id: null,
      target: { type: 'api_key', id: KEY_ID },
      details: { name: 'CI key', access: 'agents', app_id: null, user_id: USER_ID },
      created_at: AT,
    },
  ],
  first_id: '0193a5b0-2d3e-7f4a-8b5c-6d7e8f9a0b11',
  last_id: '0193a5b0-2d3e-7f4a-8b5c-6d7e8f9a0b11',
  has_more: false,
};

/** A user after `setUserRole`. */
export const CALLER_EXAMPLE = { object: 'caller', user_id: USER_ID, actor_id: USER_ID, kind: 'user', key_id: KEY_ID, access: 'full', app_id: null, end_user_id: null, role: 'operator' };

export const USER_EXAMPLE = { id: USER_ID, object: 'user', kind: 'user', subject: 'alice', app_id: null, parent_id: null, role: 'operator', is_admin: false, suspended_at: null, created_at: AT };

export const USER_LIST_EXAMPLE = {
  object: 'list',
  data: [
    { id: USER_ID, object: 'user', kind: 'user', subject: 'alice', app_id: null, parent_id: null, role: null, is_admin: false, suspended_at: null, created_at: AT },
    { id: '0193a5b0-0a1b-7c2d-8e3f-4a5b6c7d8e10', object: 'user', kind: 'user', subject: null, app_id: null, parent_id: null, role: 'admin', is_admin: true, suspended_at: null, created_at: AT },
  ],
  first_id: USER_ID,
  last_id: '0193a5b0-0a1b-7c2d-8e3f-4a5b6c7d8e10',
  has_more: false,
};

/** The bodies of POST …/events, one per event type; the first succeeds on any session that is not archived. */
export const SUBMIT_EVENT_EXAMPLES = {
  message: { summary: 'A follow-up message (queued FIFO)', value: { events: [{ type: 'agent.session.input.message', input: 'Hello again', yuxi: { mode: 'follow_up' } }] } },
  steer: { summary: 'A steer into the running turn', value: { events: [{ type: 'agent.session.input.message', input: 'Make it shorter', yuxi: { mode: 'steer' } }] } },
  cancel: { summary: 'Cancel the current turn', value: { events: [{ type: 'agent.session.input.cancel' }] } },
  cancel_input: { summary: 'Cancel one pending input', value: { events: [{ type: 'yuxi.session.input.cancel_input', input_id: INPUT_ID }] } },
  promote: { summary: 'Run a pending follow-up as a steer', value: { events: [{ type: 'yuxi.session.input.promote', input_id: INPUT_ID }] } },
  continue: { summary: 'Resume a queue paused by a cancel', value: { events: [{ type: 'yuxi.session.input.continue' }] } },
  answer: {
    summary: 'Answer a question waitpoint',
    value: {
      events: [
        {
          type: 'yuxi.session.input.resume',
          turn_id: TURN_ID,
          waitpoint_id: '0193a5c2-7e60-7c1d-9e2f-3a4b5c6d7e13',
          response: { type: 'answer', answers: [{ question_id: 'call_7f3a9c1e', answer: 'blue' }] },
        },
      ],
    },
  },
  approval: {
    summary: 'Decide an approval waitpoint',
    value: {
      events: [
        {
          type: 'yuxi.session.input.resume',
          turn_id: TURN_ID,
          waitpoint_id: '0193a5c2-7e60-7c1d-9e2f-3a4b5c6d7e13',
          response: { type: 'approval', decisions: [{ call_id: 'call_2b8e4d6f', decision: 'approve' }] },
        },
      ],
    },
  },
  tool_result: {
    summary: 'The result of a client tool call',
    value: { events: [{ type: 'tool_result', turn_id: TURN_ID, call_id: 'call_2b8e4d6f', success: true, output: '{"temperature":21}' }] },
  },
};
/** The bodies of the admin events route: control events only; the first succeeds on any session (a stop always applies). */
export const OPERATOR_EVENT_EXAMPLES = {
  stop: { summary: 'Stop the session and its tree: cancel running turns, pause the queues', value: { events: [{ type: 'yuxi.session.tree.stop' }] } },
  tree_continue: { summary: 'Continue a stopped tree once its work has settled', value: { events: [{ type: 'yuxi.session.tree.continue' }] } },
  cancel: SUBMIT_EVENT_EXAMPLES.cancel,
  continue: SUBMIT_EVENT_EXAMPLES.continue,
  answer: SUBMIT_EVENT_EXAMPLES.answer,
  approval: SUBMIT_EVENT_EXAMPLES.approval,
  tool_result: SUBMIT_EVENT_EXAMPLES.tool_result,
};

export const MESSAGE_RECEIPT_EXAMPLE = { ...RECEIPT_EXAMPLE, event_id: 'evt_0193a5c28f027b3c8e1f2a4b6c8d0e12', input_id: '0193a5c2-8f01-7a2b-9c3d-4e5f6a7b8c10' };

export const UPDATE_SESSION_EXAMPLE = { yuxi: { title: 'Renamed', is_pinned: true, unread: false, metadata: { channel: 'web' } } };

const DRAFT_ID = '0123456789abcdef0123456789abcdef';
export const PARSED_FILE_EXAMPLE = {
  object: 'file.parse',
  file_id: DRAFT_ID,
  mime_type: 'application/pdf',
  pages: [
    { page: 1, text: 'Quarterly report\nRevenue grew 12%.\n', source: 'text' },
    { page: 2, text: 'Signed: J. Smith, 3 March\n', source: 'ocr' },
  ],
  total_pages: 2,
  pages_not_recognised: 0,
};
export const THUMBNAIL_REQUEST_EXAMPLE = { file_id: DRAFT_ID, width: 256, height: 256 };
export const THUMBNAIL_EXAMPLE = {
  object: 'image.thumbnail',
  file_id: DRAFT_ID,
  mime_type: 'image/webp',
  width: 256,
  height: 192,
  bytes: 44,
  data_url: 'data:image/webp;base64,UklGRiQAAABXRUJQVlA4IBgAAAAwAQCdASoBAAEAAwA0JaQAA3AA/vuUAAA=',
};

export const PROJECT_STORAGE_EXAMPLE = { object: 'yuxi.project.storage', project_id: PROJECT_ID, bytes: 1_482_113, rows: 2210, sessions: 12, measured_at: AT };
const OWNER_STORAGE_TOTAL = {
  id: USER_ID,
  object: 'yuxi.storage.total',
  owner_id: USER_ID,
  owner: { kind: 'user', subject: 'alice', app_id: null, name: null },
  project_id: null,
  project_name: null,
  bytes: 25_301_884,
  rows: 41_230,
  sessions: 164,
  measured_at: AT,
  summed_at: AT + 2,
  quota_bytes: 1_073_741_824,
};
export const STORAGE_TOTAL_LIST_EXAMPLE = { object: 'list', data: [OWNER_STORAGE_TOTAL], first_id: USER_ID, last_id: USER_ID, has_more: false };
