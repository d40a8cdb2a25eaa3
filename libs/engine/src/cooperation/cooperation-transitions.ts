import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { EventOutbox, type OutgoingEvent } from '#libs/events';
import { toolCallEntry } from '#libs/usage';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { type CommittedStep, type ToolCallSpec } from '../tables/turn.entities.js';
import { type Lease } from '../claims/lease.js';
import { StepsRepository } from '../tables/steps.repository.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import type { Committed } from '../transaction/after-commit.js';
import type { HeldTurn } from '../claims/held-turn.js';
import type { Recorded } from '../steps/recorded.js';
import { ToolOutputItems } from '../steps/tool-output-items.js';
import type { CallOutcome } from './cooperation-rules.js';
import { MemberControls } from './member-controls.js';
import { MemberCreations } from './member-creations.js';
import { recordUsage } from '../steps/usage-writes.js';

/** Thrown inside the transaction to roll it back: the lease was gone when the step was to be recorded. */
class LeaseLost extends Error {}

/** A coordination step as committed: the coordinator's record, and what it committed on member sessions. */
export interface Coordinated extends Recorded {
  also: Committed[];
}

/**
 * A coordinator's calls on its members — `create_subagent`, `message_subagent`,
 * `interrupt_subagent` — each one transaction under the coordinator's lock, written through the
 * run's lease: the step with its result (a `function_call_output`), and the member's side in the
 * same commit (a created member with its first input: MemberCreations; a message queued, a cancel
 * requested: MemberControls).
 * Nothing runs before the commit, so a kill before it leaves nothing and a retry or takeover after
 * it finds the result stored; a member's id is derived from the call, so a create never spawns
 * twice. Locks go parent, then member.
 */
@Injectable()
export class CooperationTransitions {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly steps: StepsRepository,
    private readonly outbox: EventOutbox,
    private readonly outputItems: ToolOutputItems,
    private readonly creations: MemberCreations,
    private readonly members: MemberControls,
  ) {}

  /** One coordination call; 'cancelled' when a cancel was accepted first, null when the lease is gone. */
  async perform(held: HeldTurn, lease: Lease, outputIndex: number, call: ToolCallSpec, args: Record<string, unknown>): Promise<Coordinated | 'cancelled' | null> {
    const { sessionId } = held.turn;
    try {
      return await this.dataSource.transaction(async (manager) => {
        const coordinator = await this.sessions.lock(manager, sessionId);
        if (!coordinator) return null;
        if (await this.turns.cancellationPending(manager, held.turn.id)) return 'cancelled' as const;
        const now = new Date();
        const events: OutgoingEvent[] = [];
        const also: Committed[] = [];
        let outcome: CallOutcome;
        switch (call.name) {
          case 'create_subagent':
            outcome = await this.creations.create(manager, held, coordinator, call, args, now, events, also);
            break;
          case 'message_subagent':
            outcome = await this.members.message(manager, coordinator, args, also);
            break;
          case 'interrupt_subagent':
            outcome = await this.members.interrupt(manager, coordinator, args, also);
            break;
          default:
            outcome = { success: false, output: `Unknown tool ${call.name}` };
        }
        const step: CommittedStep = { runId: lease.runId, kind: 'tool_call', status: 'completed', ref: call.call_id, output: outcome };
        // Each call changes other sessions, and members keep working when this turn fails: a retry
        // (a new turn) would create or message members again. Not idempotent for that, though a
        // takeover's rerun of the same call meets its own member (memberSessionId).
        const input = { name: call.name, arguments: call.arguments, side_effects: true, idempotent: false };
        // Through the lease, in the same commit: a lease lost meanwhile rolls the members' side back too.
        if (!(await this.steps.recordStep(manager, lease, { ...step, turnId: held.turn.id, sessionId, input, at: now }))) throw new LeaseLost();
        // A coordination call is one of the turn's tool calls, in the ledger with its result.
        const { rows: spent } = await recordUsage(manager, { sessionId, runId: lease.runId, turnId: held.turn.id }, [toolCallEntry('tool_call', call.name)]);
        events.push(...(await this.outputItems.write(manager, held, lease.runId, outputIndex, call.call_id, outcome, now)));
        return { batch: await this.outbox.append(manager, sessionId, events, { epoch: lease.epoch }), outputIndex: outputIndex + 1, step, also, spent };
      });
    } catch (error) {
      if (error instanceof LeaseLost) return null;
      throw error;
    }
  }
}
