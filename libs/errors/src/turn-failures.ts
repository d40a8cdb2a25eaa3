/**
 * Why a turn (and its run) failed: `turn.error.code` and `run.error.code`, the failures the worker
 * and recovery write (not HTTP answers: those are ERROR_CODES). `transient`: the cause may be gone
 * on a later try (a provider's rate limit or outage, a crash), as opposed to one the same input
 * meets again (a limit, a request the provider refuses). Whether the turn may be retried also
 * depends on what it did before it failed (FailureSideEffects), which the settled error states.
 */
export const TURN_FAILURE_CODES = {
  model_rate_limited: { transient: true, description: 'The model provider rate-limited the calls, past the retries.' },
  model_timeout: { transient: true, description: 'The model call timed out, past the retries.' },
  model_unavailable: { transient: true, description: 'The model provider was unavailable, past the retries.' },
  model_context_length_exceeded: { transient: false, description: 'The provider refused the context as too long for the model.' },
  model_auth_failed: { transient: false, description: 'The provider refused the deployment\'s credentials.' },
  model_bad_request: { transient: false, description: 'The provider refused the request.' },
  turn_model_call_limit: { transient: false, description: 'The turn reached its agent\'s limit of model calls.' },
  turn_tool_call_limit: { transient: false, description: 'The turn reached its agent\'s limit of tool calls.' },
  budget_exceeded: { transient: false, description: 'A budget in the session\'s scope was spent (`on_exceeded: fail`), or a person rejected its `budget` waitpoint.' },
  turn_timeout: { transient: false, description: 'The turn reached its agent\'s execution time limit.' },
  context_window_exceeded: { transient: false, description: 'The context cannot fit the model window (one message too large, or compaction off or manual).' },
  // Workers that died on this turn again and again: usually the turn itself kills them (a crash
  // loop), which the same input meets again.
  run_takeover_limit: { transient: false, description: 'The turn\'s runs were taken over from dead workers too many times.' },
  run_failed: { transient: true, description: 'The run failed unexpectedly (the worker\'s log has the cause).' },
  operator_failed: { transient: false, description: 'An operator ended the turn (`ops fail-turn`).' },
} as const satisfies Record<string, { transient: boolean; description: string }>;

export type TurnFailureCode = keyof typeof TURN_FAILURE_CODES;

/**
 * What a failed turn may have done outside itself before it failed, derived from its committed
 * steps and items: `none` (nothing: no message, no tool call), `output` (it produced messages or
 * tool calls, but no tool that may change something ran), `possible` (a tool that may change
 * something ran or may have run — every MCP tool, a coordination call, a client's function tools
 * — whether or not it is declared idempotent: that decides `retryable`, not this).
 */
export const FAILURE_SIDE_EFFECTS = ['none', 'output', 'possible'] as const;
export type FailureSideEffects = (typeof FAILURE_SIDE_EFFECTS)[number];

/** Whether the failure's cause may be gone on a later try; a code outside the catalogue (a scripted model's) is not. */
export function isTransientFailure(code: string): boolean {
  return Object.hasOwn(TURN_FAILURE_CODES, code) && TURN_FAILURE_CODES[code as TurnFailureCode].transient;
}

/**
 * Retrying (submitting the input again) is advised when the cause is transient and no tool that may
 * change something and is not declared idempotent ran (`unsafeEffects`): repeating an idempotent
 * tool's effect is harmless, repeating another's is not.
 */
export function failureRetryable(code: string, unsafeEffects: boolean): boolean {
  return isTransientFailure(code) && !unsafeEffects;
}
