// The budgets of the document's examples.
import { AT } from './example-ids.js';

const BUDGET_ID = '0193a5b1-2c3d-7e4f-8a5b-6c7d8e9f0a1b';
const PROJECT_ID = '0193a5b0-1c2d-7e3f-8a4b-5c6d7e8f9a0b';
export const CREATE_BUDGET_EXAMPLE = { scope: { project_id: PROJECT_ID }, limits: { cost_microusd: 5_000_000, model_calls: 200 }, period: 'day', on_exceeded: 'pause' };
export const BUDGET_EXAMPLE = {
  id: BUDGET_ID,
  object: 'agent.budget',
  ...CREATE_BUDGET_EXAMPLE,
  spent: { cost_microusd: 1_234_567, tokens: 48_210, model_calls: 37, tool_calls: 12, turns: 9, wall_time_s: 184 },
  period_start: 1733356800,
  period_end: 1733443200,
  metadata: {},
  created_at: AT - 3600,
  updated_at: AT - 3600,
};
export const BUDGET_LIST_EXAMPLE = { object: 'list', data: [BUDGET_EXAMPLE], first_id: BUDGET_ID, last_id: BUDGET_ID, has_more: false };
export const BUDGET_DELETED_EXAMPLE = { id: BUDGET_ID, object: 'agent.budget', deleted: true };
