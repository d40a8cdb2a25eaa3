import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { DomainError } from '#libs/errors';
import { EventOutbox } from '#libs/events';
import { type SessionEntity } from '../tables/session.entity.js';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import type { Committed, Nudge } from '../transaction/after-commit.js';
import { acceptedReceipt, frozenInputConfig } from '../acceptance/input-config.js';
import { SessionControls } from '../controls/session-controls.js';
import { turnEvents } from '../steps/turn-events.js';
import { type CallOutcome, findMember } from './cooperation-rules.js';
import { CooperationWaits } from './cooperation-waits.js';
import { TreeRepository } from './tree.repository.js';

/**
 * A coordinator's `message_subagent` and `interrupt_subagent` on a member of its own, inside its
 * call's transaction (CooperationTransitions), as a client's message and cancel would be on that
 * session: a follow-up queued, or a cancel requested (a queue paused when nothing runs yet). The
 * member's events and nudges are committed with the call and carried out after it (`also`). A
 * refusal is the call's failed output, which the model reads. Locks go parent, then member.
 */
@Injectable()
export class MemberControls {
  constructor(
    private readonly sessions: SessionsRepository,
    private readonly tree: TreeRepository,
    private readonly turns: TurnsRepository,
    private readonly outbox: EventOutbox,
    private readonly controls: SessionControls,
    private readonly cooperation: CooperationWaits,
  ) {}

  /** A follow-up queued on the member, announced on its stream, its queue nudged after commit. */
  async message(manager: EntityManager, coordinator: SessionEntity, args: Record<string, unknown>, also: Committed[]): Promise<CallOutcome> {
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

  /**
   * The member's active turn cancelled (its worker signalled after commit, unless it ended at once);
   * with no turn running, its queued inputs paused, or nothing done when it is idle.
   */
  async interrupt(manager: EntityManager, coordinator: SessionEntity, args: Record<string, unknown>, also: Committed[]): Promise<CallOutcome> {
    const target = findMember(await this.tree.children(manager, coordinator.id), String(args.subagent_id ?? ''));
    if (!target) return { success: false, output: `Unknown subagent ${String(args.subagent_id)}: not one of yours` };
    const member = await this.sessions.lock(manager, target.id);
    if (!member) return { success: false, output: `Unknown subagent ${String(args.subagent_id)}: not one of yours` };
    const report = (status: string, extra: object = {}): CallOutcome => ({ success: true, output: JSON.stringify({ subagent_id: member.id, name: target.name, status, ...extra }) });
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
