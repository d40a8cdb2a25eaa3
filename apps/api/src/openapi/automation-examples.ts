// The automations of the document's examples.
import { AT, INPUT_ID, SESSION_ID, TURN_ID } from './example-ids.js';

const AUTOMATION_ID = '0193a5d0-4b2c-7d3e-8f4a-5b6c7d8e9f10';
const INVOCATION_ID = '0193a5d1-5c3d-7e4f-8a5b-6c7d8e9f0a21';
const TARGET = { type: 'new_session', agent_id: 'default-chatbot', environment: { type: 'none' }, input: [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Summarise yesterday\'s tickets.' }] }] };
export const CREATE_AUTOMATION_EXAMPLE = { name: 'Weekday digest', type: 'periodic', expression: '0 9 * * 1-5', timezone: 'Europe/Berlin', target: TARGET, metadata: { team: 'support' }, yuxi: { overlap: 'skip', catch_up: 'latest' } };
export const CREATE_ONCE_EXAMPLE = { name: 'Follow up', type: 'once', run_at: 1893456000, target: { type: 'existing_session', session_id: SESSION_ID, instructions: 'Check whether the customer answered.' } };
export const AUTOMATION_EXAMPLE = {
  id: AUTOMATION_ID,
  object: 'agent.automation',
  name: 'Weekday digest',
  type: 'periodic',
  expression: '0 9 * * 1-5',
  timezone: 'Europe/Berlin',
  status: 'active',
  pause_reason: null,
  target: { ...TARGET, agent: null, metadata: {}, vault_ids: [] },
  created_at: AT - 3600,
  created_by: { type: 'developer' },
  metadata: { team: 'support' },
  yuxi: { overlap: 'skip', catch_up: 'latest', next_run_at: AT + 28800 },
};
export const PAUSED_AUTOMATION_EXAMPLE = { ...AUTOMATION_EXAMPLE, status: 'paused', yuxi: { ...AUTOMATION_EXAMPLE.yuxi, next_run_at: null } };
export const AUTOMATION_LIST_EXAMPLE = { object: 'list', data: [AUTOMATION_EXAMPLE], first_id: AUTOMATION_ID, last_id: AUTOMATION_ID, has_more: false };
export const AUTOMATION_DELETED_EXAMPLE = { id: AUTOMATION_ID, object: 'agent.automation.deleted', deleted: true };
export const INVOCATION_EXAMPLE = {
  id: INVOCATION_ID,
  object: 'agent.automation.invocation',
  automation_id: AUTOMATION_ID,
  created_at: AT,
  scheduled_at: AT,
  session_id: SESSION_ID,
  status: 'completed',
  skip_reason: null,
  error: null,
  source: { type: 'automation', automation: AUTOMATION_EXAMPLE },
  yuxi: { input_id: INPUT_ID, turn_id: TURN_ID, reason: 'scheduled', fired_at: AT },
};
export const MANUAL_INVOCATION_EXAMPLE = { ...INVOCATION_EXAMPLE, scheduled_at: null, source: { type: 'manual' }, yuxi: { ...INVOCATION_EXAMPLE.yuxi, reason: 'manual' } };
export const INVOCATION_LIST_EXAMPLE = { object: 'list', data: [INVOCATION_EXAMPLE], first_id: INVOCATION_ID, last_id: INVOCATION_ID, has_more: false };
export const SCHEDULE_PREVIEW_EXAMPLE = { object: 'agent.automation.schedule_preview', expression: '0 9 * * 1-5', timezone: 'Europe/Berlin', next_run_times: [1733385600, 1733472000, 1733731200, 1733817600, 1733904000] };
