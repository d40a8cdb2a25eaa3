import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import { EventPublisher, type OutgoingEvent } from '#libs/events';
import { RunSignals } from '#libs/queue';
import { type InputEntity, InputsService } from '#libs/inputs';
import { ModelError, type ModelMessage, ModelRegistry } from '#libs/models';
import { SessionsService } from '#libs/sessions';
import { type ItemEntity, type NewItem, type PublicError, type RunEntity, toCurrentTurn, type TurnEntity, TurnsService } from '#libs/turns';
import { EventBatcher } from './event-batcher.js';
import { turnEvents } from './turn-events.js';
import { WORKER_ID } from './worker-identity.js';

const CONTEXT_ITEMS = 50;
const ACTIVE_STATUSES = new Set(['queued', 'in_progress', 'requires_action']);

interface Claim {
  input: InputEntity;
  turn: TurnEntity;
  run: RunEntity;
  userItems: ItemEntity[];
}

class LeaseLostError extends Error {}
class TurnCancelledError extends Error {}

/** The abort switch of one turn and the cancel subscriptions of its runs. */
class RunControl {
  readonly abort = new AbortController();
  private readonly stops: (() => void)[] = [];

  async listen(signals: RunSignals, runId: string): Promise<void> {
    this.stops.push(await signals.onCancel(runId, () => this.abort.abort(new TurnCancelledError())));
  }

  stopListening(): void {
    for (const stop of this.stops.splice(0)) stop();
  }
}

/** One run's place in its turn and the text it has shown so far. */
interface Segment {
  turn: TurnEntity;
  run: RunEntity;
  assistant: ItemEntity;
  outputIndex: number;
  text: string;
}

type Outcome = { status: 'completed' } | { status: 'cancelled' } | { status: 'failed'; error: PublicError };

/**
 * Drives one session: claims the queue head under the session lock, runs it to a terminal state,
 * then takes the next input, until the queue is empty or blocked. Only the lease owner writes a
 * run's output; done and terminal events are published after the commit that makes them true.
 */
@Injectable()
export class SessionDriver {
  private readonly logger = new Logger(SessionDriver.name);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsService,
    private readonly inputs: InputsService,
    private readonly turns: TurnsService,
    private readonly models: ModelRegistry,
    private readonly publisher: EventPublisher,
    private readonly config: AppConfig,
    private readonly signals: RunSignals,
  ) {}

  async drive(sessionId: string): Promise<number> {
    let turnsRun = 0;
    // The cheap unlocked look first: most nudges after a turn find the queue empty. An input that
    // lands right after it comes with its own nudge, which the queue keeps for after this job.
    while (await this.inputs.hasPending(sessionId)) {
      // Listening for a cancel starts before the claim commits, so none can slip in between.
      const runId = newId();
      const control = new RunControl();
      await control.listen(this.signals, runId);
      try {
        const claim = await this.claim(sessionId, runId);
        if (!claim) break;
        const events = new EventBatcher(this.publisher, sessionId, this.logger);
        this.publishClaim(events, claim);
        await this.execute(sessionId, claim, events, control);
        turnsRun += 1;
      } finally {
        control.stopListening();
      }
    }
    return turnsRun;
  }

  private async claim(sessionId: string, runId: string): Promise<Claim | null> {
    return this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      if (!session || session.queuePaused) return null;
      if (session.currentTurn && ACTIVE_STATUSES.has(session.currentTurn.status)) return null;
      const head = await this.inputs.head(manager, sessionId);
      if (!head) return null;
      // A steer head takes the whole contiguous steer prefix as one batch; a follow-up runs alone.
      const batch = head.mode === 'steer' ? await this.inputs.steerPrefix(manager, sessionId) : [head];
      const input = batch[0] ?? head;

      const now = new Date();
      const turnId = newId();
      const newItems = userItemsOf(batch, sessionId, now);
      const { turnSeq, firstItemSeq } = await this.sessions.recordTurnStarted(
        manager,
        sessionId,
        { id: turnId, status: 'in_progress', current_run_id: runId, result_run_id: null, waitpoint: null },
        batch.length,
        newItems.length,
        now,
      );
      const { turn, run } = await this.turns.startTurn(manager, {
        turnId,
        runId,
        sessionId,
        seq: turnSeq,
        agentId: input.config.agent_id,
        model: input.config.model,
        inputIds: batch.map((i) => i.id),
        config: input.config,
        leaseOwner: WORKER_ID,
        leaseMs: this.config.runLeaseMs,
        at: now,
      });
      await this.inputs.markConsumed(
        manager,
        batch.map((i) => i.id),
        turn.id,
        run.id,
        now,
      );
      const userItems = await this.turns.insertItems(manager, firstItemSeq, newItems.map((item) => ({ ...item, turnId: turn.id, runId: run.id })));
      return { input, turn, run, userItems };
    });
  }

  private publishClaim(events: EventBatcher, claim: Claim): void {
    // The documented order: run created, turn created, turn in progress, then the turn's items.
    events.push(turnEvents.run('created', claim.run), turnEvents.turn('created', claim.turn), turnEvents.turn('in_progress', claim.turn));
    claim.userItems.forEach((item, index) => events.push(turnEvents.item('added', item, index), turnEvents.item('done', item, index)));
  }

  /**
   * Runs the turn's model calls. At each safe boundary (after a streamed delta) a waiting steer
   * makes the current run yield: its text is kept, and the next run of the same turn continues
   * with the steer batch. Cancellation and lease loss abort the call in flight.
   */
  private async execute(sessionId: string, claim: Claim, events: EventBatcher, control: RunControl): Promise<void> {
    const { turn } = claim;
    const abort = control.abort;
    let run = claim.run;
    let outputIndex = claim.userItems.length;
    let steerAnnounced = false;
    // While a yield switches runs, the heartbeat must not renew (and then give up) the old one.
    let switching = false;
    const stopSteerWatch = await this.signals.onSteer(sessionId, () => (steerAnnounced = true));
    // The heartbeat also reads the durable state: the fallback when a signal is lost.
    const heartbeat = setInterval(() => {
      if (switching) return;
      const beating = run;
      this.turns
        .renewLease(beating.id, WORKER_ID, this.config.runLeaseMs)
        .then(async ({ held, cancelRequested }) => {
          if (switching || beating !== run) return;
          if (!held) abort.abort(new LeaseLostError(`lease of run ${beating.id} lost`));
          else if (cancelRequested) abort.abort(new TurnCancelledError());
          else if (await this.inputs.hasPendingSteer(sessionId, claim.input.priority)) steerAnnounced = true;
        })
        .catch((error: unknown) => this.logger.warn(`heartbeat of run ${beating.id} failed: ${String(error)}`));
    }, this.config.runHeartbeatMs);

    try {
      for (;;) {
        const assistant = assistantItem(sessionId, turn.id, run.id);
        let text = '';
        // What this run has produced so far, as finish and yieldTo need it.
        const segment = (): Segment => ({ turn, run, assistant, outputIndex, text });
        try {
          const { provider, model } = this.models.resolve(run.model);
          const context = await this.turns.recentItems(this.dataSource.manager, sessionId, CONTEXT_ITEMS);
          let yielding = false;
          for await (const event of provider.stream({
            model,
            instructions: claim.input.config.instructions,
            messages: context.map(toModelMessage),
            signal: abort.signal,
          })) {
            // The assistant item is announced with its first text, so a run that shows nothing
            // leaves no item behind that would never be done.
            if (text.length === 0) {
              events.push(turnEvents.item('added', assistant, outputIndex), turnEvents.contentPart('added', assistant, outputIndex, 0, { type: 'output_text', text: '' }));
            }
            text += event.delta;
            events.push(turnEvents.textDelta(assistant, outputIndex, 0, event.delta));
            if (steerAnnounced) {
              steerAnnounced = false;
              if (await this.inputs.hasPendingSteer(sessionId, claim.input.priority)) {
                yielding = true;
                break;
              }
            }
          }
          await events.drain();
          if (!yielding) {
            await this.finish(sessionId, segment(), { status: 'completed' });
            return;
          }
          switching = true;
          const next = await this.yieldTo(sessionId, segment(), control, claim.input.priority);
          if (next === 'cancelled') {
            switching = false;
            await this.finish(sessionId, segment(), { status: 'cancelled' });
            return;
          }
          if (!next) return;
          outputIndex = next.outputIndex;
          run = next.run;
          switching = false;
        } catch (error) {
          switching = false;
          if (abort.signal.reason instanceof LeaseLostError || error instanceof LeaseLostError) {
            this.logger.warn(`run ${run.id} stopped: its lease is held elsewhere`);
            return;
          }
          await events.drain();
          if (abort.signal.reason instanceof TurnCancelledError) {
            await this.finish(sessionId, segment(), { status: 'cancelled' });
            return;
          }
          const publicError: PublicError =
            error instanceof ModelError ? { code: error.code, message: error.message } : { code: 'run_failed', message: 'The run failed unexpectedly' };
          if (!(error instanceof ModelError)) this.logger.error(`run ${run.id} failed`, error instanceof Error ? error.stack : String(error));
          await this.finish(sessionId, segment(), { status: 'failed', error: publicError });
          return;
        }
      }
    } finally {
      clearInterval(heartbeat);
      stopSteerWatch();
    }
  }

  /**
   * Yields `run` and starts the next run of the same turn with the waiting steer batch, in one
   * transaction: the shown text becomes an incomplete commentary item, the steer messages become
   * user items. Returns null when the run is no longer ours.
   */
  private async yieldTo(
    sessionId: string,
    { turn, run, assistant, outputIndex, text }: Segment,
    control: RunControl,
    minPriority: number,
  ): Promise<{ run: RunEntity; outputIndex: number } | 'cancelled' | null> {
    const nextRunId = newId();
    // Cancels aimed at the next run are heard from before it exists.
    await control.listen(this.signals, nextRunId);
    const step = await this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      // A turn being cancelled takes no more input: it ends, and its steers wait for the next turn.
      if ((await this.turns.findTurn(manager, turn.id))?.cancellationPending) return 'cancelled' as const;
      const batch = await this.inputs.steerPrefix(manager, sessionId, minPriority);
      const now = new Date();
      const next = await this.turns.yieldRun(manager, {
        runId: run.id,
        owner: WORKER_ID,
        nextRunId,
        turnId: turn.id,
        sessionId,
        inputIds: batch.map((i) => i.id),
        leaseMs: this.config.runLeaseMs,
        at: now,
      });
      if (!next) return null;
      const partial = text.length > 0 ? 1 : 0;
      const newItems = userItemsOf(batch, sessionId, now);
      const firstSeq = await this.sessions.recordRunStarted(
        manager,
        sessionId,
        toCurrentTurn({ ...turn, currentRunId: next.id }),
        batch.length,
        partial + newItems.length,
        now,
      );
      await this.inputs.markConsumed(
        manager,
        batch.map((i) => i.id),
        turn.id,
        next.id,
        now,
      );
      const items = await this.turns.insertItems(manager, firstSeq, [
        ...(partial ? [{ ...assistant, status: 'incomplete' as const, content: [{ type: 'output_text', text }], phase: 'commentary', createdAt: now }] : []),
        ...newItems.map((item) => ({ ...item, turnId: turn.id, runId: next.id })),
      ]);
      const yielded: RunEntity = { ...run, status: 'yielded', completedAt: now, leaseOwner: null, leaseExpiresAt: null };
      return { next, yielded, items };
    });
    if (step === 'cancelled') return 'cancelled';
    if (!step) {
      this.logger.warn(`run ${run.id} was settled elsewhere; its steer is left for the next claim`);
      return null;
    }
    const out: OutgoingEvent[] = [];
    let index = outputIndex;
    const partialItem = step.items[0]?.role === 'assistant' ? step.items[0] : null;
    if (partialItem) {
      out.push(
        turnEvents.textDone(partialItem, index, 0, text),
        turnEvents.contentPart('done', partialItem, index, 0, { type: 'output_text', text }),
        turnEvents.item('done', partialItem, index),
      );
      index += 1;
    }
    out.push(turnEvents.run('yielded', step.yielded), turnEvents.run('created', step.next));
    for (const item of partialItem ? step.items.slice(1) : step.items) {
      out.push(turnEvents.item('added', item, index), turnEvents.item('done', item, index));
      index += 1;
    }
    await this.publishCommitted(sessionId, out);
    return { run: step.next, outputIndex: index };
  }

  /**
   * Commits the outcome (output item, run, turn) in one transaction, then announces it. Text
   * already shown is kept: as the final answer when completed, as an incomplete item otherwise.
   */
  private async finish(sessionId: string, { turn, run, assistant, outputIndex, text }: Segment, outcome: Outcome): Promise<void> {
    const completed = outcome.status === 'completed';
    const error = outcome.status === 'failed' ? outcome.error : null;
    const part = { type: 'output_text', text };
    const settled = await this.dataSource.transaction(async (manager) => {
      // The session lock first, like every other state change of the session (no lock-order deadlocks).
      await this.sessions.lock(manager, sessionId);
      const now = new Date();
      const settledTurn = await this.turns.settle(manager, {
        runId: run.id,
        owner: WORKER_ID,
        runStatus: outcome.status,
        turn,
        turnStatus: outcome.status,
        resultRunId: completed ? run.id : null,
        error,
        at: now,
      });
      if (!settledTurn) return null;
      const keepOutput = completed || text.length > 0;
      const seq = await this.sessions.recordTurnUpdated(manager, sessionId, toCurrentTurn(settledTurn), keepOutput ? 1 : 0, now);
      let item: ItemEntity | null = null;
      if (keepOutput) {
        [item] = await this.turns.insertItems(manager, seq, [
          { ...assistant, status: completed ? 'completed' : 'incomplete', content: [part], phase: completed ? 'final_answer' : 'commentary', createdAt: now },
        ]);
      }
      const settledRun: RunEntity = { ...run, status: outcome.status, completedAt: now, error, leaseOwner: null, leaseExpiresAt: null };
      return { item: item ?? null, turn: settledTurn, run: settledRun };
    });
    if (!settled) {
      this.logger.warn(`run ${run.id} was settled elsewhere; its outcome is discarded`);
      return;
    }
    const events: OutgoingEvent[] = [];
    if (settled.item) {
      events.push(
        turnEvents.textDone(settled.item, outputIndex, 0, text),
        turnEvents.contentPart('done', settled.item, outputIndex, 0, part),
        turnEvents.item('done', settled.item, outputIndex),
      );
    }
    events.push(turnEvents.run(outcome.status, settled.run), turnEvents.turn(outcome.status, settled.turn));
    await this.publishCommitted(sessionId, events);
  }

  /**
   * Announces what is already committed. A Redis failure here must not change the run's fate:
   * the durable state is right, and clients re-read it (items, turn) when the stream falls short.
   */
  private async publishCommitted(sessionId: string, events: OutgoingEvent[]): Promise<void> {
    await this.publisher.publish(sessionId, events).catch((error: unknown) => this.logger.error(`events for ${sessionId} not published: ${String(error)}`));
  }
}

function assistantItem(sessionId: string, turnId: string, runId: string): ItemEntity {
  return {
    id: newId(),
    sessionId,
    turnId,
    runId,
    inputId: null,
    seq: '0',
    type: 'message',
    role: 'assistant',
    status: 'in_progress',
    content: [],
    phase: null,
    createdAt: new Date(),
  };
}

/** The user items a batch of inputs becomes, message by message, in received order (turn and run filled in by the caller). */
function userItemsOf(batch: InputEntity[], sessionId: string, at: Date): Omit<NewItem, 'turnId' | 'runId'>[] {
  return batch.flatMap((input) =>
    input.messages.map((message) => ({
      sessionId,
      inputId: input.id,
      type: 'message',
      role: 'user',
      status: 'completed' as const,
      content: message.content,
      phase: null,
      createdAt: at,
    })),
  );
}

function toModelMessage(item: ItemEntity): ModelMessage {
  const text = item.content
    .filter((part) => typeof part.text === 'string')
    .map((part) => part.text)
    .join('\n');
  return { role: item.role === 'assistant' ? 'assistant' : 'user', text };
}
