import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import { DomainError } from '#libs/errors';
import { metrics } from '#libs/metrics';
import { EventOutbox, type OutboxBatch, type OutgoingEvent } from '#libs/events';
import { type FrozenInputConfig, type InputEntity, InputsRepository } from '#libs/inputs';
import { SessionsRepository } from '#libs/sessions';
import {
  ACTIVE_TURN_STATUSES,
  type CommittedStep,
  type ItemEntity,
  type Lease,
  type NewItem,
  type PublicError,
  type RunEntity,
  type StoredContentPart,
  toCurrentTurn,
  type TurnEntity,
  ItemsRepository, RunsRepository, StepsRepository, TurnsRepository,
  type Usage,
} from '#libs/turns';
import { AttachmentTransitions } from './attachment-transitions.js';
import { turnEvents } from './turn-events.js';

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
  batch: OutboxBatch;
}

/**
 * What a run has shown so far: its assistant item (announced live with its first text, not yet
 * written) and the text in it. The item is written when the run settles, yields or is released.
 */
export interface RunOutput {
  item: ItemEntity | null;
  outputIndex: number;
  text: string;
  /** Deltas were lost on the way to Redis since the last durable write: announce a resync. */
  lostDeltas: boolean;
}

/** How a run ends; a completion that made its final model call carries it, to be recorded as a step. */
export type Outcome = { status: 'completed'; modelCall?: { model: string; usage: Usage | null } } | { status: 'cancelled' } | { status: 'failed'; error: PublicError };

export interface Settled {
  turn: TurnEntity;
  status: Outcome['status'];
  batch: OutboxBatch;
}

/** A turn whose run an operator took over (seize), to be failed (failSeized). */
export interface Seized {
  turn: TurnEntity;
  run: RunEntity;
  lease: Lease;
  /** Who held the run before (a worker's id; null: it waited for one). */
  previousOwner: string | null;
}

export interface Successor {
  run: RunEntity;
  lease: Lease | null;
  outputIndex: number;
  batch: OutboxBatch;
}

const TAKEOVER_LIMIT_ERROR: PublicError = {
  code: 'run_takeover_limit',
  message: 'The turn was interrupted too many times (its workers kept stopping); it was not retried again',
};

/**
 * The one owner of a session's turn state transitions on the worker side: claim, take over, open
 * an item, yield to a steer, settle, release and interrupt. Each is one transaction under the
 * session lock that also writes the events announcing it to the outbox; none touches Redis, so a
 * Redis outage never changes what is committed. Callers publish the returned batch after commit.
 */
@Injectable()
export class TurnTransitions {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly inputs: InputsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly steps: StepsRepository,
    private readonly items: ItemsRepository,
    private readonly outbox: EventOutbox,
    private readonly config: AppConfig,
    private readonly attachments: AttachmentTransitions,
  ) {}

  /**
   * Takes the session's next work: a run of the active turn that waits for a worker, else (when the
   * turns table shows no active turn and the queue is not paused) the head of the input queue.
   */
  async claim(sessionId: string, runId: string, owner: string): Promise<HeldTurn | null> {
    return this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      if (!session) return null;
      const active = await this.turns.activeTurn(manager, sessionId);
      if (active) return this.takeOver(manager, active, owner, session.trustedTools);
      if (session.queuePaused) return null;
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
        leaseOwner: owner,
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
      const userItems = await this.items.insertItems(manager, firstItemSeq, newItems.map((item) => ({ ...item, turnId: turn.id, runId: run.id })));
      await this.attachments.bindToMessages(manager, batch, userItems);
      // The documented order: run created, turn created, turn in progress, then the turn's items.
      const events: OutgoingEvent[] = [turnEvents.run('created', run), turnEvents.turn('created', turn), turnEvents.turn('in_progress', turn)];
      userItems.forEach((item, index) => events.push(turnEvents.item('added', item, index), turnEvents.item('done', item, index)));
      return {
        turn,
        run,
        lease: { runId: run.id, owner, epoch: run.epoch },
        config: input.config,
        lastInputSeq: lastReceivedSeq(batch, '0'),
        outputIndex: userItems.length,
        steps: [],
        trustedTools: session.trustedTools,
        fresh: true,
        batch: await this.outbox.append(manager, sessionId, events, { epoch: run.epoch }),
      };
    });
  }

  /** Leases the active turn's unleased run (after a crash or a release), if it has one. */
  private async takeOver(manager: EntityManager, turn: TurnEntity, owner: string, trustedTools: string[]): Promise<HeldTurn | null> {
    const run = await this.runs.takeOver(manager, turn.sessionId, owner, this.config.runLeaseMs);
    if (!run) return null;
    return {
      turn,
      run,
      lease: { runId: run.id, owner, epoch: run.epoch },
      config: run.config as FrozenInputConfig,
      lastInputSeq: await this.inputs.lastConsumedSeq(manager, turn.id),
      outputIndex: await this.items.countItems(manager, turn.id),
      steps: await this.steps.stepsSinceLastInput(manager, turn.id),
      trustedTools,
      fresh: false,
      batch: { sessionId: turn.sessionId, rows: [] },
    };
  }

  /**
   * Yields the run at a safe boundary into the next run of the same turn with the steers that
   * arrived after the turn's input: the shown text becomes an incomplete commentary item, the steer
   * messages user items. 'cancelled' when the turn is being cancelled (it takes no more input).
   */
  async yieldToSteers(held: HeldTurn, lease: Lease, output: RunOutput, nextRunId: string): Promise<Successor | 'cancelled' | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      if ((await this.turns.findTurn(manager, held.turn.id))?.cancellationPending) return 'cancelled' as const;
      const steers = await this.inputs.steersAfter(manager, sessionId, held.lastInputSeq);
      const now = new Date();
      const epoch = await this.runs.nextEpoch(manager, sessionId);
      const next = await this.runs.yieldRun(
        manager,
        lease,
        { nextRunId, epoch, inputIds: steers.map((i) => i.id), at: now },
        this.config.runLeaseMs,
      );
      if (!next) return null;
      const newItems = userItemsOf(steers, sessionId, now);
      const partial = output.item ? 1 : 0;
      const firstSeq = await this.sessions.recordRunStarted(
        manager,
        sessionId,
        toCurrentTurn({ ...held.turn, currentRunId: next.id }),
        steers.length,
        partial + newItems.length,
        now,
      );
      await this.inputs.markConsumed(
        manager,
        steers.map((i) => i.id),
        held.turn.id,
        next.id,
        now,
      );
      const events: OutgoingEvent[] = lostDeltasNotice(output);
      let index = output.outputIndex;
      if (output.item) {
        events.push(...closingEvents(await this.writeShown(manager, output.item, firstSeq, 'incomplete', output.text, now), index, output.text));
        index += 1;
      }
      const yielded: RunEntity = { ...held.run, id: lease.runId, status: 'yielded', completedAt: now, leaseOwner: null, leaseExpiresAt: null };
      events.push(turnEvents.run('yielded', yielded), turnEvents.run('created', next));
      const userItems = await this.items.insertItems(manager, firstSeq + partial, newItems.map((item) => ({ ...item, turnId: held.turn.id, runId: next.id })));
      await this.attachments.bindToMessages(manager, steers, userItems);
      for (const item of userItems) {
        events.push(turnEvents.item('added', item, index), turnEvents.item('done', item, index));
        index += 1;
      }
      held.lastInputSeq = lastReceivedSeq(steers, held.lastInputSeq);
      const batch = await this.outbox.append(manager, sessionId, events, { epoch });
      return { run: next, lease: { runId: next.id, owner: lease.owner, epoch }, outputIndex: index, batch };
    });
  }

  /**
   * Commits the run's outcome: the model call as a step, the output item, run and turn, in one
   * transaction. A cancel accepted before this commit wins over completion (the client was told the
   * turn would stop); a failure stays a failure. Text already shown is kept: the final answer when
   * completed, an incomplete item otherwise. Null when the lease is gone.
   */
  async settle(held: HeldTurn, lease: Lease, output: RunOutput, outcome: Outcome): Promise<Settled | null> {
    const settled = await this.settleOnce(held, lease, output, outcome);
    if (settled) metrics.turnFinished(settled.status, turnSeconds(settled.turn));
    return settled;
  }

  private async settleOnce(held: HeldTurn, lease: Lease, output: RunOutput, outcome: Outcome): Promise<Settled | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      const now = new Date();
      const modelCall = outcome.status === 'completed' ? outcome.modelCall : undefined;
      const settled = await this.turns.settle(manager, {
        lease,
        runId: lease.runId,
        runStatus: outcome.status,
        turn: held.turn,
        error: outcome.status === 'failed' ? outcome.error : null,
        answer: modelCall ? { input: { model: modelCall.model }, output: { text: output.text, ...(modelCall.usage ? { usage: modelCall.usage } : {}) } } : undefined,
        usage: modelCall?.usage ?? null,
        at: now,
      });
      if (!settled) return null;
      const { turn, runUsage } = settled;
      // A failed turn pauses what waits behind it (001): the user decides whether the queue goes on.
      if (turn.status === 'failed' && session && session.pendingInputCount > 0) await this.sessions.setQueuePaused(manager, sessionId, true);
      const final = turn.status as Outcome['status'];
      const completed = final === 'completed';
      const error = turn.error;
      const events: OutgoingEvent[] = lostDeltasNotice(output);
      const writes = output.item !== null || completed;
      const seq = await this.sessions.recordTurnUpdated(manager, sessionId, toCurrentTurn(turn), writes ? 1 : 0, now);
      if (writes) events.push(...(await this.finalOutput(manager, held, lease, output, completed ? 'completed' : 'incomplete', seq, now)));
      const run: RunEntity = { ...held.run, id: lease.runId, status: final, completedAt: now, error, leaseOwner: null, leaseExpiresAt: null, usage: runUsage };
      events.push(turnEvents.run(final, run), turnEvents.turn(final, turn));
      return { turn, status: final, batch: await this.outbox.append(manager, sessionId, events, { epoch: lease.epoch }) };
    });
  }

  /**
   * Gives the run up at a boundary (worker shutdown): it becomes `interrupted`, its shown text an
   * incomplete item, and the next run of the turn waits, unleased, for any worker to continue.
   */
  async release(held: HeldTurn, lease: Lease, output: RunOutput): Promise<Successor | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      const now = new Date();
      const epoch = await this.runs.nextEpoch(manager, sessionId);
      const result = await this.runs.interruptRun(manager, lease.runId, lease, { nextRunId: newId(), epoch, inputIds: [], at: now });
      if (!result) return null;
      const events: OutgoingEvent[] = lostDeltasNotice(output);
      if (output.item) {
        const seq = await this.sessions.reserveItemSeqs(manager, sessionId, 1);
        events.push(...closingEvents(await this.writeShown(manager, output.item, seq, 'incomplete', output.text, now), output.outputIndex, output.text));
      }
      return this.announceSuccessor(manager, held.turn, result, events, epoch, output.item ? output.outputIndex + 1 : output.outputIndex);
    });
  }

  /**
   * Recovery of a run whose lease expired (its worker died or stalled): the text clients saw is kept
   * as an incomplete item, and the turn continues in a new run for another worker, unless it is
   * being cancelled (it ends cancelled) or was interrupted too often (it fails). `shown` is what
   * the stream shows of the run's items (read from Redis by the caller; null when it could not be
   * read, and clients are told to resync); the run's heartbeat checkpoint stands in where the
   * stream has less.
   */
  async interruptExpired(run: RunEntity, shown: Map<string, { outputIndex: number; text: string }> | null): Promise<{ batch: OutboxBatch; awaiting: string | null } | null> {
    let ended = null as TurnEntity | null;
    const result = await this.interruptOnce(run, shown, (turn) => (ended = turn));
    if (result && ended) metrics.turnFinished(ended.status as Outcome['status'], turnSeconds(ended));
    return result;
  }

  private async interruptOnce(
    run: RunEntity,
    shown: Map<string, { outputIndex: number; text: string }> | null,
    onEnded: (turn: TurnEntity) => void,
  ): Promise<{ batch: OutboxBatch; awaiting: string | null } | null> {
    const { sessionId } = run;
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      // Re-checked under the locks: a heartbeat that renewed in time keeps its run untouched.
      if (!(await this.runs.lockExpiredRun(manager, run.id))) return null;
      const turn = await this.turns.findTurn(manager, run.turnId);
      if (!turn) return null;
      const now = new Date();
      const { closing, index } = await this.closeShown(manager, run, turn, shown, now);
      const ending = turn.cancellationPending ? ({ status: 'cancelled' } as const) : null;
      const limited = !ending && (await this.runs.interruptionsOf(manager, turn.id)) >= this.config.runMaxTakeovers;
      if (ending || limited) {
        const ended = await this.endRun(manager, run, turn, null, ending ? 'cancelled' : 'failed', limited ? TAKEOVER_LIMIT_ERROR : null, closing, now);
        if (ended) onEnded(ended.turn);
        return ended ? { batch: ended.batch, awaiting: null } : null;
      }
      const epoch = await this.runs.nextEpoch(manager, sessionId);
      const result = await this.runs.interruptRun(manager, run.id, null, { nextRunId: newId(), epoch, inputIds: [], at: now });
      if (!result) return null;
      const successor = await this.announceSuccessor(manager, turn, result, closing, epoch, index);
      return { batch: successor.batch, awaiting: successor.run.id };
    });
  }

  /**
   * Operator (ops CLI `fail-turn`), first step: takes the lease of the active turn's run from
   * whoever holds it, for `owner`, under a new fencing epoch: the worker that held it can no longer
   * write anything of the run (and stops at its next heartbeat), and the recovery sweep leaves it
   * alone while the operator's lease lasts. A turn waiting at a waitpoint has no run to take: it is
   * cancelled through the API instead.
   */
  async seize(turnId: string, owner: string): Promise<Seized> {
    return this.dataSource.transaction(async (manager) => {
      const found = await this.turns.findTurn(manager, turnId);
      if (!found) throw DomainError.notFound(`Turn ${turnId}`);
      await this.sessions.lock(manager, found.sessionId);
      const turn = await this.turns.findTurn(manager, turnId);
      if (!turn || !(ACTIVE_TURN_STATUSES as readonly string[]).includes(turn.status)) {
        throw new DomainError('state_conflict', `Turn ${turnId} has already ended (${turn?.status ?? 'gone'})`);
      }
      if (turn.status === 'requires_action') {
        throw new DomainError('state_conflict', `Turn ${turnId} waits at a waitpoint and has no run in progress; cancel it instead`);
      }
      const current = turn.currentRunId ? await this.runs.getRunIn(manager, turn.currentRunId) : null;
      if (!current || current.status !== 'in_progress') throw new DomainError('state_conflict', `Turn ${turnId} has no run in progress`);
      const epoch = await this.runs.nextEpoch(manager, turn.sessionId);
      const run = await this.runs.seizeRun(manager, current.id, owner, epoch, this.config.runLeaseMs);
      if (!run) throw new DomainError('state_conflict', `Run ${current.id} ended meanwhile`);
      return { turn, run, lease: { runId: run.id, owner, epoch: run.epoch }, previousOwner: current.leaseOwner };
    });
  }

  /**
   * Operator, second step: ends the seized run and its turn failed with `error`, as recovery ends an
   * interrupted one: the text clients saw (`shown`, read from the stream after the fence was
   * raised; null: unknown, clients are told to resync) is kept as an incomplete item, the session
   * overview moves, the events go to the outbox, and what waits behind the failed turn is paused.
   * Null when the operator's lease is gone (the step came later than RUN_LEASE_MS).
   */
  async failSeized(seized: Seized, shown: Map<string, { outputIndex: number; text: string }> | null, error: PublicError): Promise<Settled | null> {
    const { sessionId } = seized.turn;
    return this.dataSource.transaction(async (manager) => {
      const session = await this.sessions.lock(manager, sessionId);
      // Checked before anything is written: a lease lost meanwhile (another operator, or the CLI too
      // slow) must not leave items behind without the events that announce them.
      if (!(await this.runs.lockHeldRun(manager, seized.lease))) return null;
      const turn = await this.turns.findTurn(manager, seized.turn.id);
      const run = await this.runs.getRunIn(manager, seized.run.id);
      if (!turn || !run) return null;
      const now = new Date();
      const { closing } = await this.closeShown(manager, run, turn, shown, now);
      const ended = await this.endRun(manager, run, turn, seized.lease, 'failed', error, closing, now);
      if (!ended) return null;
      if (session && session.pendingInputCount > 0) await this.sessions.setQueuePaused(manager, sessionId, true);
      return { turn: ended.turn, status: 'failed', batch: ended.batch };
    });
  }

  /**
   * What clients saw of an interrupted run, written as incomplete items with their closing events:
   * the stream's text (`shown`; null when it could not be read, then clients are told to resync),
   * or the run's heartbeat checkpoint where that has more. Returns the events and the output index
   * of the turn's next item.
   */
  private async closeShown(
    manager: EntityManager,
    run: RunEntity,
    turn: TurnEntity,
    shown: Map<string, { outputIndex: number; text: string }> | null,
    now: Date,
  ): Promise<{ closing: OutgoingEvent[]; index: number }> {
    const items = new Map(shown ?? []);
    const checkpoint = (await this.runs.getRunIn(manager, run.id))?.checkpoint ?? null;
    if (checkpoint && checkpoint.text.length > (items.get(checkpoint.item_id)?.text.length ?? -1)) {
      items.set(checkpoint.item_id, { outputIndex: checkpoint.output_index, text: checkpoint.text });
    }
    // An item a committed step already wrote (a model call's commentary before its tool calls) is kept as written.
    for (const id of await this.items.existingItemIds(manager, [...items.keys()])) items.delete(id);
    const closing: OutgoingEvent[] = shown === null ? [turnEvents.resync('events_lost')] : [];
    const ordered = [...items].sort(([, a], [, b]) => a.outputIndex - b.outputIndex);
    let seq = ordered.length > 0 ? await this.sessions.reserveItemSeqs(manager, turn.sessionId, ordered.length) : 0;
    for (const [id, { outputIndex, text }] of ordered) {
      const item = assistantItem(id, turn, run.id, now);
      closing.push(...closingEvents(await this.writeShown(manager, item, seq, 'incomplete', text, now), outputIndex, text));
      seq += 1;
    }
    const index = ordered.length > 0 ? (ordered.at(-1)?.[1].outputIndex ?? 0) + 1 : await this.items.countItems(manager, turn.id);
    return { closing, index };
  }

  /** Ends an interrupted run and its turn (through `lease`, or a run nobody holds with null): settled, overview, events after `closing`. */
  private async endRun(
    manager: EntityManager,
    run: RunEntity,
    turn: TurnEntity,
    lease: Lease | null,
    status: 'cancelled' | 'failed',
    error: PublicError | null,
    closing: OutgoingEvent[],
    now: Date,
  ): Promise<{ turn: TurnEntity; batch: OutboxBatch } | null> {
    const settled = await this.turns.settle(manager, { lease, runId: run.id, runStatus: status, turn, error, at: now });
    if (!settled) return null;
    await this.sessions.recordTurnUpdated(manager, turn.sessionId, toCurrentTurn(settled.turn), 0, now);
    const events: OutgoingEvent[] = [
      ...closing,
      turnEvents.run(status, { ...run, status, completedAt: now, error, leaseOwner: null, leaseExpiresAt: null, usage: settled.runUsage }),
      turnEvents.turn(status, settled.turn),
    ];
    return { turn: settled.turn, batch: await this.outbox.append(manager, turn.sessionId, events, lease ? { epoch: lease.epoch } : {}) };
  }

  private async announceSuccessor(
    manager: EntityManager,
    turn: TurnEntity,
    result: { interrupted: RunEntity; next: RunEntity },
    events: OutgoingEvent[],
    epoch: number,
    outputIndex: number,
  ): Promise<Successor> {
    await this.sessions.recordRunStarted(manager, turn.sessionId, toCurrentTurn({ ...turn, currentRunId: result.next.id }), 0, 0, new Date());
    events.push(turnEvents.run('interrupted', result.interrupted), turnEvents.run('created', result.next));
    return { run: result.next, lease: null, outputIndex, batch: await this.outbox.append(manager, turn.sessionId, events, { epoch }) };
  }

  /** The run's final item: the one it streamed (announced live, so only its completion events), or a new one (a completed run that streamed nothing, or settles a stored answer). */
  private async finalOutput(
    manager: EntityManager,
    held: HeldTurn,
    lease: Lease,
    output: RunOutput,
    status: 'completed' | 'incomplete',
    seq: number,
    at: Date,
  ): Promise<OutgoingEvent[]> {
    if (output.item) return closingEvents(await this.writeShown(manager, output.item, seq, status, output.text, at), output.outputIndex, output.text);
    const item = await this.writeShown(manager, assistantItem(newId(), held.turn, lease.runId, at), seq, status, output.text, at);
    return [turnEvents.item('added', item, output.outputIndex), ...closingEvents(item, output.outputIndex, output.text)];
  }

  /** Writes an assistant item with its final text: the final answer when completed, commentary otherwise. */
  private async writeShown(manager: EntityManager, item: ItemEntity, seq: number, status: 'completed' | 'incomplete', text: string, at: Date): Promise<ItemEntity> {
    const content: StoredContentPart[] = [{ type: 'output_text', text }];
    const [written] = await this.items.insertItems(manager, seq, [
      { ...item, status, content, phase: status === 'completed' ? 'final_answer' : 'commentary', createdAt: at },
    ]);
    return written!;
  }
}

/** How long a turn took, from its claim to its end (waits at waitpoints included). */
export function turnSeconds(turn: Pick<TurnEntity, 'createdAt' | 'startedAt' | 'completedAt'>): number {
  const start = turn.startedAt ?? turn.createdAt;
  return (new Date(turn.completedAt ?? Date.now()).getTime() - new Date(start).getTime()) / 1000;
}

/** An assistant message of a run, before it is written. */
export function assistantItem(id: string, turn: Pick<TurnEntity, 'id' | 'sessionId'>, runId: string, at: Date): ItemEntity {
  return {
    id,
    sessionId: turn.sessionId,
    turnId: turn.id,
    runId,
    inputId: null,
    seq: '0',
    type: 'message',
    role: 'assistant',
    status: 'in_progress',
    content: [],
    phase: null,
    createdAt: at,
  };
}

/** The highest received sequence number among `inputs`, or `from` when none is higher (bigint-safe). */
function lastReceivedSeq(inputs: InputEntity[], from: string): string {
  return inputs.reduce((max, input) => (BigInt(input.receivedSeq) > BigInt(max) ? input.receivedSeq : max), from);
}

/** text done, content part done, item done: what closing an assistant item announces. */
export function closingEvents(item: ItemEntity, outputIndex: number, text: string): OutgoingEvent[] {
  const part = { type: 'output_text', text };
  return [turnEvents.textDone(item, outputIndex, 0, text), turnEvents.contentPart('done', item, outputIndex, 0, part), turnEvents.item('done', item, outputIndex)];
}

/** Deltas that never reached the stream leave a gap only a resync can tell the client about. */
function lostDeltasNotice(output: RunOutput): OutgoingEvent[] {
  return output.lostDeltas ? [turnEvents.resync('events_lost')] : [];
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
