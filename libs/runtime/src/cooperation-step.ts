import { Injectable } from '@nestjs/common';
import { AfterCommit, type CommittedStep, CooperationTransitions, CooperationWaits } from '#libs/engine';
import { metrics } from '#libs/metrics';
import { DurableWrites } from './durable-writes.js';
import { TurnCancelledError } from './run-errors.js';
import type { RunState } from './run-scope.js';
import type { NextStep } from './step-plan.js';

/**
 * A coordinator's steps on its members: a create, message or interrupt committed as one step
 * (then published, the members' side included), and a wait for members — resolved at once, or the
 * run stopped until a member's settling wakes the turn (CooperationWaits).
 */
@Injectable()
export class CooperationStep {
  constructor(
    private readonly transitions: CooperationTransitions,
    private readonly waits: CooperationWaits,
    private readonly writes: DurableWrites,
    private readonly afterCommit: AfterCommit,
  ) {}

  /** The committed step, or null when the lease is gone. */
  async coordinate(state: RunState, plan: Extract<NextStep, { action: 'coordinate' }>): Promise<CommittedStep | null> {
    const recorded = await this.writes.commitStep(state, 'tool_call', () => this.transitions.perform(state.held, state.lease, state.outputIndex, plan.call, plan.args));
    if (recorded === 'cancelled') throw new TurnCancelledError();
    if (!recorded) {
      this.writes.fenced(state.lease, 'coordination');
      return null;
    }
    metrics.toolCall('coordination', recorded.step.output.success ? 'success' : 'not_run');
    state.boundaryAt(recorded.outputIndex);
    await state.publish(recorded.batch);
    for (const other of recorded.also) void this.afterCommit.send(other);
    return recorded.step;
  }

  /** The wait's step when it resolved at once; null when the run stopped (waiting, or the lease gone). */
  async wait(state: RunState, plan: Extract<NextStep, { action: 'wait' }>): Promise<CommittedStep | null> {
    const awaited = await this.writes.commitStep(state, 'waitpoint', () => this.waits.awaitMembers(state.held, state.lease, plan.calls));
    if (awaited === 'cancelled') throw new TurnCancelledError();
    if (!awaited) {
      this.writes.fenced(state.lease, 'cooperation wait');
      return null;
    }
    if ('resolved' in awaited) return awaited.resolved;
    state.trace?.waiting('cooperation');
    state.keeper.pause();
    await state.publish(awaited.suspended, awaited.nudges);
    return null;
  }
}
