export { SANDBOX_BOOT_TIMEOUT_MS, type SandboxOptions, type SandboxRequestOptions, type SandboxResult, SandboxedThread } from './sandboxed-thread.js';
export type { CommandLimits, CommandNetwork, LimitHit, SandboxCommand, SandboxCommandResult } from './command-sandbox.js';
