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
import { type ItemEntity, type PublicError, type RunEntity, toCurrentTurn, type TurnEntity, TurnsService } from '#libs/turns';
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
      const abort = new AbortController();
      const stopListening = await this.signals.onCancel(runId, () => abort.abort(new TurnCancelledError()));
      try {
        const claim = await this.claim(sessionId, runId);
        if (!claim) break;
        const events = new EventBatcher(this.publisher, sessionId);
        this.publishClaim(events, claim);
        await this.execute(sessionId, claim, events, abort);
        turnsRun += 1;
      } finally {
        stopListening();
      }
    }
    return turnsRun;
  }

  private async claim(sessionId: string, runId: string): Promise<Claim | null> {
    return this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      if (!session || session.queuePaused) return null;
      if (session.currentTurn && ACTIVE_STATUSES.has(session.currentTurn.status)) return null;
      const input = await this.inputs.head(manager, sessionId);
      if (!input) return null;

      const now = new Date();
      const turnId = newId();
      const { turnSeq, firstItemSeq } = await this.sessions.recordTurnStarted(
        manager,
        sessionId,
        { id: turnId, status: 'in_progress', current_run_id: runId, result_run_id: null, waitpoint: null },
        1,
        input.messages.length,
        now,
      );
      const { turn, run } = await this.turns.startTurn(manager, {
        turnId,
        runId,
        sessionId,
        seq: turnSeq,
        agentId: input.config.agent_id,
        model: input.config.model,
        inputIds: [input.id],
        config: input.config,
        leaseOwner: WORKER_ID,
        leaseMs: this.config.runLeaseMs,
        at: now,
      });
      await this.inputs.markConsumed(manager, [input.id], turn.id, run.id, now);
      const userItems = await this.turns.insertItems(
        manager,
        firstItemSeq,
        input.messages.map((message) => ({
          sessionId,
          turnId: turn.id,
          runId: run.id,
          inputId: input.id,
          type: 'message',
          role: 'user',
          status: 'completed' as const,
          content: message.content,
          phase: null,
          createdAt: now,
        })),
      );
      return { input, turn, run, userItems };
    });
  }

  private publishClaim(events: EventBatcher, claim: Claim): void {
    events.push(turnEvents.turn('created', claim.turn), turnEvents.run('created', claim.run), turnEvents.turn('in_progress', claim.turn));
    claim.userItems.forEach((item, index) => events.push(turnEvents.item('added', item, index), turnEvents.item('done', item, index)));
  }

  private async execute(sessionId: string, claim: Claim, events: EventBatcher, abort: AbortController): Promise<void> {
    const { run, turn } = claim;
    // The heartbeat also reads the durable cancel flag: the fallback when a cancel signal is lost.
    const heartbeat = setInterval(() => {
      this.turns
        .renewLease(run.id, WORKER_ID, this.config.runLeaseMs)
        .then(({ held, cancelRequested }) => {
          if (!held) abort.abort(new LeaseLostError(`lease of run ${run.id} lost`));
          else if (cancelRequested) abort.abort(new TurnCancelledError());
        })
        .catch((error: unknown) => this.logger.warn(`heartbeat of run ${run.id} failed: ${String(error)}`));
    }, this.config.runHeartbeatMs);

    const outputIndex = claim.userItems.length;
    const assistant: ItemEntity = {
      id: newId(),
      sessionId,
      turnId: turn.id,
      runId: run.id,
      inputId: null,
      seq: '0',
      type: 'message',
      role: 'assistant',
      status: 'in_progress',
      content: [],
      phase: null,
      createdAt: new Date(),
    };
    let text = '';
    try {
      events.push(turnEvents.item('added', assistant, outputIndex), turnEvents.contentPart('added', assistant, outputIndex, 0, { type: 'output_text', text: '' }));
      const { provider, model } = this.models.resolve(run.model);
      const context = await this.turns.recentItems(this.dataSource.manager, sessionId, CONTEXT_ITEMS);
      for await (const event of provider.stream({
        model,
        instructions: claim.input.config.instructions,
        messages: context.map(toModelMessage),
        signal: abort.signal,
      })) {
        text += event.delta;
        events.push(turnEvents.textDelta(assistant, outputIndex, 0, event.delta));
      }
      await events.drain();
      await this.finish(sessionId, claim, assistant, outputIndex, text, { status: 'completed' });
    } catch (error) {
      if (abort.signal.reason instanceof LeaseLostError || error instanceof LeaseLostError) {
        this.logger.warn(`run ${run.id} stopped: its lease is held elsewhere`);
        return;
      }
      if (abort.signal.reason instanceof TurnCancelledError) {
        await events.drain().catch(() => undefined);
        await this.finish(sessionId, claim, assistant, outputIndex, text, { status: 'cancelled' });
        return;
      }
      const publicError: PublicError =
        error instanceof ModelError ? { code: error.code, message: error.message } : { code: 'run_failed', message: 'The run failed unexpectedly' };
      if (!(error instanceof ModelError)) this.logger.error(`run ${run.id} failed`, error instanceof Error ? error.stack : String(error));
      await events.drain().catch(() => undefined);
      await this.finish(sessionId, claim, assistant, outputIndex, text, { status: 'failed', error: publicError });
    } finally {
      clearInterval(heartbeat);
    }
  }

  /**
   * Commits the outcome (output item, run, turn) in one transaction, then announces it. Text
   * already shown is kept: as the final answer when completed, as an incomplete item otherwise.
   */
  private async finish(sessionId: string, claim: Claim, assistant: ItemEntity, outputIndex: number, text: string, outcome: Outcome): Promise<void> {
    const { run, turn } = claim;
    const completed = outcome.status === 'completed';
    const error = outcome.status === 'failed' ? outcome.error : null;
    const part = { type: 'output_text', text };
    const settled = await this.dataSource.transaction(async (manager) => {
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
    await this.publisher.publish(sessionId, events);
  }
}

function toModelMessage(item: ItemEntity): ModelMessage {
  const text = item.content
    .filter((part) => typeof part.text === 'string')
    .map((part) => part.text)
    .join('\n');
  return { role: item.role === 'assistant' ? 'assistant' : 'user', text };
}
