import { DomainError } from '#libs/errors';
import type { InputEntity } from '../tables/input.entity.js';
import type { TurnEntity } from '../tables/turn.entities.js';

/**
 * Whether a client may ask for an input's edges (libs/engine/src/machines/input-states.ts): pure decisions,
 * taken under the session lock on rows read in the same transaction. The repository's statement
 * then keeps the guard atomic. Each returns the input to act on, or null when nothing is to do.
 */

/** Removing a pending input from the queue; a consumed or cancelled one is a state conflict. */
export function gateCancelInput(input: InputEntity | null, inputId: string): InputEntity {
  if (!input) throw DomainError.notFound(`Input ${inputId}`);
  if (input.status !== 'pending') {
    throw new DomainError('state_conflict', `Input ${inputId} is ${input.status}; only pending inputs can be cancelled`, { status: input.status });
  }
  return input;
}

/**
 * Promoting a pending follow-up to a steer: not while the turn waits for an answer or for its subagents, or is being
 * cancelled, nor before its attachments are prepared, nor a compaction request. A pending steer is already satisfied (null).
 */
export function gatePromoteInput(input: InputEntity | null, inputId: string, active: TurnEntity | null): InputEntity | null {
  refuseWhileBlocked(active);
  if (active?.waitpoint?.kind === 'cooperation') throw new DomainError('state_conflict', 'The turn is waiting for its subagents; a follow-up runs after it');
  if (!input) throw DomainError.notFound(`Input ${inputId}`);
  if (input.status !== 'pending') {
    throw new DomainError('state_conflict', `Input ${inputId} is ${input.status}; only pending inputs can be promoted`, { status: input.status });
  }
  // A compaction runs as a turn of its own, between messages: it never joins a running turn.
  if (input.config.compact) throw new DomainError('state_conflict', `Input ${inputId} is a compaction request; it runs in its own turn and cannot be promoted`);
  if (input.attachmentStatus !== 'ready') {
    throw new DomainError('state_conflict', `Input ${inputId} is still preparing its attachments; promote it once attachment_status is ready`, {
      attachment_status: input.attachmentStatus,
    });
  }
  return input.mode === 'steer' ? null : input;
}

/** The states in which a turn takes no ordinary message (nor a promotion): waiting for the caller, or being cancelled. */
export function refuseWhileBlocked(active: Pick<TurnEntity, 'id' | 'status' | 'cancellationPending' | 'waitpoint'> | null): void {
  if (!active) return;
  // Cancellation first: a turn cancelled while it waited is no longer waiting for an answer.
  if (active.cancellationPending) {
    throw new DomainError('turn_cancelling', 'The turn is being cancelled; send the message once it has settled', { turn_id: active.id });
  }
  if (active.status === 'requires_action') {
    const waitpoint = active.waitpoint;
    throw new DomainError('turn_requires_action', `The turn is waiting at a ${waitpoint?.kind ?? ''} waitpoint; resume it first`, {
      turn_id: active.id,
      waitpoint_id: waitpoint?.id ?? null,
      kind: waitpoint?.kind ?? null,
    });
  }
}
