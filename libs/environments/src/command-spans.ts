import type { SandboxCommand, SandboxCommandResult } from '#libs/sandbox';
import { captureMessageContent, inSpan, SESSION_ATTRIBUTE, tracingOn, TURN_ATTRIBUTE } from '#libs/telemetry';
import type { CommandRunner } from './command-limits.js';
import type { HarnessCall } from './session-environments.js';

/** A command's text on its span (content capture only) is cut here. */
const MAX_COMMAND_ATTRIBUTE_CHARS = 64 * 1024;

/**
 * Runs one command in the sandbox; traced, in a `sandbox.exec` span (a child of the tool call's
 * `execute_tool`): how it ended (`yuxi.sandbox.exit_code`, absent when a limit or a signal ended
 * it, `yuxi.sandbox.limit_hit`) and how long it ran. The command's text is content: on the span only
 * when message content is captured. A non-zero exit is the command's answer, not the span's failure.
 */
export function runCommand(runner: CommandRunner, command: SandboxCommand, call: HarnessCall, purpose: 'shell' | 'setup'): Promise<SandboxCommandResult> {
  if (!tracingOn()) return runner.run(command);
  const attributes = {
    [SESSION_ATTRIBUTE]: call.session.id,
    [TURN_ATTRIBUTE]: call.turnId,
    'gen_ai.tool.call.id': call.callId,
    'yuxi.sandbox.purpose': purpose,
    'yuxi.sandbox.network': command.network.access,
    ...(captureMessageContent() ? { 'yuxi.sandbox.command': command.command.slice(0, MAX_COMMAND_ATTRIBUTE_CHARS) } : {}),
  };
  return inSpan('sandbox.exec', { attributes }, async (span) => {
    const result = await runner.run(command);
    span?.setAttributes({
      'yuxi.sandbox.duration_ms': result.durationMs,
      ...(result.exitCode === null ? {} : { 'yuxi.sandbox.exit_code': result.exitCode }),
      ...(result.limitHit ? { 'yuxi.sandbox.limit_hit': result.limitHit } : {}),
    });
    return result;
  });
}
