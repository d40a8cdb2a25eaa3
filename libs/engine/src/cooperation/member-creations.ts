import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AgentsService, atLeastPinned } from '#libs/agents';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { EventOutbox, type OutgoingEvent } from '#libs/events';
import { InputsRepository } from '../tables/inputs.repository.js';
import { type SessionEntity } from '../tables/session.entity.js';
import { type ToolCallSpec } from '../tables/turn.entities.js';
import type { Committed } from '../transaction/after-commit.js';
import type { HeldTurn } from '../claims/held-turn.js';
import { acceptedReceipt, frozenInputConfig } from '../acceptance/input-config.js';
import { toSessionDto } from '../views/session-view.js';
import { turnEvents } from '../steps/turn-events.js';
import { type CallOutcome, createCapRefusal, freeMemberName, maySpawn, memberSessionId, memberSnapshot } from './cooperation-rules.js';
import { TreeRepository } from './tree.repository.js';

/**
 * A coordinator's `create_subagent`, inside its call's transaction (CooperationTransitions): the
 * agent's policy and the tree's caps decide, then the member session is created with its first
 * input, announced on its own stream, and its queue nudged after the commit (`also`). A member's id
 * is derived from the call, so a retried or taken-over create meets the member it made.
 */
@Injectable()
export class MemberCreations {
  constructor(
    private readonly tree: TreeRepository,
    private readonly inputs: InputsRepository,
    private readonly outbox: EventOutbox,
    private readonly agents: AgentsService,
    private readonly config: AppConfig,
  ) {}

  /** The member created (or met again) with its first input; the coordinator's event in `events`, the member's side in `also`. */
  async create(
    manager: EntityManager,
    held: HeldTurn,
    coordinator: SessionEntity,
    call: ToolCallSpec,
    args: Record<string, unknown>,
    now: Date,
    events: OutgoingEvent[],
    also: Committed[],
  ): Promise<CallOutcome> {
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
}
