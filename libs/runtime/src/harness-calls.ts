import { Injectable } from '@nestjs/common';
import { type CommandEnding, commandItemId, isCommandCall, ItemsRepository, type ToolCallSpec, turnEvents } from '#libs/engine';
import { type CommandRecord, type HarnessOutcome, SessionEnvironments, WORKSPACE_PATH } from '#libs/environments';
import type { HarnessToolName, ResolvedTool } from '#libs/tools';
import { CallInFlight } from './call-in-flight.js';
import { OutputBatcher } from './output-batcher.js';
import type { RunState } from './run-scope.js';
import type { PlannedOutcome } from './step-plan.js';

/**
 * The harness's tools of a session with an environment, run in its workspace by the worker's
 * SessionEnvironments: the call goes with the session (its owner, its workdir: the workspace of its
 * tree and project), the turn and the call id (the step it is), and a command's output streams
 * live on its command_execution item as `agent.output.command_execution_output.delta`.
 */
@Injectable()
export class HarnessCalls {
  constructor(
    private readonly environments: SessionEnvironments,
    private readonly items: ItemsRepository,
  ) {}

  /** Starts the call; the run follows it as any server call (a cancel or a lost lease aborts it). */
  start(state: RunState, tool: ResolvedTool, plan: { call: ToolCallSpec; args: Record<string, unknown> }): CallInFlight | PlannedOutcome {
    const { held } = state;
    const environment = held.config.environment;
    if (!environment) return { success: false, output: `${tool.name} error: this session has no environment` };
    const { call } = plan;
    const itemId = commandItemId(held.turn.id, call.call_id);
    return new CallInFlight(`${held.turn.id}:${call.call_id}`, async (inFlight) => {
      const scope = await this.items.commandScope(held.turn.sessionId, itemId);
      if (!scope) return { success: false, output: `${tool.name} error: the session is gone` };
      const command = isCommandCall(held.config, call.name) && scope.outputIndex !== null ? { turnId: held.turn.id, itemId, outputIndex: scope.outputIndex } : null;
      // Pipe chunks are joined into fewer live events (every 100 ms or 4 KiB), all sent before the result.
      const batcher = command ? new OutputBatcher((delta) => state.live.push(turnEvents.commandOutput(command, state.lease.runId, delta))) : null;
      let outcome: HarnessOutcome;
      try {
        outcome = await this.environments.execute({
          session: { id: held.turn.sessionId, ownerId: scope.ownerId, workdirId: scope.workdirId },
          turnId: held.turn.id,
          callId: call.call_id,
          environment,
          tool: tool.name as HarnessToolName,
          args: plan.args,
          signal: inFlight.controller.signal,
          ...(batcher ? { onOutput: (delta: string) => batcher.add(delta) } : {}),
        });
      } finally {
        batcher?.flush();
      }
      // Every delta is on the stream before the item's end and the call's output.
      if (batcher && batcher.sent > 0) await state.live.drain();
      return planned(outcome);
    });
  }
}

/** The outcome as the run records it: a command's record ends its item. */
function planned(outcome: HarnessOutcome): PlannedOutcome {
  const result: PlannedOutcome = { success: outcome.success, output: outcome.output };
  if (outcome.media) result.media = outcome.media;
  if (outcome.command) result.command = commandEnding(outcome.command);
  return result;
}

/** A command that exited is completed (whatever its code); one a limit or a signal ended is not. */
export function commandEnding(record: CommandRecord): CommandEnding {
  return { status: record.exitCode === null ? 'incomplete' : 'completed', cwd: record.cwd, exit_code: record.exitCode, output: record.output, duration_ms: record.durationMs };
}

/**
 * A command that did not run to its end here (its worker was lost mid-command: outcome unknown;
 * the user rejected it; its arguments were wrong): its item ends incomplete, the output saying why.
 */
export function commandNotRun(output: string): CommandEnding {
  return { status: 'incomplete', cwd: WORKSPACE_PATH, exit_code: null, output, duration_ms: null };
}
