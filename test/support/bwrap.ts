import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BwrapSandbox, type CommandLimits, type CommandNetwork, prepareWorkspaceDir, type SandboxCommand, type SandboxCommandResult } from '#libs/sandbox';

/** The unprivileged user the sandbox tests run commands as (nobody on Debian). */
export const SANDBOX_UID = 65534;
export const SANDBOX_GID = 65534;

/** Limits small enough that a test hitting one ends in seconds. */
export const TEST_LIMITS: CommandLimits = { timeoutS: 30, cpuS: 20, memoryMb: 512, processes: 64, fileSizeMb: 64, diskBytes: 256 * 1024 * 1024, maxFiles: 10_000, outputBytes: 16 * 1024 };

export const NO_NETWORK: CommandNetwork = { access: 'disabled', allowedDomains: [], blockedDomains: [] };

/** A folder of workspaces under the system's temp folder (0711: the sandbox's user passes through it). */
export function workspaceRoot(): { root: string; workspace(name: string): Promise<string>; remove(): void } {
  const root = mkdtempSync(path.join(os.tmpdir(), 'yuxi-bwrap-test-'));
  chmodSync(root, 0o711);
  return {
    root,
    async workspace(name: string) {
      const dir = path.join(root, name);
      await prepareWorkspaceDir(dir, SANDBOX_UID, SANDBOX_GID);
      return dir;
    },
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

export interface RunOptions {
  limits?: Partial<CommandLimits>;
  network?: CommandNetwork;
  env?: Record<string, string>;
  signal?: AbortSignal;
  onOutput?(chunk: string): void;
}

/** Runs `command` in `workspaceDir` with the test limits (overridable). */
export function runIn(sandbox: BwrapSandbox, workspaceDir: string, command: string, options: RunOptions = {}): Promise<SandboxCommandResult> {
  const cmd: SandboxCommand = {
    workspaceDir,
    command,
    env: options.env ?? {},
    limits: { ...TEST_LIMITS, ...options.limits },
    network: options.network ?? NO_NETWORK,
    signal: options.signal ?? new AbortController().signal,
    ...(options.onOutput ? { onOutput: options.onOutput } : {}),
  };
  return sandbox.run(cmd);
}
