import { derivedId } from '#libs/database';
import { WORKSPACE_PATH } from '#libs/environments';
import type { FrozenInputConfig } from '../tables/input.entity.js';
import type { StoredContentPart, ToolCallSpec } from '../tables/turn.entities.js';

/**
 * A `shell` call in a session's workspace is an item of its own type, `command_execution` (the
 * upstream item): written in progress with the model step that asked for it, and ended with the
 * call's result (its exit code, output and duration). Its function_call_output stays as for every
 * call, so what the model reads is unchanged.
 */
export const COMMAND_ITEM_TYPE = 'command_execution';

/** Whether a call runs a command in the session's workspace: `shell`, in a session with an environment. */
export function isCommandCall(config: Pick<FrozenInputConfig, 'environment'>, name: string): boolean {
  return config.environment !== undefined && name === 'shell';
}

/** The item of a command: derived from its call, so the run that executes it (or a takeover) knows it without a read. */
export function commandItemId(turnId: string, callId: string): string {
  return derivedId(`command_execution:${turnId}:${callId}`);
}

/** The command a call's arguments name ('' when they name none: the call fails its arguments' check). */
function commandOf(argumentsJson: string): string {
  try {
    const args = JSON.parse(argumentsJson) as { command?: unknown };
    return typeof args.command === 'string' ? args.command : '';
  } catch {
    return '';
  }
}

/** The one part of a command's item as the model step writes it: the call, and nothing known yet of its end. */
export function commandCallPart(call: ToolCallSpec, outputIndex: number): StoredContentPart {
  return {
    type: 'function_call',
    ...call,
    command_execution: { command: commandOf(call.arguments), cwd: WORKSPACE_PATH, exit_code: null, output: null, duration_ms: null, output_index: outputIndex },
  };
}

/**
 * How a command ended, as its item shows it: `completed` when it ran to its exit (whatever its
 * code), `incomplete` when it did not (a limit or a signal ended it, its worker was lost, the call
 * was refused or its arguments were wrong: `output` says which).
 */
export interface CommandEnding {
  status: 'completed' | 'incomplete';
  cwd: string | null;
  exit_code: number | null;
  output: string;
  duration_ms: number | null;
}
