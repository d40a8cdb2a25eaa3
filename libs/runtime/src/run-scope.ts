import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DEFAULT_AGENT_LIMITS } from '#libs/agents';
import { AppConfig } from '#libs/config';
import { EventPublisher, type OutboxBatch } from '#libs/events';
import { AfterCommit, type HeldTurn, InputsRepository, type Lease, type Nudge, runCheckpoint, type RunOutput, RunsRepository, type TurnContext } from '#libs/engine';
import { RunSignals } from '#libs/queue';
import { FencingStats } from './fencing-stats.js';
import { LeaseKeeper } from './lease-keeper.js';
import { LiveEvents } from './live-events.js';
import type { RunControl } from './run-control.js';
import type { RunTrace } from './run-spans.js';
import { TurnLimitError } from './run-errors.js';

/** The state of one held run while the executor works through its steps (its lease and shown text change as it goes). */
export interface RunState {
  held: HeldTurn;
  lease: Lease;
  /** The output index the turn's next item gets. */
  outputIndex: number;
  /** What the current model call has shown (its item is written when the step commits). */
  output: RunOutput;
  keeper: LeaseKeeper;
  live: LiveEvents;
  /** The run's spans; undefined when tracing is off (every hook tests it first). */
  trace: RunTrace | undefined;
  /** What the run knows of its model context between calls (ContextManager). */
  context: ContextTracking;
  /** A steer may be waiting: set by the steer signal and the heartbeat, cleared by steerWaiting. */
  steerAnnounced: boolean;
  /**
   * A step boundary (a step committed, or steers joined): the turn's next item gets `outputIndex`.
   * Nothing is shown between steps: a steer joining at this boundary numbers its items from here.
   */
  boundaryAt(outputIndex: number): void;
  /** Publishes a committed batch (and sends its nudges); live events follow it. */
  publish(batch: OutboxBatch, nudges?: readonly Nudge[]): Promise<void>;
  /** Mid-stream: whether a steer announced since the last look (signal or heartbeat) is waiting and may join now. */
  steerWaiting(): Promise<boolean>;
  /** At a step boundary: whether a steer is waiting and may join now, looked up whether or not one was announced. */
  steerPending(): Promise<boolean>;
}

export interface ContextTracking {
  /** The instructions and tools, counted once per run. */
  baseTokens: number | null;
  /** The provider counted this many more prompt tokens than estimated for the run's last call. */
  driftTokens: number;
  /** The context of the run's last model call: what the turn shows when it settles. */
  current: TurnContext | null;
  /** The summariser failed in this run: no more automatic compaction unless the context is past the window. */
  summariserFailed: boolean;
}

/** Nothing shown yet, at this output index. */
export function emptyOutput(outputIndex: number): RunOutput {
  return { item: null, outputIndex, text: '', reasoning: '', lostDeltas: false };
}

/**
 * Opens a held run for execution: its lease keeper (heartbeats that checkpoint the shown text and
 * read the durable cancel and steer state, the fallback when a signal is lost), its live-event
 * publisher fenced by the lease, the steer watch, and the turn's execution-time limit.
 */
@Injectable()
export class RunScopes {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly runs: RunsRepository,
    private readonly inputs: InputsRepository,
    private readonly afterCommit: AfterCommit,
    private readonly publisher: EventPublisher,
    private readonly signals: RunSignals,
    private readonly stats: FencingStats,
    private readonly config: AppConfig,
  ) {}

  /** The run's state, started; `close` stops its keeper and watches. */
  async open(held: HeldTurn, control: RunControl, leaseSentAt: number): Promise<{ state: RunState; close: () => void }> {
    const sessionId = held.turn.sessionId;
    const state = {
      held,
      lease: held.lease,
      outputIndex: held.outputIndex,
      output: emptyOutput(held.outputIndex),
      steerAnnounced: false,
      trace: undefined,
      context: { baseTokens: null, driftTokens: 0, current: null, summariserFailed: false },
    } as RunState;
    state.keeper = new LeaseKeeper(state.lease, leaseSentAt, {
      leaseMs: this.config.runLeaseMs,
      heartbeatMs: this.config.runHeartbeatMs,
      abort: control.abort,
      // Only this run's own item is its checkpoint (never the item of the run it yielded from).
      // The renewal also says whether a budget covers the session now: one created mid-turn applies from the next call.
      renew: async (current) => {
        const renewed = await this.runs.renewLease(current, this.config.runLeaseMs, state.output.item?.runId === current.runId ? runCheckpoint(state.output.item, state.output) : null);
        if (renewed.held) held.budgeted = renewed.budgeted;
        return renewed;
      },
      onRenewed: () => {
        void this.inputs
          .hasPendingSteer(sessionId, held.lastInputSeq)
          .then((pending) => (state.steerAnnounced ||= pending))
          .catch(() => undefined);
      },
    });
    state.live = new LiveEvents(this.publisher, sessionId, state.keeper, () => (this.stats.fencedPublishes += 1));
    state.publish = async (batch, nudges = []) => {
      await this.afterCommit.send({ batch, nudges });
      const last = batch.rows.at(-1)?.seq;
      if (last !== undefined) state.live.afterSeq = Math.max(state.live.afterSeq, last);
    };
    state.boundaryAt = (outputIndex) => {
      state.outputIndex = outputIndex;
      state.output = emptyOutput(outputIndex);
    };
    state.steerWaiting = async () => {
      if (!state.steerAnnounced) return false;
      return state.steerPending();
    };
    state.steerPending = async () => {
      state.steerAnnounced = false;
      return this.inputs.hasPendingSteer(sessionId, held.lastInputSeq);
    };
    const stopSteerWatch = await this.signals.onSteer(sessionId, () => (state.steerAnnounced = true)).catch(() => () => undefined);
    state.keeper.start();
    return {
      state,
      close: () => {
        state.keeper.stop();
        stopSteerWatch();
      },
    };
  }

  /**
   * The turn's execution-time limit, counting only time spent running (waits at waitpoints and in
   * the queue excluded): what earlier runs of the turn used is subtracted. Returns its stop.
   */
  async startTurnTimer(held: HeldTurn, control: RunControl): Promise<() => void> {
    const limitMs = (held.config.agent?.limits.turn_timeout_s ?? DEFAULT_AGENT_LIMITS.turn_timeout_s) * 1000;
    const usedMs = held.fresh ? 0 : await this.runs.executedMs(this.dataSource.manager, held.turn.id);
    const error = new TurnLimitError('turn_timeout', `The turn ran longer than its limit of ${limitMs / 1000} s`);
    if (usedMs >= limitMs) throw error;
    const timer = setTimeout(() => control.abort.abort(error), limitMs - usedMs);
    timer.unref();
    return () => clearTimeout(timer);
  }
}
