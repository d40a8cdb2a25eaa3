/**
 * The harness's tools: what a session with an environment is offered besides its agent's tools
 * (run in its workspace by the worker's SessionEnvironments, libs/environments). With an
 * environment, `list_files` and `read_file` are these, by path in the workspace.
 */
export const HARNESS_TOOL_NAMES = ['shell', 'write_file', 'apply_patch', 'list_files', 'read_file'] as const;
export type HarnessToolName = (typeof HARNESS_TOOL_NAMES)[number];

/** The `source` of a resolved harness tool. */
export const HARNESS_SOURCE = 'environment';
