import type { HarnessToolName, ToolOutcome } from '#libs/tools';
import type { EnvironmentConfig } from './environment-config.js';

/** One call of a harness tool in a session's workspace. */
export interface HarnessCall {
  session: {
    id: string;
    ownerId: string;
    /**
     * The session's workdir (its project's, shared by its tree): the workspace is the workdir's, so
     * a tree and a project share one; its attachments are files of the same workdir.
     */
    workdirId: string;
  };
  turnId: string;
  /** The model's call id: with the turn, the step this call is. */
  callId: string;
  environment: EnvironmentConfig;
  tool: HarnessToolName;
  /** As the model sent them (checked against the tool's schema here, an error output when wrong). */
  args: Record<string, unknown>;
  signal: AbortSignal;
  /** `shell`: live output as the command runs, cut at the output bound. */
  onOutput?(delta: string): void;
}

/** What a `shell` call ran: its `command_execution` item's fields. */
export interface CommandRecord {
  command: string;
  cwd: string;
  /** Null when a limit or a signal ended it. */
  exitCode: number | null;
  /** Cut at SANDBOX_OUTPUT_MAX_BYTES with a note; a limit hit is said at its end. */
  output: string;
  durationMs: number;
}

export interface HarnessOutcome extends ToolOutcome {
  /** `shell` only. */
  command?: CommandRecord;
  /** The workspace version the call's writes were committed as (absent: it wrote nothing). */
  workspaceVersionId?: string;
}

/**
 * Runs harness tools in sessions' workspaces (the worker provides it: EnvironmentsModule). The
 * workspace is brought to its latest committed version first and a call's writes are committed as
 * a new version when it ends; a command killed with its worker is never run again by a takeover.
 */
export abstract class SessionEnvironments {
  abstract execute(call: HarnessCall): Promise<HarnessOutcome>;
}
