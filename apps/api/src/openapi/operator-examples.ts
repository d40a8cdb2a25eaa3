/** Examples of the operator API: the timeline, a run's model requests, the inbox, the queues page, bulk cancel. Ids are UUIDv7 like the server's. */

import { AT, INPUT_ID, MODEL, RUN_ID, SESSION_ID, TURN_ID, USER_ID as OWNER_ID } from './examples.js';

const WAITPOINT_ID = '0193a5c2-7e60-7b11-8c2d-3e4f5a6b7c21';
const FIRST_CALL_STEP = '0193a5c2-7e61-7c22-9d3e-4f5a6b7c8d31';
const SECOND_CALL_STEP = '0193a5c2-7e63-7e44-9f5a-6b7c8d9e0f51';
const USAGE = { input_tokens: 120, output_tokens: 18, cached_tokens: 0, reasoning_tokens: 0, total_tokens: 138, model_calls: 2, tool_calls: 1, cost_microusd: 29 };

export const SESSION_TIMELINE_EXAMPLE = {
  object: 'list',
  data: [
    {
      id: TURN_ID,
      object: 'admin.timeline.turn',
      seq: 1,
      status: 'completed',
      agent_id: 'default-chatbot',
      model: MODEL,
      cancellation_pending: false,
      waitpoint: null,
      usage: USAGE,
      error: null,
      created_at: AT,
      started_at: AT,
      completed_at: AT + 2,
      runs: [
        {
          id: RUN_ID,
          seq: 1,
          status: 'completed',
          model: MODEL,
          input_ids: [INPUT_ID],
          resume_from_run_id: null,
          interrupted: false,
          lease: null,
          epoch: 1,
          usage: USAGE,
          error: null,
          created_at: AT,
          started_at: AT,
          completed_at: AT + 2,
          duration_ms: 2140,
          steps: [
            {
              id: FIRST_CALL_STEP,
              seq: 1,
              kind: 'model_call',
              status: 'completed',
              created_at: AT + 1,
              completed_at: AT + 1,
              duration_ms: 812,
              truncated: false,
              model_call: { model: MODEL, usage: { input_tokens: 60, output_tokens: 9, cached_tokens: 0, total_tokens: 69 }, text: '', tool_call_count: 1, finish_reason: 'tool_calls' },
            },
            {
              id: '0193a5c2-7e62-7d33-8e4f-5a6b7c8d9e41',
              seq: 2,
              kind: 'tool_call',
              status: 'completed',
              created_at: AT + 1,
              completed_at: AT + 1,
              duration_ms: 35,
              truncated: false,
              tool_call: { call_id: 'call_1', name: 'get_time', arguments: '{"zone":"UTC"}', success: true, output: '2024-12-05T12:00:00Z', approval: null },
            },
            {
              id: SECOND_CALL_STEP,
              seq: 3,
              kind: 'model_call',
              status: 'completed',
              created_at: AT + 2,
              completed_at: AT + 2,
              duration_ms: 640,
              truncated: false,
              model_call: { model: MODEL, usage: { input_tokens: 60, output_tokens: 9, cached_tokens: 0, total_tokens: 69 }, text: 'It is noon (UTC).', tool_call_count: 0, finish_reason: 'stop' },
            },
          ],
        },
      ],
    },
  ],
  first_id: TURN_ID,
  last_id: TURN_ID,
  has_more: false,
  session: {
    id: SESSION_ID,
    owner_id: OWNER_ID,
    agent_id: 'default-chatbot',
    model: MODEL,
    title: 'Quarterly report',
    status: 'completed',
    parent_session_id: null,
    root_session_id: SESSION_ID,
    created_at: AT,
  },
  members: [],
  model_requests: 'not_recorded',
};

const OPENAI_MODEL = 'openai:gpt-4o-mini';
const GET_TIME_TOOL = {
  type: 'function',
  function: { name: 'get_time', description: 'The current time in a time zone.', parameters: { type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] } },
};
const ASKED = [
  { role: 'system', content: 'You are a helpful assistant. Answer briefly.' },
  { role: 'user', content: 'What time is it in UTC?' },
];

/** The two calls of a tool round on an `openai:` model: the Chat Completions bodies as sent. */
export const MODEL_REQUEST_LIST_EXAMPLE = {
  object: 'list',
  data: [
    {
      object: 'model_request',
      step_id: FIRST_CALL_STEP,
      seq: 1,
      model: OPENAI_MODEL,
      request: { model: 'gpt-4o-mini', messages: ASKED, tools: [GET_TIME_TOOL], stream: true, stream_options: { include_usage: true } },
      created_at: AT + 1,
    },
    {
      object: 'model_request',
      step_id: SECOND_CALL_STEP,
      seq: 3,
      model: OPENAI_MODEL,
      request: {
        model: 'gpt-4o-mini',
        messages: [
          ...ASKED,
          { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'get_time', arguments: '{"zone":"UTC"}' } }] },
          { role: 'tool', tool_call_id: 'call_1', content: '2024-12-05T12:00:00Z' },
        ],
        tools: [GET_TIME_TOOL],
        stream: true,
        stream_options: { include_usage: true },
      },
      created_at: AT + 2,
    },
  ],
  first_id: FIRST_CALL_STEP,
  last_id: SECOND_CALL_STEP,
  has_more: false,
};

export const OPEN_WAITPOINT_LIST_EXAMPLE = {
  object: 'list',
  data: [
    {
      id: WAITPOINT_ID,
      object: 'admin.waitpoint',
      kind: 'question',
      status: 'open',
      session_id: SESSION_ID,
      owner_id: OWNER_ID,
      owner: { kind: 'user', subject: 'alice', app_id: null, name: null },
      agent_id: 'default-chatbot',
      turn_id: TURN_ID,
      run_id: RUN_ID,
      questions: [{ question_id: 'call_ask_1', question: 'Which quarter?', options: [], multi_select: false, allow_other: true }],
      created_at: AT,
    },
  ],
  first_id: WAITPOINT_ID,
  last_id: WAITPOINT_ID,
  has_more: false,
};

export const QUEUE_STATUS_EXAMPLE = {
  object: 'admin.queue_status',
  queues: [
    { name: 'session-dispatch', paused: false, waiting: 3, active: 2, delayed: 0, failed: 0 },
    { name: 'maintenance', paused: false, waiting: 0, active: 0, delayed: 2, failed: 0 },
    { name: 'files', paused: false, waiting: 0, active: 0, delayed: 0, failed: 0 },
  ],
  oldest_pending_input_age_s: 4,
  workers: [{ id: 'worker-7f3a', host: 'worker-1', pid: 4242, consuming: true, started_at: AT - 3600, last_heartbeat_at: AT }],
  runs: { held: 2, awaiting_takeover: 0, takeovers_last_hour: 1 },
  read_at: AT,
};

export const BULK_CANCEL_EXAMPLES = {
  dry_run: { summary: 'Count first', value: { filter: { agent_id: 'default-chatbot', status: 'requires_action', created_before: AT }, dry_run: true } },
  cancel: { summary: 'Then cancel', value: { filter: { agent_id: 'default-chatbot', status: 'requires_action', created_before: AT }, dry_run: false } },
};

export const BULK_CANCEL_RESULT_EXAMPLE = {
  object: 'admin.bulk_cancel',
  dry_run: false,
  matched: 1,
  limit: 1000,
  session_ids: [SESSION_ID],
  skipped: [],
  has_more: false,
};
