import { AgentsApiError, AgentsProtocolError, type ErrorBody } from '#libs/sdk';
import { storedCredential } from '../credentials.js';

// A session's environment as the console reads it: the `command_execution` items of its `shell`
// calls, its artifacts (the files its agent wrote) and the environment's summary. The SDK's types
// are generated from the OpenAPI document and learn these shapes when it is regenerated; until
// then the console reads them through the narrow types below (an item or an event is checked field
// by field; the environment's fields are all optional), so the page keeps working with a server that
// has no environments at all.

/** An item of the upstream type `command_execution`: one `shell` call and what it printed. */
export interface CommandExecutionItem {
  id: string;
  type: 'command_execution';
  command: string;
  cwd: string;
  /** Null when a limit or a signal ended the command (its `output` says which). */
  exit_code: number | null;
  output: string;
  duration_ms: number | null;
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed';
  yuxi?: { turn_id?: string; created_at?: number };
}

/** A file the session's agent wrote (the upstream `agent.session.artifact`). */
export interface Artifact {
  id: string;
  object: 'agent.session.artifact';
  session_id: string;
  environment_id: string;
  /** The absolute path in the environment, e.g. `/workspace/src/app.py`. */
  path: string;
  size_bytes: number;
  turn_id: string | null;
  /** Unix seconds. */
  created_at: number;
}

export interface ArtifactPage {
  data: Artifact[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

export interface EnvironmentLimits {
  timeout_s?: number;
  cpu_s?: number;
  memory_mb?: number;
  processes?: number;
  disk_mb?: number;
}

/**
 * The session resource's `environment` when it has one (`type: "openai_hosted"`, hosted by this
 * deployment). Variables' values and setup commands' bodies are never shown, only their names and
 * count; the limits are the effective ones (the deployment's defaults filled in).
 */
export interface HostedEnvironment {
  type: 'openai_hosted';
  /** The workspace's id (the session's workdir, shared by its tree and its project). */
  id?: string;
  network?: { access?: string; allowed_domains?: string[]; blocked_domains?: string[] };
  env_names?: string[];
  files?: { path?: string }[];
  setup_command_count?: number;
  limits?: EnvironmentLimits;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** The item as a command execution, or null for any other item. */
export function asCommand(item: unknown): CommandExecutionItem | null {
  if (!isObject(item) || item.type !== 'command_execution' || typeof item.id !== 'string') return null;
  return {
    id: item.id,
    type: 'command_execution',
    command: typeof item.command === 'string' ? item.command : '',
    cwd: typeof item.cwd === 'string' ? item.cwd : '',
    exit_code: typeof item.exit_code === 'number' ? item.exit_code : null,
    output: typeof item.output === 'string' ? item.output : '',
    duration_ms: typeof item.duration_ms === 'number' ? item.duration_ms : null,
    status: item.status === 'completed' || item.status === 'incomplete' || item.status === 'failed' ? item.status : 'in_progress',
    yuxi: isObject(item.yuxi) ? (item.yuxi as CommandExecutionItem['yuxi']) : undefined,
  };
}

/** The session's environment, or null when it runs without one (`{type: "none"}`, or a server that shows none). */
export function environmentOf(session: { environment?: unknown }): HostedEnvironment | null {
  const environment = session.environment;
  return isObject(environment) && environment.type === 'openai_hosted' ? (environment as unknown as HostedEnvironment) : null;
}

/** A live output delta of a running command (`agent.output.command_execution_output.delta`), or null for any other event. */
export function commandDelta(event: unknown): { itemId: string; turnId: string; delta: string } | null {
  if (!isObject(event) || event.type !== 'agent.output.command_execution_output.delta') return null;
  const { item_id, turn_id, delta } = event;
  return typeof item_id === 'string' && typeof delta === 'string' ? { itemId: item_id, turnId: typeof turn_id === 'string' ? turn_id : '', delta } : null;
}

const sessionPath = (sessionId: string) => `/api/v1/agents/sessions/${encodeURIComponent(sessionId)}`;

/** A GET signed with the console's credential (the same key the SDK client sends), its failure as the SDK's errors. */
async function get(path: string, signal?: AbortSignal): Promise<Response> {
  const response = await fetch(new URL(path, window.location.origin), { headers: { authorization: `Bearer ${storedCredential() ?? ''}` }, signal });
  if (response.ok) return response;
  const text = await response.text();
  let body: Partial<ErrorBody> | undefined;
  try {
    body = JSON.parse(text) as Partial<ErrorBody>;
  } catch {
    body = undefined;
  }
  if (body?.error && typeof body.error.code === 'string') throw new AgentsApiError(response.status, body.error, { requestId: response.headers.get('x-request-id') });
  throw new AgentsProtocolError(`HTTP ${response.status} without an API error body`, response.status, text.slice(0, 2_000));
}

/** One page of the session's artifacts, oldest first (`after`: the previous page's `last_id`). */
export async function listArtifacts(sessionId: string, after: string, signal?: AbortSignal): Promise<ArtifactPage> {
  const query = new URLSearchParams({ order: 'asc', limit: '100' });
  if (after) query.set('after', after);
  return (await (await get(`${sessionPath(sessionId)}/artifacts?${query}`, signal)).json()) as ArtifactPage;
}

/**
 * Saves an artifact's bytes as a file: fetched with the console's key (a plain link cannot send
 * it), then handed to the browser as a download named after the file.
 */
export async function downloadArtifact(artifact: Artifact): Promise<void> {
  const response = await get(`${sessionPath(artifact.session_id)}/artifacts/${encodeURIComponent(artifact.id)}/content`);
  const url = URL.createObjectURL(await response.blob());
  try {
    const link = document.createElement('a');
    link.href = url;
    link.download = artifact.path.split('/').pop() || 'artifact';
    document.body.append(link);
    link.click();
    link.remove();
  } finally {
    // Revoked once the click has handed the blob over (the download keeps its own reference).
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  }
}
