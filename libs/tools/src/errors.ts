/**
 * A tool source (an MCP server) could not be reached or spoke nonsense, as opposed to a tool that
 * ran and failed (a `ToolOutcome` with `success: false`). The step executor decides what it means
 * for the turn: whether the call may have run matters there, not here.
 */
export class ToolSourceError extends Error {
  override readonly name = 'ToolSourceError';

  constructor(
    /** `outcome_unknown`: the connection ended after the call was sent: it may or may not have run. */
    readonly code: 'tool_server_unavailable' | 'outcome_unknown',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
