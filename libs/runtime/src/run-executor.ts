import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import { isDependencyUnavailable } from '#libs/errors';
import { EventOutbox, EventPublisher, type OutboxBatch } from '#libs/events';
import { InputsService } from '#libs/inputs';
import { ModelError, type ModelMessage, ModelRegistry } from '#libs/models';
import { RunSignals, SessionDispatcher } from '#libs/queue';
import { type ItemEntity, type Lease, type PublicError, TurnsService } from '#libs/turns';
import { FencingStats } from './fencing-stats.js';
import { LeaseKeeper } from './lease-keeper.js';
import { LiveEvents } from './live-events.js';
import type { RunControl } from './run-control.js';
import { LeaseLostError, ShuttingDownError, TurnCancelledError } from './run-errors.js';
import { planNextStep } from './step-plan.js';
import { assistantItem, type HeldTurn, type Outcome, type RunOutput, TurnTransitions, turnEvents } from '#libs/lifecycle';

const CONTEXT_ITEMS = 50;
const SETTLE_RETRY_MAX_MS = 2_000;

/**
 * Executes a held turn step by step: model calls streamed as live deltas, the assistant item made
 * durable with its first text, a waiting steer taken at the next safe boundary (a yield into the
 * next run), and the outcome committed through the lease. What stops a run decides how it ends:
 * a cancel settles it cancelled, a shutdown releases it to another worker, a lost lease stops it
 * without another write, a model error fails it.
 */
@Injectable()
export class RunExecutor {
  private readonly logger = new Logger(RunExecutor.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly transitions: TurnTransitions,
    private readonly turns: TurnsService,
    private readonly inputs: InputsService,
    private readonly models: ModelRegistry,
    private readonly outbox: EventOutbox,
    private readonly publisher: EventPublisher,
    private readonly dispatcher: SessionDispatcher,
    private readonly signals: RunSignals,
    private readonly stats: FencingStats,
    private readonly config: AppConfig,
  ) {}

  async execute(held: HeldTurn, control: RunControl, leaseSentAt: number): Promise<void> {
    const sessionId = held.turn.sessionId;
    let lease: Lease = held.lease;
    let outputIndex = held.outputIndex;
    let output: RunOutput = { item: null, outputIndex, text: '', lostDeltas: false };
    let steerAnnounced = false;
    const keeper = new LeaseKeeper(lease, leaseSentAt, {
      leaseMs: this.config.runLeaseMs,
      heartbeatMs: this.config.runHeartbeatMs,
      abort: control.abort,
      // The heartbeat also checkpoints the shown text, and reads the durable state: the fallback
      // when a cancel or steer signal is lost.
      // Only this run's own item is its checkpoint (never the item of the run it yielded from).
      renew: (current) =>
        this.turns.renewLease(
          current,
          this.config.runLeaseMs,
          output.item?.runId === current.runId ? { item_id: output.item.id, output_index: output.outputIndex, text: output.text } : null,
        ),
      onRenewed: () => {
        void this.inputs
          .hasPendingSteer(sessionId, held.lastInputSeq)
          .then((pending) => (steerAnnounced ||= pending))
          .catch(() => undefined);
      },
    });
    const live = new LiveEvents(this.publisher, sessionId, keeper, () => (this.stats.fencedPublishes += 1));
    const publish = async (batch: OutboxBatch): Promise<void> => {
      await this.outbox.flush(sessionId, batch);
      const last = batch.rows.at(-1)?.seq;
      if (last !== undefined) live.afterSeq = Math.max(live.afterSeq, last);
    };
    const stopSteerWatch = await this.signals.onSteer(sessionId, () => (steerAnnounced = true)).catch(() => () => undefined);
    keeper.start();
    try {
      await publish(held.batch);
      // A turn taken over while it was being cancelled only needs its cancellation finished.
      if (held.turn.cancellationPending) throw new TurnCancelledError();
      const plan = planNextStep(held.steps);
      let storedAnswer = plan.action === 'settle' ? plan.text : null;
      for (;;) {
        output = { item: null, outputIndex, text: storedAnswer ?? '', lostDeltas: false };
        let yielding = false;
        if (storedAnswer === null) {
          const { provider, model } = this.models.resolve(held.run.model);
          const context = await this.turns.recentItems(this.dataSource.manager, sessionId, CONTEXT_ITEMS);
          for await (const event of provider.stream({
            model,
            instructions: held.config.instructions,
            messages: context.filter((item) => item.status !== 'in_progress').map(toModelMessage),
            signal: control.abort.signal,
          })) {
            keeper.assertHeld();
            // The assistant item is announced live with its first text (a run that shows nothing
            // leaves no item behind) and written when the run settles, yields or is released;
            // heartbeats checkpoint its text, so a takeover keeps what clients saw.
            let item = output.item;
            if (!item) {
              item = assistantItem(newId(), held.turn, lease.runId, new Date());
              output.item = item;
              live.push(turnEvents.item('added', item, outputIndex), turnEvents.contentPart('added', item, outputIndex, 0, { type: 'output_text', text: '' }));
            }
            output.text += event.delta;
            live.push(turnEvents.textDelta(item, outputIndex, 0, event.delta));
            if (steerAnnounced) {
              steerAnnounced = false;
              if (await this.inputs.hasPendingSteer(sessionId, held.lastInputSeq)) {
                yielding = true;
                break;
              }
            }
          }
          await live.drain();
          keeper.assertHeld();
          output.lostDeltas = live.lost;
        }
        storedAnswer = null;
        if (!yielding) {
          await this.settle(held, lease, output, { status: 'completed' }, publish);
          return;
        }
        keeper.pause();
        const nextRunId = newId();
        // Cancels aimed at the next run are heard from before it exists.
        await control.listen(this.signals, nextRunId).catch(() => undefined);
        const sentAt = LeaseKeeper.now();
        const next = await this.transitions.yieldToSteers(held, lease, output, nextRunId);
        if (next === 'cancelled') {
          await this.settle(held, lease, output, { status: 'cancelled' }, publish);
          return;
        }
        if (!next || !next.lease) {
          this.fenced(lease, 'yield');
          return;
        }
        lease = next.lease;
        held.run = next.run;
        outputIndex = next.outputIndex;
        output = { item: null, outputIndex, text: '', lostDeltas: false };
        keeper.switchTo(lease, sentAt);
        live.resetLoss();
        await publish(next.batch);
      }
    } catch (error) {
      await live.drain().catch(() => undefined);
      output.lostDeltas = live.lost;
      const reason: unknown = control.abort.signal.aborted ? control.abort.signal.reason : error;
      if (reason instanceof LeaseLostError || error instanceof LeaseLostError) {
        this.fenced(lease, 'run');
        return;
      }
      if (reason instanceof ShuttingDownError) {
        await this.release(held, lease, output, publish);
        return;
      }
      if (reason instanceof TurnCancelledError) {
        await this.settle(held, lease, output, { status: 'cancelled' }, publish);
        return;
      }
      if (!(error instanceof ModelError)) this.logger.error(`run ${lease.runId} failed`, error instanceof Error ? error.stack : String(error));
      const publicError: PublicError =
        error instanceof ModelError ? { code: error.code, message: error.message } : { code: 'run_failed', message: 'The run failed unexpectedly' };
      await this.settle(held, lease, output, { status: 'failed', error: publicError }, publish);
    } finally {
      keeper.stop();
      stopSteerWatch();
    }
  }

  /**
   * Commits the outcome, retrying while the database is unreachable: the lease (on the database
   * clock) bounds the retries, and once it is gone recovery continues the turn elsewhere.
   */
  private async settle(held: HeldTurn, lease: Lease, output: RunOutput, outcome: Outcome, publish: (batch: OutboxBatch) => Promise<void>): Promise<void> {
    const settled = await this.retrying(lease, () => this.transitions.settle(held, lease, output, outcome));
    if (settled === undefined) return;
    if (!settled) {
      this.fenced(lease, 'settle');
      return;
    }
    await publish(settled.batch);
  }

  /** Gives the run back at this boundary; another worker continues the turn at once. */
  private async release(held: HeldTurn, lease: Lease, output: RunOutput, publish: (batch: OutboxBatch) => Promise<void>): Promise<void> {
    const successor = await this.retrying(lease, () => this.transitions.release(held, lease, output));
    if (!successor) return;
    await publish(successor.batch);
    this.logger.log(`run ${lease.runId} released at shutdown; run ${successor.run.id} continues the turn`);
    await this.dispatcher.nudgeTakeover(held.turn.sessionId, successor.run.id).catch(() => undefined);
  }

  /** Undefined when the database stayed unreachable for longer than the lease. */
  private async retrying<T>(lease: Lease, write: () => Promise<T>): Promise<T | undefined> {
    const deadline = Date.now() + this.config.runLeaseMs;
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await write();
      } catch (error) {
        if (!isDependencyUnavailable(error) || Date.now() > deadline) {
          this.logger.error(`run ${lease.runId} could not be settled; recovery will continue its turn: ${String(error)}`);
          return undefined;
        }
        await sleep(Math.min(100 * 2 ** attempt, SETTLE_RETRY_MAX_MS));
      }
    }
  }

  private fenced(lease: Lease, what: string): void {
    this.stats.fencedWrites += 1;
    this.logger.warn(`run ${lease.runId} stopped at ${what}: its lease is gone (epoch ${lease.epoch}); nothing more is written`);
  }
}

function toModelMessage(item: ItemEntity): ModelMessage {
  const text = item.content
    .filter((part) => typeof part.text === 'string')
    .map((part) => part.text)
    .join('\n');
  return { role: item.role === 'assistant' ? 'assistant' : 'user', text };
}
