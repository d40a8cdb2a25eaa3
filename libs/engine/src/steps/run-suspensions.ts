import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { newId, unixSeconds } from '#libs/database';
import { EventOutbox, type OutboxBatch, type OutgoingEvent } from '#libs/events';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { type ToolCallSpec, type WaitpointElicitation, type WaitpointQuestion, type Waitpoint, type WaitpointKind } from '../tables/turn.entities.js';
import { RunsRepository } from '../tables/runs.repository.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import { toCurrentTurn } from '../views/projections.js';
import { type Lease } from '../claims/lease.js';
import type { HeldTurn } from '../claims/held-turn.js';
import { turnEvents } from './turn-events.js';

/**
 * The worker's stop of a held run at a waitpoint: calls a person or the client answers (approval,
 * a client tool, a question to the user), or a question an MCP server asks in the middle of a call.
 * One transaction under the session lock, written only through the run's lease, with the events
 * announcing it (published by the caller after commit); the turn resumes when the waitpoint is
 * answered (WaitpointControls).
 */
@Injectable()
export class RunSuspensions {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly outbox: EventOutbox,
  ) {}

  /**
   * Stops the run at a waitpoint: run requires_action, turn (and session) requires_action with the
   * waitpoint. Null when the lease is gone; 'cancelled' when a cancel was accepted first (the turn
   * never waits: the caller settles it cancelled).
   */
  async suspend(held: HeldTurn, lease: Lease, kind: WaitpointKind, calls: ToolCallSpec[]): Promise<OutboxBatch | 'cancelled' | null> {
    return this.suspendAt(held, lease, (waitpoint) => {
      if (kind === 'question') waitpoint.questions = calls.map(questionOf);
      else waitpoint.tool_calls = calls.map(({ call_id, name, arguments: args }) => ({ call_id, name, arguments: args }));
      return { ...waitpoint, kind };
    });
  }

  /**
   * Stops the run at a question an MCP server asked in the middle of a call (elicitation): the
   * call's `started` step stays as it is, and the answer goes back to the server when the turn
   * resumes. As suspend otherwise.
   */
  async suspendForElicitation(held: HeldTurn, lease: Lease, elicitation: WaitpointElicitation, questions: WaitpointQuestion[]): Promise<OutboxBatch | 'cancelled' | null> {
    return this.suspendAt(held, lease, (waitpoint) => ({ ...waitpoint, kind: 'question', questions, elicitation }));
  }

  private async suspendAt(held: HeldTurn, lease: Lease, build: (base: Omit<Waitpoint, 'kind'>) => Waitpoint): Promise<OutboxBatch | 'cancelled' | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      if (await this.turns.cancellationPending(manager, held.turn.id)) return 'cancelled' as const;
      const now = new Date();
      const waitpoint = build({ id: newId(), run_id: lease.runId, created_at: unixSeconds(now) });
      if (!(await this.runs.suspendRun(manager, lease, held.turn.id, waitpoint, now))) return null;
      const usage = await this.runs.usageOf(manager, lease.runId, held.turn.id);
      const turn = { ...held.turn, status: 'requires_action' as const, waitpoint, currentRunId: lease.runId, usage: usage.turn };
      await this.sessions.recordTurnUpdated(manager, sessionId, toCurrentTurn(turn), 0, now);
      const run = { ...held.run, id: lease.runId, status: 'requires_action' as const, completedAt: now, leaseOwner: null, leaseExpiresAt: null, usage: usage.run };
      const events: OutgoingEvent[] = [turnEvents.run('requires_action', run), turnEvents.waiting(turn, waitpoint)];
      return this.outbox.append(manager, sessionId, events, { epoch: lease.epoch });
    });
  }
}

/** An ask_user call as a question of the waitpoint; the question id is the call id. */
function questionOf(call: ToolCallSpec): NonNullable<Waitpoint['questions']>[number] {
  let args: { question?: unknown; options?: unknown; multi_select?: unknown; allow_other?: unknown } = {};
  try {
    args = JSON.parse(call.arguments) as typeof args;
  } catch {
    // The planner validates arguments before a question is asked; an unparsable one cannot get here.
  }
  const options = Array.isArray(args.options) ? args.options.filter((o): o is string => typeof o === 'string') : [];
  return {
    question_id: call.call_id,
    question: typeof args.question === 'string' ? args.question : '',
    options,
    multi_select: args.multi_select === true,
    allow_other: typeof args.allow_other === 'boolean' ? args.allow_other : options.length === 0,
  };
}
