export { SANDBOX_BOOT_TIMEOUT_MS, type SandboxOptions, type SandboxRequestOptions, type SandboxResult, SandboxedThread } from './sandboxed-thread.js';
export type { CommandLimits, CommandNetwork, LimitHit, SandboxCommand, SandboxCommandResult } from './command-sandbox.js';
export { BwrapSandbox, type BwrapOptions } from './bwrap-sandbox.js';
export { BoundedOutput, floodBytes, utf8Boundary } from './bounded-output.js';
export { bwrapArgs, type BwrapArgsInput, commandEnv, ETC_ENTRIES, limitArgs, type RootEntry, SANDBOX_PROXY_PORT, SANDBOX_PROXY_SOCKET, SANDBOX_WORKSPACE } from './bwrap-args.js';
export { domainRefusal, matchesDomain } from './domain-rules.js';
export { EgressProxy, type EgressProxyOptions, type OpenProxy } from './egress-proxy.js';
export { type CommandEnding, type CommandVerdict, verdict } from './limit-hits.js';
export { prepareWorkspaceDir } from './workspace-dir.js';
