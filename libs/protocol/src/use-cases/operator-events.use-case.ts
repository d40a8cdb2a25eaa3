import { Injectable } from '@nestjs/common';
import { assertOperator, onBehalfOfOwner, type Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { type IdempotentResponse, SessionSearch } from '#libs/engine';
import { PROTOCOL_EVENT_TYPES } from '../dto/submit-event.dto.js';
import { SubmitEvent } from './submit-event.use-case.js';

/** What an operator may send to another owner's session: controls, never inputs that speak for the owner. */
export const OPERATOR_EVENT_TYPES = [
  'agent.session.input.cancel',
  'yuxi.session.input.resume',
  'tool_result',
  'yuxi.session.input.continue',
  'yuxi.session.tree.stop',
  'yuxi.session.tree.continue',
] as const;

/**
 * `POST /api/v1/admin/sessions/{id}/events`: an operator's control event on any owner's session.
 * It runs through SubmitEvent, the public route's very use cases, as the session's owner
 * (`onBehalfOfOwner`), so every rule of the public route holds; the acceptance writes the audit
 * entry naming the operator in the transaction that accepts the event.
 */
@Injectable()
export class SubmitOperatorEvent {
  constructor(
    private readonly search: SessionSearch,
    private readonly submitEvent: SubmitEvent,
  ) {}

  async execute(principal: Principal, sessionId: string, events: Record<string, unknown>[], rawKey: string | undefined): Promise<IdempotentResponse> {
    assertOperator(principal);
    const type = events[0]?.type;
    if (!(OPERATOR_EVENT_TYPES as readonly unknown[]).includes(type)) {
      if ((PROTOCOL_EVENT_TYPES as readonly unknown[]).includes(type)) {
        throw new DomainError('control_event_required', `${String(type)} is not a control event: an operator sends ${OPERATOR_EVENT_TYPES.join(', ')}`, { allowed: OPERATOR_EVENT_TYPES });
      }
      throw new DomainError('unknown_event_type', `Unknown event type ${JSON.stringify(type)}`, { allowed: OPERATOR_EVENT_TYPES });
    }
    // The owner is read outside the accepting transaction; the use case locks the session by that
    // owner again, so a session deleted in between is 404 there.
    const found = await this.search.find(sessionId);
    if (!found) throw DomainError.notFound(`Session ${sessionId}`);
    return this.submitEvent.execute(onBehalfOfOwner(principal, found.session.ownerId), sessionId, events, rawKey);
  }
}
