import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { AgentsService, atLeastPinned } from '#libs/agents';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { EventOutbox, type OutgoingEvent } from '#libs/events';
import { InputsRepository } from '../tables/inputs.repository.js';
import { type SessionEntity } from '../tables/session.entity.js';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { TreeRepository } from './tree.repository.js';
import { type CommittedStep, type ToolCallSpec } from '../tables/turn.entities.js';
import { type Lease } from '../claims/lease.js';
import { StepsRepository } from '../tables/steps.repository.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import type { Committed, Nudge } from '../transaction/after-commit.js';
import { createCapRefusal, findMember, freeMemberName, maySpawn, memberSessionId, memberSnapshot } from './cooperation-rules.js';
import { CooperationWaits } from './cooperation-waits.js';
import type { HeldTurn } from '../claims/held-turn.js';
import { acceptedReceipt, frozenInputConfig } from '../acceptance/input-config.js';
import { SessionControls } from '../controls/session-controls.js';
import { toSessionDto } from '../views/session-view.js';
import type { Recorded } from '../steps/step-transitions.js';
import { StepTransitions } from '../steps/step-transitions.js';
import { turnEvents } from '../steps/turn-events.js';

type Outcome = { success: boolean; output: string };

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
 * same commit (a created member with its first input, a message queued, a cancel requested).
 * Nothing runs before the commit, so a kill before it leaves nothing and a retry or takeover after
 * it finds the result stored; a member's id is derived from the call, so a create never spawns
 * twice. Locks go parent, then member.
 */
@Injectable()
export class CooperationTransitions {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly tree: TreeRepository,
    private readonly inputs: InputsRepository,
    private readonly turns: TurnsRepository,
    private readonly steps: StepsRepository,
    private readonly outbox: EventOutbox,
    private readonly agents: AgentsService,
    private readonly controls: SessionControls,
    private readonly stepTransitions: StepTransitions,
    private readonly cooperation: CooperationWaits,
    private readonly config: AppConfig,
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
        let outcome: Outcome;
        switch (call.name) {
          case 'create_subagent':
            outcome = await this.create(manager, held, coordinator, call, args, now, events, also);
            break;
          case 'message_subagent':
            outcome = await this.message(manager, coordinator, args, also);
            break;
          case 'interrupt_subagent':
            outcome = await this.interrupt(manager, coordinator, args, also);
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
        events.push(...(await this.stepTransitions.writeOutputItem(manager, held, lease.runId, outputIndex, call.call_id, outcome, now)));
        return { batch: await this.outbox.append(manager, sessionId, events, { epoch: lease.epoch }), outputIndex: outputIndex + 1, step, also };
      });
    } catch (error) {
      if (error instanceof LeaseLost) return null;
      throw error;
    }
  }

  private async create(
    manager: EntityManager,
    held: HeldTurn,
    coordinator: SessionEntity,
    call: ToolCallSpec,
    args: Record<string, unknown>,
    now: Date,
    events: OutgoingEvent[],
    also: Committed[],
  ): Promise<Outcome> {
    const policy = held.config.agent?.multi_agent;
    const maxDepth = policy?.max_depth ?? 0;
    if (!maySpawn(policy, coordinator.depth)) return { success: false, output: `create_subagent refused: this session cannot spawn subagents (depth ${coordinator.depth}, max_depth ${maxDepth})` };
    const agentId = typeof args.agent_id === 'string' ? args.agent_id : coordinator.agentId;
    const allowed = policy.agents ?? [coordinator.agentId];
    if (!allowed.includes(agentId)) return { success: false, output: `create_subagent refused: agent ${agentId} is not one of ${allowed.join(', ')}` };
    const task = String(args.task ?? '');
    const children = await this.tree.children(manager, coordinator.id);
    const id = memberSessionId(held.turn.id, call.call_id);
    const name = typeof args.name === 'string' ? args.name : freeMemberName(children);
    if (children.some((child) => child.name === name && child.id !== id)) return { success: false, output: `create_subagent refused: you already have a subagent named ${name}` };
    // A retried or taken-over create meets its member whatever the counts; a new one must fit the tree's caps.
    if (!children.some((child) => child.id === id)) {
      const refusal = createCapRefusal(await this.tree.lockedMemberCounts(manager, coordinator.rootSessionId, held.turn.id), {
        maxMembers: this.config.maxSubagentsPerTree,
        maxCreatesPerTurn: this.config.maxSubagentCreatesPerTurn,
      });
      if (refusal) return { success: false, output: refusal };
    }
    let agent;
    try {
      agent = await this.agents.getVisible({ userId: coordinator.ownerId, mayUsePrivate: true }, agentId);
    } catch (error) {
      if (error instanceof DomainError) return { success: false, output: `create_subagent refused: agent ${agentId} is not available` };
      throw error;
    }
    const snapshot = memberSnapshot(this.agents.snapshot(agent), policy);
    const { session: member, created } = await this.tree.createMember(manager, {
      id,
      parent: coordinator,
      agentId: agent.id,
      // The coordinator's own agent runs with the coordinator's model (its session may override it); another agent with its own.
      model: agent.id === coordinator.agentId ? held.config.model : this.agents.effectiveModel(agent),
      toolApprovalMode: atLeastPinned(held.config.tool_approval_mode, snapshot.policy),
      instructions: agent.instructions,
      agentSnapshot: snapshot,
      subagent: { name, task },
      spawnedBy: { turnId: held.turn.id, callId: call.call_id },
      at: now,
    });
    if (created) {
      const input = await this.inputs.insert(manager, {
        sessionId: member.id,
        receivedSeq: 1,
        mode: 'follow_up',
        messages: [{ role: 'user', content: [{ type: 'input_text', text: task }] }],
        attachmentFileIds: [],
        config: frozenInputConfig(member),
        receivedAt: now,
      });
      // The member's stream starts like any session's: created, then its first input accepted.
      const memberEvents = [turnEvents.sessionCreated(toSessionDto(member)), turnEvents.accepted(acceptedReceipt(member.id, input.id))];
      also.push({ batch: await this.outbox.append(manager, member.id, memberEvents, { nudge: true }), nudges: [{ kind: 'queue' }] });
      events.push(
        turnEvents.subagentCreated(held.turn.id, held.run.id, {
          id: member.id,
          agent_id: member.agentId,
          name,
          task,
          parent_session_id: coordinator.id,
          root_session_id: member.rootSessionId,
          depth: member.depth,
        }),
      );
    }
    return { success: true, output: JSON.stringify({ subagent_id: member.id, name, status: 'queued' }) };
  }

  private async message(manager: EntityManager, coordinator: SessionEntity, args: Record<string, unknown>, also: Committed[]): Promise<Outcome> {
    const target = findMember(await this.tree.children(manager, coordinator.id), String(args.subagent_id ?? ''));
    if (!target) return { success: false, output: `Unknown subagent ${String(args.subagent_id)}: not one of yours` };
    try {
      const { input } = await this.controls.acceptMessage(manager, coordinator.ownerId, target.id, {
        requestedMode: 'follow_up',
        hasOverride: false,
        messages: [{ role: 'user', content: [{ type: 'input_text', text: String(args.message ?? '') }] }],
        attachmentFileIds: [],
        config: (session) => frozenInputConfig(session),
      });
      const receipt = acceptedReceipt(target.id, input.id);
      also.push({ batch: await this.outbox.append(manager, target.id, [turnEvents.accepted(receipt)], { nudge: true }), nudges: [{ kind: 'queue' }] });
      return { success: true, output: JSON.stringify({ subagent_id: target.id, name: target.name, status: 'queued', input_id: input.id }) };
    } catch (error) {
      if (error instanceof DomainError) return { success: false, output: `message_subagent refused: ${error.message}` };
      throw error;
    }
  }

  private async interrupt(manager: EntityManager, coordinator: SessionEntity, args: Record<string, unknown>, also: Committed[]): Promise<Outcome> {
    const target = findMember(await this.tree.children(manager, coordinator.id), String(args.subagent_id ?? ''));
    if (!target) return { success: false, output: `Unknown subagent ${String(args.subagent_id)}: not one of yours` };
    const member = await this.sessions.lock(manager, target.id);
    if (!member) return { success: false, output: `Unknown subagent ${String(args.subagent_id)}: not one of yours` };
    const report = (status: string, extra: object = {}): Outcome => ({ success: true, output: JSON.stringify({ subagent_id: member.id, name: target.name, status, ...extra }) });
    // Read again under the member's lock: its turn may have ended (or started) since the list was read.
    const active = await this.turns.activeTurn(manager, member.id);
    if (!active) {
      if (member.pendingInputCount === 0 || member.queuePaused) return report('idle');
      // Queued (behind the cap, or not claimed yet): it does not start; its queue waits until it is messaged again.
      await this.sessions.setQueuePaused(manager, member.id, true);
      also.push({ batch: await this.outbox.append(manager, member.id, []), nudges: await this.cooperation.memberSettled(manager, member) });
      return report('paused');
    }
    try {
      const { turn, runId, events, nudges } = await this.controls.cancelTurn(manager, member, { turnId: active.id });
      const cancel: Nudge[] = turn.status === 'cancelled' || !runId ? [] : [{ kind: 'cancel', runId }];
      also.push({ batch: await this.outbox.append(manager, member.id, [turnEvents.turnState(turn), ...events]), nudges: [...cancel, ...nudges] });
      return report(turn.status === 'cancelled' ? 'cancelled' : 'cancelling', { turn_id: turn.id });
    } catch (error) {
      if (error instanceof DomainError) return { success: false, output: `interrupt_subagent refused: ${error.message}` };
      throw error;
    }
  }
}
