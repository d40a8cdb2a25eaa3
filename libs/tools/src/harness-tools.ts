import type { ResolvedTool } from './tool.types.js';

/**
 * The harness's tools: what a session with an environment is offered besides its agent's tools
 * (run in its workspace by the worker's SessionEnvironments, libs/environments). With an
 * environment, `list_files` and `read_file` are these, by path in the workspace.
 */
export const HARNESS_TOOL_NAMES = ['shell', 'write_file', 'apply_patch', 'list_files', 'read_file'] as const;
export type HarnessToolName = (typeof HARNESS_TOOL_NAMES)[number];

/** The `source` of a resolved harness tool. */
export const HARNESS_SOURCE = 'environment';

/** The most characters of a `shell` command (the model's call carries it whole). */
export const MAX_COMMAND_CHARS = 65_536;
/** The most bytes `write_file` writes in one call. */
export const MAX_WRITE_BYTES = 10 * 1024 * 1024;

export function isHarnessToolName(name: string): name is HarnessToolName {
  return (HARNESS_TOOL_NAMES as readonly string[]).includes(name);
}

const PATH = { type: 'string', minLength: 1, maxLength: 4096 };

/** What each harness tool does and takes (the arguments the workspace's runner checks again). */
const DEFINITIONS: Readonly<Record<HarnessToolName, { description: string; parameters: Record<string, unknown>; writes: boolean }>> = {
  shell: {
    description:
      'Run a shell command with `bash -lc` in your workspace (/workspace, the current directory), in a sandbox: only the workspace is writable and it persists across calls and turns; ' +
      'returns the exit code and the output (stdout and stderr together, cut at a bound). The command ends at its time limit (timeout_s, capped by the session\'s limit).',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', minLength: 1, maxLength: MAX_COMMAND_CHARS, description: 'e.g. "ls -la && cat README.md"' },
        timeout_s: { type: 'integer', minimum: 1, description: 'Seconds before the command is stopped (default and most: the session\'s limit).' },
      },
      required: ['command'],
      additionalProperties: false,
    },
    writes: true,
  },
  write_file: {
    description:
      'Write a text file in your workspace (creating its parent directories), replacing it if it exists. `path` is relative to /workspace (an absolute path under /workspace is accepted); a path outside the workspace is an error.',
    parameters: {
      type: 'object',
      properties: {
        path: { ...PATH, description: 'e.g. "src/main.py"' },
        content: { type: 'string', maxLength: MAX_WRITE_BYTES, description: 'The whole content of the file.' },
      },
      required: ['path', 'content'],
      additionalProperties: false,
    },
    writes: true,
  },
  apply_patch: {
    description:
      'Apply a unified diff to files of your workspace (git-style `--- a/path` and `+++ b/path` headers, `/dev/null` to create or delete a file, several files per patch). ' +
      'All or nothing: if a hunk does not apply, no file changes and the error says which.',
    parameters: {
      type: 'object',
      properties: { patch: { type: 'string', minLength: 1, maxLength: MAX_WRITE_BYTES, description: 'The unified diff.' } },
      required: ['patch'],
      additionalProperties: false,
    },
    writes: true,
  },
  list_files: {
    description:
      'List the files below a directory of your workspace (recursively, up to a bound), with their sizes. Files the user attached are under `attachments/`.',
    parameters: {
      type: 'object',
      properties: { path: { ...PATH, description: 'A directory, relative to /workspace (default ".").' } },
      additionalProperties: false,
    },
    writes: false,
  },
  read_file: {
    description: 'Read a text file of your workspace by its path (relative to /workspace); long files are cut at 100 000 characters with a note.',
    parameters: {
      type: 'object',
      properties: { path: { ...PATH, description: 'e.g. "notes/todo.md" or "attachments/report.csv"' } },
      required: ['path'],
      additionalProperties: false,
    },
    writes: false,
  },
};

/**
 * The harness tools as offered to a session with an environment. The worker runs them (executor
 * `server`), so approval applies as to any server tool (the session's tool_approval_mode, tools
 * trusted for the session); none asks for approval of its own. A write is not safe to repeat
 * after a crash mid-call (a command may append, a patch may apply twice): a takeover gives the
 * model outcome_unknown instead; the reads are.
 */
export function harnessTools(): ResolvedTool[] {
  return HARNESS_TOOL_NAMES.map((name) => {
    const def = DEFINITIONS[name];
    return {
      name,
      description: def.description,
      parameters: def.parameters,
      executor: 'server' as const,
      requiresApproval: false,
      idempotent: !def.writes,
      sideEffects: def.writes,
      source: HARNESS_SOURCE,
    };
  });
}
