import { ERROR_CODES, type ErrorCode } from '#libs/errors';
import { PROTOCOL_EVENT_TYPES } from '#libs/protocol';

/** What `details` holds for the codes that set some (see ErrorDetailsDto); `{}` for the others. */
const DETAILS: Partial<Record<ErrorCode, Record<string, unknown>>> = {
  validation_failed: { fields: [{ field: 'agent_id', errors: ['agent_id must be longer than or equal to 1 characters'] }] },
  invalid_agent: { fields: [{ field: 'limits.max_tool_calls', errors: ['must be an integer 0–1000'] }] },
  waitpoint_incomplete: { fields: [{ field: 'response', errors: ['missing: call_7f3a9c1e'] }] },
  method_not_allowed: { allow: ['GET', 'HEAD'] },
  rate_limited: { retry_after: 12 },
  authentication_throttled: { retry_after: 40 },
  api_key_limit: { limit: 100 },
  idempotency_conflict: { idempotency_key: 'create-0001' },
  unknown_event_type: { allowed: [...PROTOCOL_EVENT_TYPES] },
  state_conflict: { queued_input_count: 2 },
  waitpoint_stale: { turn_status: 'in_progress', waitpoint_id: null },
  revision_mismatch: { expected_revision: 2, revision: 3 },
  budget_exceeded: { budget_id: '0193a5c2-8a01-7b22-9c3d-4e5f6a7b8c21', limit: 'model_calls', limit_value: 100, spent: 100 },
};

/** An error body of `code` as the server sends it. */
export function errorExample(code: ErrorCode): { summary: string; value: object } {
  const spec = ERROR_CODES[code];
  return {
    summary: code,
    value: {
      error: {
        code,
        message: spec.description,
        type: spec.type,
        retryable: spec.retryable,
        request_id: 'req_5f2c8e1a9b3d4c7e8f0a1b2c3d4e5f60',
        details: DETAILS[code] ?? {},
      },
    },
  };
}
