import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import type { IdempotentResponse } from '#libs/engine';
import { CancelInputEventDto, CancelTurnEventDto, ContinueQueueEventDto, PromoteInputEventDto, TreeContinueEventDto, TreeStopEventDto } from '../dto/update-session.dto.js';
import { validateEvent } from './event-validation.js';
import { CancelInput, CancelTurn, ContinueQueue, PromoteInput } from './queue-controls.use-case.js';
import { ContinueTree, StopTree } from './tree-controls.use-case.js';

/**
 * The control events of `POST …/events`, those that steer the session's queue or its tree of
 * sessions rather than add to its history: each validated against its DTO and handed to its use case.
 */
@Injectable()
export class ControlEvents {
  constructor(
    private readonly cancelInput: CancelInput,
    private readonly cancelTurn: CancelTurn,
    private readonly promoteInput: PromoteInput,
    private readonly continueQueue: ContinueQueue,
    private readonly stopTree: StopTree,
    private readonly continueTree: ContinueTree,
  ) {}

  /** The control event's response; undefined when `type` is no control event (the caller goes on). */
  async submit(principal: Principal, sessionId: string, raw: Record<string, unknown>, key: string): Promise<IdempotentResponse | undefined> {
    const type = raw.type;
    if (type === 'yuxi.session.input.cancel_input') return this.cancelInput.execute(principal, sessionId, await validateEvent(CancelInputEventDto, raw), key);
    if (type === 'agent.session.input.cancel') return this.cancelTurn.execute(principal, sessionId, await validateEvent(CancelTurnEventDto, raw), key);
    if (type === 'yuxi.session.input.promote') return this.promoteInput.execute(principal, sessionId, await validateEvent(PromoteInputEventDto, raw), key);
    if (type === 'yuxi.session.input.continue') return this.continueQueue.execute(principal, sessionId, await validateEvent(ContinueQueueEventDto, raw), key);
    if (type === 'yuxi.session.tree.stop') return this.stopTree.execute(principal, sessionId, await validateEvent(TreeStopEventDto, raw), key);
    if (type === 'yuxi.session.tree.continue') return this.continueTree.execute(principal, sessionId, await validateEvent(TreeContinueEventDto, raw), key);
    return undefined;
  }
}
