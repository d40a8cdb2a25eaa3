import type { EntityManager } from 'typeorm';
import { newId } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { OutgoingEvent } from '#libs/events';
import { storedTraceContext, tracingOn } from '#libs/telemetry';
import type { SessionsRepository } from '../tables/sessions.repository.js';
import { type StepsRepository } from '../tables/steps.repository.js';
import { toCurrentTurn } from '../views/projections.js';
import { type StepOutput, type TurnEntity, type Waitpoint, type WaitpointResponse } from '../tables/turn.entities.js';
import { type TurnsRepository } from '../tables/turns.repository.js';
import { turnEvents } from '../steps/turn-events.js';

export interface Resumed {
  events: OutgoingEvent[];
  /** The new run of the turn, waiting for a worker to take it over; null while the waitpoint still waits for more results. */
  runId: string | null;
}

/**
 * Records the response that resolved a waitpoint as its step and continues the turn in a new
 * unleased run for any worker (call under the session lock): how an answer, approvals or client
 * tool results resume a turn (WaitpointControls), and how a coordinator's resolved wait for its
 * members wakes it (CooperationWaits). A function of its own, so neither imports the other.
 */
export async function resumeAtWaitpoint(
  manager: EntityManager,
  repos: { steps: StepsRepository; turns: TurnsRepository; sessions: SessionsRepository },
  turn: TurnEntity,
  waitpoint: Waitpoint,
  response: WaitpointResponse,
): Promise<Resumed> {
  const at = new Date();
  const output: StepOutput = { kind: waitpoint.kind, response };
  // Traced: the context of what resolved the waitpoint, for the resumed run's span to link to.
  if (tracingOn()) output.trace = storedTraceContext();
  const recorded = await repos.steps.recordStep(manager, null, {
    runId: waitpoint.run_id,
    turnId: turn.id,
    sessionId: turn.sessionId,
    kind: 'waitpoint',
    status: 'completed',
    ref: waitpoint.id,
    input: { kind: waitpoint.kind },
    output,
    at,
  });
  if (!recorded) throw new DomainError('waitpoint_stale', `Waitpoint ${waitpoint.id} was already resolved`);
  const resumed = await repos.turns.resumeTurn(manager, turn, newId(), at);
  if (!resumed) throw new DomainError('waitpoint_stale', `Turn ${turn.id} is no longer waiting`);
  await repos.sessions.recordRunStarted(manager, turn.sessionId, toCurrentTurn(resumed.turn), 0, 0, at);
  return { events: [turnEvents.run('created', resumed.run), turnEvents.turn('in_progress', resumed.turn)], runId: resumed.run.id };
}
