import type { OutboxBatch } from '#libs/events';
import type { StoredTraceContext } from '#libs/telemetry';
import type { LedgerRow } from '#libs/usage';
import type { Committed } from '../transaction/after-commit.js';
import type { FrozenInputConfig, InputEntity } from '../tables/input.entity.js';
import type { CommittedStep, ItemEntity, PublicError, RunEntity, TurnContext, TurnEntity, Usage } from '../tables/turn.entities.js';
import type { Lease } from './lease.js';

/** A turn a worker now holds a lease on: freshly claimed from the queue, or taken over. */
export interface HeldTurn {
  turn: TurnEntity;
  run: RunEntity;
  lease: Lease;
  config: FrozenInputConfig;
  /** Steers received after this input sequence number may join the turn at a safe boundary. */
  lastInputSeq: string;
  /** The output index the turn's next item gets. */
  outputIndex: number;
  /** Committed steps a takeover must not repeat. */
  steps: CommittedStep[];
  /** Tools the user trusted for the session (`approve_session`), as of the claim. */
  trustedTools: string[];
  /** Claimed from the queue just now: the turn has made no calls and run for no time yet. */
  fresh: boolean;
  /** User messages this claim wrote without attachments (files bind only when a message is written): no file lookup for them. */
  filelessMessageIds: string[];
  /**
   * A budget covers the session (read by the claim, refreshed with the lease's heartbeat): only
   * then is each model and tool call checked against the budgets first (and holds a reservation).
   */
  budgeted: boolean;
  batch: OutboxBatch;
  /**
   * The inputs this claim consumed with the contexts stored with them (tracing on only, and only
   * for a batch of several: the first one's is the run's own, `config.trace`): the run's span
   * links to the others. Absent while tracing is off.
   */
  inputTraces?: InputTrace[];
}

/** An input a run consumed and the trace context stored with it (its request's `accept_input`). */
export interface InputTrace {
  inputId: string;
  trace: StoredTraceContext | undefined;
}

/** The stored contexts of consumed inputs (bounded by the batch: a claim's or a yield's, MAX_STEER_BATCH at most). */
export function inputTracesOf(inputs: readonly Pick<InputEntity, 'id' | 'config'>[]): InputTrace[] {
  return inputs.map((input) => ({ inputId: input.id, trace: input.config.trace }));
}

/**
 * What a run has shown so far: its assistant item (announced live with its first text, not yet
 * written) and the text in it. The item is written when the run settles, yields or is released.
 */
export interface RunOutput {
  item: ItemEntity | null;
  outputIndex: number;
  text: string;
  /** The call's reasoning once complete and checkpointed ('' until then, or when the model streams none). */
  reasoning: string;
  /** Deltas were lost on the way to Redis since the last durable write: announce a resync. */
  lostDeltas: boolean;
  /**
   * A model call that ended without a step of its own (cut by a steer, stopped by a cancel, failed):
   * still a call, so the yield or the settle that ends the run writes its ledger row.
   */
  cutCall?: { model: string; usage: Usage | null; wallMs: number };
}

/**
 * How a run ends; a completion that made its final model call carries it, to be recorded as a step
 * (with the exact request it sent, when the deployment audits them).
 * `withoutAnswer`: a turn that completes with no assistant message (a manual compaction). `context`:
 * the context of the run's last model call, which the turn keeps.
 */
export type Outcome = (
  | { status: 'completed'; modelCall?: { model: string; usage: Usage | null; finishReason?: string | null; requestJson?: string | null; wallMs?: number }; withoutAnswer?: boolean }
  | { status: 'cancelled' }
  | { status: 'failed'; error: PublicError }
) & { context?: TurnContext | null };

/** A settled turn; its nudges are empty when the settling worker goes on driving the session itself. */
export interface Settled extends Committed {
  turn: TurnEntity;
  status: Outcome['status'];
  /**
   * The session's pending inputs when the settle committed (read under the session lock, which
   * inputs wait for): whether its driver has more to claim, without asking again. Inputs accepted
   * after the commit come with their own nudge.
   */
  pendingInputs: number;
  /** The ledger rows the settle wrote (the last model call): counted by the worker's metrics once it commits. */
  spent?: LedgerRow[];
}

/** A turn its worker settled: published and nudged by the settle itself (SessionTransactions). */
export type SettledTurn = Omit<Settled, keyof Committed>;

/** A turn whose run an operator took over (seize), to be failed (failSeized). */
export interface Seized {
  turn: TurnEntity;
  run: RunEntity;
  lease: Lease;
  /** Who held the run before (a worker's id; null: it waited for one). */
  previousOwner: string | null;
}

/** The next run of a turn: leased to the same worker (a yield to steers), or waiting for any worker to take it over (its nudge). */
export interface Successor extends Committed {
  run: RunEntity;
  lease: Lease | null;
  outputIndex: number;
  /** The ledger rows the yield wrote (a model call a steer cut): counted by the worker's metrics once it commits. */
  spent?: LedgerRow[];
  /** A yield's steers with their stored contexts (tracing on only): the next run's span links to them. */
  inputTraces?: InputTrace[];
}

/** A run whose lease expired, interrupted: the run that continues its turn (`awaiting`), or null when the turn ended. */
export interface Interrupted extends Committed {
  awaiting: string | null;
}
