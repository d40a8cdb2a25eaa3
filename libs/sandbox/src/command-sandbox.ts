/**
 * One command in a session's workspace, isolated from the worker (bubblewrap on Linux): the
 * contract between the sandbox runner and the environment's tools.
 */
export interface CommandLimits {
  timeoutS: number;
  cpuS: number;
  memoryMb: number;
  processes: number;
  /** The largest file a command may write, MiB. */
  fileSizeMb: number;
  /** The workspace's size bound, bytes: watched while the command runs (its caller checks it again after). */
  diskBytes: number;
  /** The most files and directories the workspace may hold: watched like diskBytes. */
  maxFiles: number;
  /** The most output (stdout and stderr interleaved) kept, bytes; the rest is dropped with a note. */
  outputBytes: number;
}

export interface CommandNetwork {
  access: 'disabled' | 'enabled' | 'restricted';
  allowedDomains: string[];
  blockedDomains: string[];
}

export interface SandboxCommand {
  /** The host directory seen as /workspace (the only writable place besides a private /tmp). */
  workspaceDir: string;
  /** Run with `bash -lc` in /workspace. */
  command: string;
  /** The command's whole environment (besides PATH, HOME and the proxy variables the runner sets). */
  env: Record<string, string>;
  limits: CommandLimits;
  network: CommandNetwork;
  /** Aborting kills the command (and everything it started). */
  signal: AbortSignal;
  /** Live output as it comes (stdout and stderr interleaved, UTF-8), cut at limits.outputBytes. */
  onOutput?(chunk: string): void;
}

/** Why a command was ended by the sandbox rather than by itself. */
export type LimitHit = 'timeout' | 'cpu' | 'memory' | 'processes' | 'file_size' | 'output' | 'disk';

export interface SandboxCommandResult {
  /** The exit code; null when a limit or a signal ended it. */
  exitCode: number | null;
  /** stdout and stderr interleaved, cut at limits.outputBytes with a note; a limit hit is said at its end. */
  output: string;
  durationMs: number;
  limitHit: LimitHit | null;
}
