import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AppConfig } from '#libs/config';
import { newId, type SqlFragment } from '#libs/database';
import { EventOutbox, type OutboxBatch, type OutgoingEvent } from '#libs/events';
import type { InputEntity } from '../tables/input.entity.js';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { type ItemEntity, type PublicError, type RunCheckpoint, type RunEntity, assistantContent, type TurnEntity } from '../tables/turn.entities.js';
import { type Lease } from '../claims/lease.js';
import { type NewItem, insertItemsWrite, ItemsRepository } from '../tables/items.repository.js';
import { toCurrentTurn } from '../views/projections.js';
import { RunsRepository } from '../tables/runs.repository.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import type { Nudge } from '../transaction/after-commit.js';
import { CooperationWaits } from '../cooperation/cooperation-waits.js';
import type { HeldTurn, RunOutput, Successor } from '../claims/held-turn.js';
import { turnEvents } from '../steps/turn-events.js';

/**
 * How a run's output and its end are written, shared by the transitions that hold a run:
 * `RunEndings` (the worker, under its own lease), `RunRecovery` (the recovery sweep, on a run whose
 * lease expired and is locked; the operator, under the lease it seized). Every method writes
 * through the caller's `manager`, inside the caller's transaction and after the caller took the
 * session lock and checked the lease; none opens a transaction, takes a lock or touches Redis.
 */
@Injectable()
export class RunOutputWriter {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly items: ItemsRepository,
    private readonly outbox: EventOutbox,
    private readonly cooperation: CooperationWaits,
    private readonly config: AppConfig,
  ) {}

  /**
   * What clients saw of an interrupted run, written as incomplete items with their closing events:
   * the stream's text (`shown`; null when it could not be read, then clients are told to resync),
   * or the run's heartbeat checkpoint where that has more. Returns the events and the output index
   * of the turn's next item.
   */
  async closeShown(
    manager: EntityManager,
    run: RunEntity,
    turn: TurnEntity,
    shown: Map<string, { outputIndex: number; text: string }> | null,
    now: Date,
  ): Promise<{ closing: OutgoingEvent[]; index: number }> {
    const items = new Map<string, { outputIndex: number; text: string; reasoning?: string }>(shown ?? []);
    const checkpoint = (await this.runs.getRunIn(manager, run.id))?.checkpoint ?? null;
    if (checkpoint && checkpoint.text.length > (items.get(checkpoint.item_id)?.text.length ?? -1)) {
      items.set(checkpoint.item_id, { outputIndex: checkpoint.output_index, text: checkpoint.text });
    }
    // Complete reasoning is only ever in the checkpoint (the stream's deltas may be partial).
    const checkpointed = checkpoint ? items.get(checkpoint.item_id) : undefined;
    if (checkpoint?.reasoning && checkpointed) checkpointed.reasoning = checkpoint.reasoning;
    // An item a committed step already wrote (a model call's commentary before its tool calls) is kept as written.
    for (const id of await this.items.existingItemIds(manager, [...items.keys()])) items.delete(id);
    const closing: OutgoingEvent[] = shown === null ? [turnEvents.resync('events_lost')] : [];
    const ordered = [...items].sort(([, a], [, b]) => a.outputIndex - b.outputIndex);
    let seq = ordered.length > 0 ? await this.sessions.reserveItemSeqs(manager, turn.sessionId, ordered.length) : 0;
    for (const [id, { outputIndex, text, reasoning }] of ordered) {
      const item = assistantItem(id, turn, run.id, now);
      closing.push(...closingEvents(await this.writeShown(manager, item, seq, 'incomplete', { text, reasoning: reasoning ?? '' }, now), outputIndex, text));
      seq += 1;
    }
    const index = ordered.length > 0 ? (ordered.at(-1)?.[1].outputIndex ?? 0) + 1 : await this.items.countItems(manager, turn.id);
    return { closing, index };
  }

  /** Ends an interrupted run and its turn (through `lease`, or a run nobody holds with null): settled, overview, events after `closing`. */
  async endRun(
    manager: EntityManager,
    run: RunEntity,
    turn: TurnEntity,
    lease: Lease | null,
    status: 'cancelled' | 'failed',
    error: PublicError | null,
    closing: OutgoingEvent[],
    now: Date,
  ): Promise<{ turn: TurnEntity; batch: OutboxBatch; nudges: Nudge[] } | null> {
    const settled = await this.turns.settle(manager, { lease, runId: run.id, runStatus: status, turn, error, at: now });
    if (!settled) return null;
    const session = await this.sessions.lock(manager, turn.sessionId);
    const nudges = await this.cooperation.memberTurnEnded(manager, session, settled.turn);
    const { crowdedAccount } = await this.sessions.recordTurnFreed(manager, turn.sessionId, toCurrentTurn(settled.turn), 0, now, this.config.maxActiveTurnsPerOwner);
    // The account was at its cap of running turns: its sessions waiting for a slot may start.
    if (crowdedAccount) nudges.push({ kind: 'account', accountId: crowdedAccount });
    const events: OutgoingEvent[] = [
      ...closing,
      turnEvents.run(status, { ...run, status, completedAt: now, error: settled.turn.error, leaseOwner: null, leaseExpiresAt: null, usage: settled.runUsage }),
      turnEvents.turn(status, settled.turn),
    ];
    return { turn: settled.turn, batch: await this.outbox.append(manager, turn.sessionId, events, lease ? { epoch: lease.epoch } : {}), nudges };
  }

  /** The interrupted run's successor, unleased, announced after `events`: overview, run interrupted, run created. */
  async announceSuccessor(
    manager: EntityManager,
    turn: TurnEntity,
    result: { interrupted: RunEntity; next: RunEntity },
    events: OutgoingEvent[],
    epoch: number,
    outputIndex: number,
  ): Promise<Successor> {
    await this.sessions.recordRunStarted(manager, turn.sessionId, toCurrentTurn({ ...turn, currentRunId: result.next.id }), 0, 0, new Date());
    events.push(turnEvents.run('interrupted', result.interrupted), turnEvents.run('created', result.next));
    const batch = await this.outbox.append(manager, turn.sessionId, events, { epoch });
    return { run: result.next, lease: null, outputIndex, batch, nudges: [{ kind: 'takeover', runId: result.next.id }] };
  }

  /** The run's final item: the one it streamed (announced live, so only its completion events), or a new one (a completed run that streamed nothing, or settles a stored answer). */
  async finalOutput(
    manager: EntityManager,
    held: HeldTurn,
    lease: Lease,
    output: RunOutput,
    status: 'completed' | 'incomplete',
    seq: number,
    at: Date,
  ): Promise<OutgoingEvent[]> {
    if (output.item) return closingEvents(await this.writeShown(manager, output.item, seq, status, output, at), output.outputIndex, output.text);
    const item = await this.writeShown(manager, assistantItem(newId(), held.turn, lease.runId, at), seq, status, output, at);
    return [turnEvents.item('added', item, output.outputIndex), ...closingEvents(item, output.outputIndex, output.text)];
  }

  /** As `finalOutput`, as a fragment of the settle's one write and the events announcing it. */
  finalOutputWrite(held: HeldTurn, lease: Lease, output: RunOutput, status: 'completed' | 'incomplete', seq: number, at: Date): { events: OutgoingEvent[]; write: SqlFragment } {
    const item = output.item ?? assistantItem(newId(), held.turn, lease.runId, at);
    const { item: written, write } = shownItemWrite(item, seq, status, output, at);
    const closing = closingEvents(written, output.outputIndex, output.text);
    return { events: output.item ? closing : [turnEvents.item('added', written, output.outputIndex), ...closing], write };
  }

  /** Writes an assistant item with its final text (and its reasoning): the final answer when completed, commentary otherwise. */
  async writeShown(manager: EntityManager, item: ItemEntity, seq: number, status: 'completed' | 'incomplete', shown: Shown, at: Date): Promise<ItemEntity> {
    const [written] = await this.items.insertItems(manager, seq, [shownItem(item, status, shown, at)]);
    return written!;
  }
}

/** An assistant item with its final text as a fragment of a composed write, and the item as written. */
export function shownItemWrite(item: ItemEntity, seq: number, status: 'completed' | 'incomplete', shown: Shown, at: Date): { item: ItemEntity; write: SqlFragment } {
  const { rows, write } = insertItemsWrite(seq, [shownItem(item, status, shown, at)]);
  return { item: rows[0]!, write: write! };
}

/** An assistant item as written with its final text (and its reasoning): the final answer when completed, commentary otherwise. */
function shownItem(item: ItemEntity, status: 'completed' | 'incomplete', shown: Shown, at: Date): ItemEntity {
  return { ...item, status, content: assistantContent(shown.text, shown.reasoning), phase: status === 'completed' ? 'final_answer' : 'commentary', createdAt: at };
}

/** The checkpoint of a run streaming `output` (its item announced): what a takeover and a reader of the items recover. */
export function runCheckpoint(item: ItemEntity, output: RunOutput): RunCheckpoint {
  const checkpoint: RunCheckpoint = { item_id: item.id, output_index: output.outputIndex, text: output.text };
  if (output.reasoning) checkpoint.reasoning = output.reasoning;
  return checkpoint;
}

/** What an assistant message showed: its text, and its complete reasoning ('' when none). */
export type Shown = Pick<RunOutput, 'text' | 'reasoning'>;

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
    tokens: null,
    createdAt: at,
  };
}

/** The highest received sequence number among `inputs`, or `from` when none is higher (bigint-safe). */
export function lastReceivedSeq(inputs: InputEntity[], from: string): string {
  return inputs.reduce((max, input) => (BigInt(input.receivedSeq) > BigInt(max) ? input.receivedSeq : max), from);
}

/** text done, content part done, item done: what closing an assistant item announces. */
export function closingEvents(item: ItemEntity, outputIndex: number, text: string): OutgoingEvent[] {
  const part = { type: 'output_text', text };
  return [turnEvents.textDone(item, outputIndex, 0, text), turnEvents.contentPart('done', item, outputIndex, 0, part), turnEvents.item('done', item, outputIndex)];
}

/** Deltas that never reached the stream leave a gap only a resync can tell the client about. */
export function lostDeltasNotice(output: RunOutput): OutgoingEvent[] {
  return output.lostDeltas ? [turnEvents.resync('events_lost')] : [];
}

/** When each input of a batch was received (input id → received_at): what its user messages show. */
export function receiptsOf(batch: InputEntity[]): Map<string, Date> {
  return new Map(batch.map((input) => [input.id, input.receivedAt]));
}

/** The user items a batch of inputs becomes, message by message, in received order (turn and run filled in by the caller). */
export function userItemsOf(batch: InputEntity[], sessionId: string, at: Date): Omit<NewItem, 'turnId' | 'runId'>[] {
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
