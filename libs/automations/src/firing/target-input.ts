import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { frozenInputConfig, IdempotencyService } from '#libs/engine';
import { type Accepted, CancelTurn, CreateSession, type CreateSessionDto, type CancelTurnEventDto, MessageAcceptance, type PreparedCreate } from '#libs/protocol';
import type { AutomationRecord } from '../automation.types.js';

/** The input of a fire, checked before its transaction, and how that transaction accepts it. */
export interface PreparedInput {
  /** The idempotency scope and intent of the input's own receipt (a session create's, or a message's on its session). */
  scope: string;
  intent: unknown;
  work: (manager: EntityManager, queuesBehind: boolean) => Promise<Accepted>;
  staging: PreparedCreate['staging'];
}

/**
 * An automation's target as the protocol's input: a session create (new_session) or a follow-up
 * message on the session (existing_session: the instructions as one user text message), through
 * the same checks and the same acceptance code as the public routes.
 */
@Injectable()
export class TargetInput {
  constructor(
    private readonly createSession: CreateSession,
    private readonly messages: MessageAcceptance,
    private readonly cancelTurn: CancelTurn,
  ) {}

  /** The target's input checked as the automation's principal; a refusal (a gone agent: `not_found`) is thrown as a DomainError. */
  async prepare(automation: AutomationRecord, principal: Principal): Promise<PreparedInput> {
    const target = automation.target;
    if (target.type === 'new_session') {
      const dto = { agent_id: target.agent_id, environment: target.environment, input: target.input, metadata: target.metadata } as unknown as CreateSessionDto;
      const create = await this.createSession.prepare(principal, dto);
      return { scope: CreateSession.SCOPE, intent: create.intent, work: (manager) => create.work(manager), staging: create.staging };
    }
    const sessionId = target.session_id;
    // The instructions as one user text message: the receipt's intent and the accepted input are the same message.
    const input = [{ role: 'user' as const, content: [{ type: 'input_text' as const, text: target.instructions }] }];
    const event = { type: 'agent.session.input.message', input, yuxi: { mode: 'follow_up' } };
    return {
      scope: IdempotencyService.eventScope(sessionId),
      intent: { operation: event.type, session_id: sessionId, event },
      work: (manager, queuesBehind) =>
        this.messages
          .lockedWork(
            principal,
            sessionId,
            {
              // A follow-up: an automation's message never steers into a running turn.
              requestedMode: 'follow_up',
              hasOverride: false,
              messages: input,
              attachmentFileIds: [],
              config: (session) => frozenInputConfig(session),
              // Overlap queue / cancel_previous: behind the previous turn whatever it is doing (winding down after a cancel included).
              queuesBehindBlockedTurn: queuesBehind,
            },
            null,
          )
          .work(manager),
      staging: undefined,
    };
  }

  /**
   * cancel_previous: the previous invocation's turn asked to cancel through the session's cancel
   * control (its own transaction, receipted under a key derived from the fire's, so a retried fire
   * cancels once). A turn that ended meanwhile has nothing to cancel.
   */
  async cancelPrevious(principal: Principal, sessionId: string, turnId: string, fireKey: string): Promise<void> {
    const key = `automation-cancel:${createHash('sha256').update(fireKey).digest('hex')}`;
    const event = { type: 'agent.session.input.cancel', yuxi: { turn_id: turnId } } as CancelTurnEventDto;
    try {
      await this.cancelTurn.execute(principal, sessionId, event, key);
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
    }
  }
}
