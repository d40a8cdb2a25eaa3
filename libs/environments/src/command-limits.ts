import type { SandboxSettings } from '#libs/config';
import type { CommandLimits, CommandNetwork, SandboxCommand, SandboxCommandResult } from '#libs/sandbox';
import type { EnvironmentConfig } from './environment-config.js';

/**
 * Runs one command in a sandbox (the worker provides BwrapSandbox): an abstract class so that the
 * environment's code depends on the contract, not on the runner.
 */
export abstract class CommandRunner {
  abstract run(command: SandboxCommand): Promise<SandboxCommandResult>;
}

/**
 * A command's limits: the session's environment's, each capped by the deployment's ceiling, the
 * deployment's default where the environment sets none; `timeoutS` (the `shell` tool's argument)
 * may ask for less time, never more.
 */
export function commandLimits(environment: EnvironmentConfig, sandbox: SandboxSettings, timeoutS?: number): CommandLimits {
  const pick = (asked: number | undefined, fallback: number, ceiling: number) => Math.max(1, Math.min(asked ?? fallback, ceiling));
  const limits = environment.limits ?? {};
  const timeout = pick(limits.timeout_s, sandbox.defaults.timeoutS, sandbox.ceilings.timeoutS);
  return {
    timeoutS: timeoutS === undefined ? timeout : Math.max(1, Math.min(timeoutS, timeout)),
    cpuS: pick(limits.cpu_s, sandbox.defaults.cpuS, sandbox.ceilings.cpuS),
    memoryMb: pick(limits.memory_mb, sandbox.defaults.memoryMb, sandbox.ceilings.memoryMb),
    processes: pick(limits.processes, sandbox.defaults.processes, sandbox.ceilings.processes),
    fileSizeMb: workspaceDiskMb(environment, sandbox),
    diskBytes: workspaceDiskMb(environment, sandbox) * 1024 * 1024,
    maxFiles: sandbox.workspaceMaxFiles,
    outputBytes: sandbox.outputMaxBytes,
  };
}

/** The workspace's size bound, MiB (also the largest file a command may write). */
export function workspaceDiskMb(environment: EnvironmentConfig, sandbox: SandboxSettings): number {
  return Math.max(1, Math.min(environment.limits?.disk_mb ?? sandbox.defaults.diskMb, sandbox.ceilings.diskMb));
}

export function commandNetwork(environment: EnvironmentConfig): CommandNetwork {
  const network = environment.network ?? { access: 'disabled' };
  return { access: network.access, allowedDomains: network.allowed_domains ?? [], blockedDomains: network.blocked_domains ?? [] };
}
