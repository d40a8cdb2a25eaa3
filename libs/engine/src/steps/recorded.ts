import type { OutboxBatch } from '#libs/events';
import type { LedgerRow } from '#libs/usage';
import type { CommittedStep } from '../tables/turn.entities.js';

/** A step as recorded in its transaction: what the worker publishes, and where the turn goes on. */
export interface Recorded {
  batch: OutboxBatch;
  /** The output index the turn's next item gets. */
  outputIndex: number;
  /** The step as committed: what the planner reads next (the executor keeps no copy of its own). */
  step: CommittedStep;
  /** The ledger rows the step wrote (its calls' usage): counted by the worker's metrics once it commits. */
  spent?: LedgerRow[];
}
