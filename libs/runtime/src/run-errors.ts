/** Why a run stopped before its own work finished: each leads to a different settlement. */

/** The run's lease is gone (expired, taken over): nothing more may be written or published. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

/** The turn was asked to cancel: settle it as cancelled, keeping the text shown. */
export class TurnCancelledError extends Error {
  override readonly name = 'TurnCancelledError';
}

/** This worker is shutting down: release the run at this boundary for another worker to continue. */
export class ShuttingDownError extends Error {
  override readonly name = 'ShuttingDownError';
}

/**
 * The turn reached one of its agent's limits (model calls, tool calls, execution time), or its
 * context cannot fit the model's window: it fails with `code` (not retryable).
 */
export class TurnLimitError extends Error {
  override readonly name = 'TurnLimitError';

  constructor(
    readonly code: 'turn_model_call_limit' | 'turn_tool_call_limit' | 'turn_timeout' | 'context_window_exceeded',
    message: string,
  ) {
    super(message);
  }
}
