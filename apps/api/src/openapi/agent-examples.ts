// The agents of the document's examples: the catalogue, an administrator's PUT and its versions.
import { AT, MODEL, USER_ID } from './example-ids.js';

export const AGENT_EXAMPLE = {
  id: 'default-chatbot',
  object: 'agent',
  name: 'Default Chatbot',
  description: 'A general-purpose assistant available on every install.',
  model: MODEL,
  created_at: AT,
  yuxi: {
    tool_approval_mode: 'default',
    tool_approval_pinned: false,
    allowed_models: null,
    system: true,
    visibility: 'public',
    version: 1,
    tools: [
      { type: 'builtin', name: 'ask_user' },
      { type: 'builtin', name: 'calculator' },
      { type: 'builtin', name: 'current_time' },
    ],
    limits: { max_model_calls: 25, max_tool_calls: 50, turn_timeout_s: 900 },
    context: {},
    multi_agent: null,
    environment: null,
    ttl: null,
    updated_at: AT,
  },
};
export const AGENT_LIST_EXAMPLE = { object: 'list', data: [AGENT_EXAMPLE], first_id: 'default-chatbot', last_id: 'default-chatbot', has_more: false };

/** A PUT body that succeeds as is on a fresh install (the scripted model needs no provider). */
export const PUT_AGENT_EXAMPLE = {
  name: 'Support bot',
  description: 'Answers support questions briefly.',
  instructions: 'Be brief and friendly.',
  model: MODEL,
  tools: [{ type: 'builtin', name: 'calculator' }],
  limits: { max_tool_calls: 5 },
  context: { window_tokens: 16000, compaction: { mode: 'auto', threshold: 0.8, instructions: 'Keep every order number.' } },
};
export const PUT_AGENT_RESPONSE_EXAMPLE = {
  id: 'support-bot',
  object: 'agent',
  name: PUT_AGENT_EXAMPLE.name,
  description: PUT_AGENT_EXAMPLE.description,
  model: MODEL,
  created_at: AT,
  yuxi: {
    tool_approval_mode: 'default',
    tool_approval_pinned: false,
    allowed_models: null,
    system: false,
    visibility: 'public',
    version: 1,
    tools: PUT_AGENT_EXAMPLE.tools,
    limits: { max_model_calls: 25, max_tool_calls: 5, turn_timeout_s: 900 },
    context: PUT_AGENT_EXAMPLE.context,
    multi_agent: null,
    environment: null,
    ttl: null,
    instructions: PUT_AGENT_EXAMPLE.instructions,
    updated_at: AT,
  },
};
/** The history of the agent PUT_AGENT_EXAMPLE created and then replaced (`tool_approval_mode` changed). */
const AGENT_VERSION_DEFINITION = {
  name: PUT_AGENT_EXAMPLE.name,
  description: PUT_AGENT_EXAMPLE.description,
  instructions: PUT_AGENT_EXAMPLE.instructions,
  model: MODEL,
  tools: PUT_AGENT_EXAMPLE.tools,
  tool_approval_mode: 'default',
  allowed_models: null,
  tool_approval_pinned: false,
  limits: PUT_AGENT_EXAMPLE.limits,
  context: PUT_AGENT_EXAMPLE.context,
  multi_agent: null,
  visibility: 'public',
  environment: null,
  ttl: null,
};
export const AGENT_VERSION_LIST_EXAMPLE = {
  object: 'list',
  data: [
    { object: 'agent.version', agent_id: 'support-bot', version: 2, definition: { ...AGENT_VERSION_DEFINITION, tool_approval_mode: 'always_ask' }, created_at: AT + 3600, actor_id: USER_ID },
    { object: 'agent.version', agent_id: 'support-bot', version: 1, definition: AGENT_VERSION_DEFINITION, created_at: AT, actor_id: USER_ID },
  ],
  first_id: '2',
  last_id: '1',
  has_more: false,
};
export const AGENT_DELETED_EXAMPLE = { id: 'support-bot', object: 'agent.deleted', deleted: true };
