import type { CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult } from '@modelcontextprotocol/sdk/types.js';

/**
 * Tool declarations as saved in an agent's `tools` (and frozen in a session's agent snapshot).
 * `function` tools run on the client (the turn waits for `tool_result`); `builtin` and `mcp`
 * tools run in the worker. Server-executed tools may require approval and may declare that
 * re-executing them is harmless (`idempotent`).
 */
export interface FunctionToolDeclaration {
  type: 'function';
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
}

export interface BuiltinToolDeclaration {
  type: 'builtin';
  name: string;
  requires_approval?: boolean;
  idempotent?: boolean;
}

export interface McpToolDeclaration {
  type: 'mcp';
  server_label: string;
  server_url: string;
  headers?: Record<string, string>;
  allowed_tools?: string[];
  requires_approval?: boolean;
  idempotent?: boolean;
  /**
   * The server may ask the session's model for completions during a call (MCP sampling). Off
   * unless declared: each one counts against the turn's model calls and is capped in tokens.
   */
  sampling?: boolean;
  /** Credentials from a named secret of the agent's owner, resolved at call time: the value is never stored here. */
  auth?: McpAuthReference;
  /**
   * Whose named secrets `auth` resolves in: the agent's owner, null for a public agent (the shared
   * secrets). Set in a session's snapshot by the agents lib, never by a definition (a PUT naming it
   * is refused), so no agent can reach another owner's secrets.
   */
  secrets_owner_id?: string | null;
  /**
   * Set in a session's snapshot by the agents lib for an agent administrators own (a public agent),
   * never by a definition (a PUT naming it is refused): MCP_ALLOWED_HOSTS applies to its server.
   */
  admin_owned?: boolean;
}

/**
 * A named secret an MCP server's credentials come from (libs/secrets holds the value).
 * `bearer`: the secret is the token, sent as `Authorization: Bearer`. `oauth_client_credentials`:
 * the secret is the client secret of `client_id`; tokens come from the authorization server the
 * server's protected resource metadata names, which must be `issuer` (OAuth 2.1 client
 * credentials, as the MCP authorization spec describes).
 */
export type McpAuthReference =
  | { type: 'bearer'; secret: string }
  | { type: 'oauth_client_credentials'; secret: string; client_id: string; issuer: string; scope?: string };

export type ToolDeclaration = FunctionToolDeclaration | BuiltinToolDeclaration | McpToolDeclaration;

/**
 * Who executes a resolved tool: the client (function), the user (ask_user), or the worker; a
 * coordinator's tools are steps on other sessions (`coordinator`) or a wait for them (`cooperation`).
 */
export type ToolExecutor = 'client' | 'user' | 'server' | 'coordinator' | 'cooperation';

/** A tool as offered to the model and as the step executor treats its calls. */
export interface ResolvedTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). */
  parameters: Record<string, unknown>;
  executor: ToolExecutor;
  requiresApproval: boolean;
  /** Running it again after a crash mid-call is harmless (declared; builtins by default): a takeover reruns it. */
  idempotent: boolean;
  /**
   * A call may change something outside the turn, whether or not it is idempotent: every MCP tool,
   * a coordination call that creates, messages or interrupts a member, a client's function. A
   * failed turn that started one reports `side_effects: possible`.
   */
  sideEffects: boolean;
  /** Where a server tool comes from: `builtin`, `mcp:<server_label>`, or `coordination`. */
  source: string;
  /**
   * What the MCP server calls the tool, when `name` is not that: a name two servers share is
   * offered as `<server_label>__<name>` and called by this one.
   */
  remoteName?: string;
}

/** What executing a call produced: the output string the model gets, and whether the tool succeeded. */
export interface ToolOutcome {
  success: boolean;
  output: string;
  /** Images (or audio) the tool returned, stored as session files with the result and shown to the model as such. */
  media?: ToolMedia[];
}

/** One image or audio clip of a tool's result, as the server sent it. */
export interface ToolMedia {
  kind: 'image' | 'audio';
  mimeType: string;
  data: Buffer;
}

/** An MCP server's report on a call in flight (`notifications/progress`). */
export interface ToolProgress {
  progress: number;
  total?: number;
  message?: string;
}

/** How a server-executed call is made: the stable key `<turn_id>:<call_id>` makes side effects exactly-once where the tool honours it. */
export interface ToolCallContext {
  idempotencyKey: string;
  signal: AbortSignal;
  /** The session whose turn makes the call (whose workdir the file tools read). */
  sessionId: string;
  /** Called for each progress report of the call (MCP tools that report progress). */
  onProgress?(progress: ToolProgress): void;
  /** Answers the server's `sampling/createMessage` during the call (absent: refused). */
  sample?(request: CreateMessageRequestParams, signal: AbortSignal): Promise<CreateMessageResult>;
  /** Puts the server's `elicitation/create` during the call to the user (absent: declined). */
  elicit?(request: ElicitRequestParams, signal: AbortSignal): Promise<ElicitResult>;
}

/** One file of a session's workdir, as the file tools show it. */
export interface WorkdirFile {
  id: string;
  filename: string;
  mimeType: string;
  bytes: number;
  inputId: string | null;
}

/** What the file tools read: a session's workdir (libs/files provides it). */
export interface WorkdirFiles {
  list(sessionId: string): Promise<WorkdirFile[]>;
  /**
   * The file's text, page by page (`pages` null: a kind without text, e.g. an image); `totalPages`
   * above `pages.length` when only the first pages were read; null when the session has no such file.
   * Rejects with an error named `FileTextError` (its message safe to show) for a PDF that cannot be read.
   */
  readText(sessionId: string, fileId: string, signal?: AbortSignal): Promise<{ file: WorkdirFile; pages: string[] | null; totalPages?: number } | null>;
  /**
   * The file's text with OCR for images and scanned PDF pages (`pages` null: a kind with neither);
   * null when the session has no such file. Rejects with an error named FileTextError,
   * ImageTooLargeError or ImageUnreadableError (messages safe to show) for a file that cannot be read.
   */
  parse(
    sessionId: string,
    fileId: string,
    signal?: AbortSignal,
  ): Promise<{ file: WorkdirFile; pages: { text: string; source: 'text' | 'ocr' }[] | null; totalPages: number; pagesNotRecognised: number } | null>;
}

export const WORKDIR_FILES = Symbol('WORKDIR_FILES');
