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
