import type { SandboxSettings } from '#libs/config';
import type { CommandRecord, HarnessCall, HarnessOutcome } from '../session-environments.js';
import { type CommandRunner, commandLimits, commandNetwork } from '../command-limits.js';
import { runCommand } from '../command-spans.js';
import { WORKSPACE_PATH } from '../environment-config.js';

const MAX_COMMAND_CHARS = 65_536;

/** `shell`: `bash -lc <command>` in the sandbox, in /workspace; success is exit code 0. */
export async function runShell(runner: CommandRunner, sandbox: SandboxSettings, call: HarnessCall, workspaceDir: string): Promise<HarnessOutcome> {
  const { command, timeout_s: timeoutS } = call.args;
  if (typeof command !== 'string' || command.length === 0 || command.length > MAX_COMMAND_CHARS) {
    return { success: false, output: `command must be a string of 1 to ${MAX_COMMAND_CHARS} characters` };
  }
  if (timeoutS !== undefined && (typeof timeoutS !== 'number' || !Number.isInteger(timeoutS) || timeoutS < 1)) {
    return { success: false, output: 'timeout_s must be an integer of at least 1 (seconds)' };
  }
  const result = await runCommand(runner, {
    workspaceDir,
    command,
    env: call.environment.env ?? {},
    limits: commandLimits(call.environment, sandbox, timeoutS as number | undefined),
    network: commandNetwork(call.environment),
    signal: call.signal,
    onOutput: call.onOutput,
  }, call, 'shell');
  const record: CommandRecord = { command, cwd: WORKSPACE_PATH, exitCode: result.exitCode, output: result.output, durationMs: result.durationMs };
  return { success: result.exitCode === 0, output: result.output, command: record };
}
