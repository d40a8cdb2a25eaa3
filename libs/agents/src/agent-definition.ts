import type { SandboxLimitValues } from '#libs/config';
import type { EnvironmentConfig } from '#libs/environments';
import type { FieldError } from '#libs/errors';
import { parseToolDeclarations, type ToolDeclaration } from '#libs/tools';
import { parseAgentEnvironment, UNBOUNDED } from './agent-environment.js';
import { parseTtl, type SessionTtl } from './session-ttl.js';
import { AGENT_VISIBILITIES, type AgentContext, DEFAULT_MULTI_AGENT, type MultiAgentPolicy, type AgentLimits, COMPACTION_MODES, type CompactionMode, type AgentVisibility, TOOL_APPROVAL_MODES, type ToolApprovalMode } from './agent.entity.js';

/** A saved agent as an administrator writes it (PUT body, or one entry of AGENTS_FILE). */
export interface AgentDefinition {
  name: string;
  description: string;
  instructions: string;
  /** `provider:model`; null = the deployment's DEFAULT_MODEL. */
  model: string | null;
  tools: ToolDeclaration[];
  tool_approval_mode: ToolApprovalMode;
  /** Models callers who do not manage the agent may override to (each `provider:model`); null: none. */
  allowed_models: string[] | null;
  /** true: callers who do not manage the agent may raise `tool_approval_mode`, never lower it. */
  tool_approval_pinned: boolean;
  limits: Partial<AgentLimits>;
  context: AgentContext;
  /** null: no cooperation tools. */
  multi_agent: MultiAgentPolicy | null;
  visibility: AgentVisibility;
  /** The environment its sessions get by default (they may ask for none, or tighten it); null: none. */
  environment: EnvironmentConfig | null;
  /** How long its sessions may stay idle before they are archived, and deleted (README "Session TTL"); null: no TTL. */
  ttl: SessionTtl | null;
}

export const AGENT_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;
/** Slugs that are routes under /api/v1/agents: an agent with one of these ids could not be read at /api/v1/agents/{id}. */
export const RESERVED_AGENT_IDS: readonly string[] = ['sessions', 'files', 'projects'];
const FIELDS = new Set(['id', 'name', 'description', 'instructions', 'model', 'tools', 'tool_approval_mode', 'allowed_models', 'tool_approval_pinned', 'limits', 'context', 'multi_agent', 'visibility', 'environment', 'ttl']);
const LIMIT_RANGES: Record<keyof AgentLimits, [number, number]> = {
  max_model_calls: [1, 1000],
  max_tool_calls: [0, 1000],
  turn_timeout_s: [1, 86_400],
};

/**
 * Validates an agent definition, collecting every problem with its field rather than stopping at
 * the first. Pure: the model's provider is checked by the caller (ModelRegistry). `ceilings`: the
 * deployment's sandbox limits' ceilings, which an environment's limits may not pass.
 */
export function parseAgentDefinition(raw: unknown, ceilings: SandboxLimitValues = UNBOUNDED): { definition: AgentDefinition | null; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const fail = (field: string, error: string): void => void errors.push({ field, errors: [error] });
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { definition: null, errors: [{ field: 'body', errors: ['must be an object'] }] };
  const body = raw as Record<string, unknown>;
  for (const key of Object.keys(body)) if (!FIELDS.has(key)) fail(key, 'is an unknown field');

  const text = (field: string, max: number, required: boolean): string => {
    const value = body[field];
    if (value === undefined && !required) return '';
    if (typeof value !== 'string' || (required && value.trim() === '') || value.length > max) {
      fail(field, required ? `must be a non-empty string of at most ${max} characters` : `must be a string of at most ${max} characters`);
      return '';
    }
    return value;
  };
  const name = text('name', 200, true);
  const description = text('description', 2000, false);
  const instructions = text('instructions', 100_000, false);

  let model: string | null = null;
  if (body.model !== undefined && body.model !== null) {
    if (typeof body.model !== 'string' || body.model.length < 3 || body.model.length > 200) fail('model', 'must be a provider:model string');
    else model = body.model;
  }
  const mode = body.tool_approval_mode ?? 'default';
  if (!TOOL_APPROVAL_MODES.includes(mode as ToolApprovalMode)) fail('tool_approval_mode', `must be one of ${TOOL_APPROVAL_MODES.join(', ')}`);
  let allowedModels: string[] | null = null;
  if (body.allowed_models !== undefined && body.allowed_models !== null) {
    const list = body.allowed_models;
    if (!Array.isArray(list) || list.length > 32 || list.some((ref) => typeof ref !== 'string' || ref.length < 3 || ref.length > 200)) fail('allowed_models', 'must be a list of at most 32 provider:model strings, or null');
    else allowedModels = [...new Set(list as string[])];
  }
  const pinned = body.tool_approval_pinned ?? false;
  if (typeof pinned !== 'boolean') fail('tool_approval_pinned', 'must be a boolean');
  const visibility = body.visibility ?? 'public';
  if (!AGENT_VISIBILITIES.includes(visibility as AgentVisibility)) fail('visibility', `must be one of ${AGENT_VISIBILITIES.join(', ')}`);

  const limits: Partial<AgentLimits> = {};
  if (body.limits !== undefined) {
    if (typeof body.limits !== 'object' || body.limits === null || Array.isArray(body.limits)) fail('limits', 'must be an object');
    else {
      for (const [key, value] of Object.entries(body.limits)) {
        const range = LIMIT_RANGES[key as keyof AgentLimits] as [number, number] | undefined;
        if (!range) fail(`limits.${key}`, 'is an unknown field');
        else if (!Number.isInteger(value) || (value as number) < range[0] || (value as number) > range[1]) fail(`limits.${key}`, `must be an integer ${range[0]}–${range[1]}`);
        else limits[key as keyof AgentLimits] = value as number;
      }
    }
  }
  const context = parseContext(body.context, fail);
  const multiAgent = parseMultiAgent(body.multi_agent, fail);
  const environment = parseAgentEnvironment(body.environment, ceilings, errors);
  const ttl = parseTtl(body.ttl, 'ttl');
  errors.push(...ttl.errors);
  const parsedTools = parseToolDeclarations(body.tools ?? []);
  for (const error of parsedTools.errors) {
    const match = /^(tools(?:\[\d+\])?(?:\.[\w]+)?)[: ]\s*(.*)$/.exec(error);
    errors.push({ field: match?.[1] ?? 'tools', errors: [match?.[2] || error] });
  }
  if (errors.length > 0) return { definition: null, errors };
  return {
    definition: {
      name,
      description,
      instructions,
      model,
      tools: parsedTools.tools,
      tool_approval_mode: mode as ToolApprovalMode,
      allowed_models: allowedModels,
      tool_approval_pinned: pinned === true,
      limits,
      context,
      multi_agent: multiAgent,
      visibility: visibility as AgentVisibility,
      environment,
      ttl: ttl.ttl,
    },
    errors,
  };
}

const MULTI_AGENT_FIELDS = new Set(['enabled', 'max_concurrent_subagents', 'max_depth', 'agents']);

/** `multi_agent` of a definition, defaults filled in; null when absent (or null). */
function parseMultiAgent(raw: unknown, fail: (field: string, error: string) => void): MultiAgentPolicy | null {
  if (raw === undefined || raw === null) return null;
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    fail('multi_agent', 'must be an object');
    return null;
  }
  const given = raw as Record<string, unknown>;
  for (const key of Object.keys(given)) if (!MULTI_AGENT_FIELDS.has(key)) fail(`multi_agent.${key}`, 'is an unknown field');
  if (typeof given.enabled !== 'boolean') fail('multi_agent.enabled', 'must be a boolean');
  const integer = (field: 'max_concurrent_subagents' | 'max_depth', range: [number, number]): number => {
    const value = given[field] ?? DEFAULT_MULTI_AGENT[field];
    if (!Number.isInteger(value) || (value as number) < range[0] || (value as number) > range[1]) fail(`multi_agent.${field}`, `must be an integer ${range[0]}–${range[1]}`);
    return value as number;
  };
  const policy: MultiAgentPolicy = { enabled: given.enabled === true, max_concurrent_subagents: integer('max_concurrent_subagents', [1, 20]), max_depth: integer('max_depth', [1, 5]) };
  if (given.agents !== undefined) {
    if (!Array.isArray(given.agents) || given.agents.length === 0 || given.agents.length > 32 || given.agents.some((id) => typeof id !== 'string' || !AGENT_ID.test(id))) {
      fail('multi_agent.agents', 'must be a non-empty list of at most 32 agent ids');
    } else policy.agents = [...new Set(given.agents as string[])];
  }
  return policy;
}

const WINDOW_RANGE: [number, number] = [1024, 10_000_000];
const COMPACTION_FIELDS = new Set(['mode', 'threshold', 'keep_recent_tokens', 'model', 'instructions']);

/** `context` of a definition: only the fields given (defaults belong to the runtime). */
function parseContext(raw: unknown, fail: (field: string, error: string) => void): AgentContext {
  if (raw === undefined) return {};
  if (!isObject(raw)) {
    fail('context', 'must be an object');
    return {};
  }
  const context: AgentContext = {};
  for (const key of Object.keys(raw)) if (key !== 'window_tokens' && key !== 'compaction') fail(`context.${key}`, 'is an unknown field');
  if (raw.window_tokens !== undefined) {
    const value = raw.window_tokens;
    if (!Number.isInteger(value) || (value as number) < WINDOW_RANGE[0] || (value as number) > WINDOW_RANGE[1]) fail('context.window_tokens', `must be an integer ${WINDOW_RANGE[0]}–${WINDOW_RANGE[1]}`);
    else context.window_tokens = value as number;
  }
  if (raw.compaction === undefined) return context;
  if (!isObject(raw.compaction)) {
    fail('context.compaction', 'must be an object');
    return context;
  }
  const given = raw.compaction;
  const compaction: NonNullable<AgentContext['compaction']> = {};
  for (const key of Object.keys(given)) if (!COMPACTION_FIELDS.has(key)) fail(`context.compaction.${key}`, 'is an unknown field');
  if (given.mode !== undefined) {
    if (!COMPACTION_MODES.includes(given.mode as CompactionMode)) fail('context.compaction.mode', `must be one of ${COMPACTION_MODES.join(', ')}`);
    else compaction.mode = given.mode as CompactionMode;
  }
  if (given.threshold !== undefined) {
    if (typeof given.threshold !== 'number' || !(given.threshold >= 0.1 && given.threshold <= 0.95)) fail('context.compaction.threshold', 'must be a number 0.1–0.95 (a fraction of the window)');
    else compaction.threshold = given.threshold;
  }
  if (given.keep_recent_tokens !== undefined) {
    const value = given.keep_recent_tokens;
    if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > WINDOW_RANGE[1]) fail('context.compaction.keep_recent_tokens', 'must be a non-negative integer');
    else compaction.keep_recent_tokens = value as number;
  }
  if (given.model !== undefined) {
    if (typeof given.model !== 'string' || given.model.length < 3 || given.model.length > 200) fail('context.compaction.model', 'must be a provider:model string');
    else compaction.model = given.model;
  }
  if (given.instructions !== undefined) {
    if (typeof given.instructions !== 'string' || given.instructions.length > 10_000) fail('context.compaction.instructions', 'must be a string of at most 10000 characters');
    else compaction.instructions = given.instructions;
  }
  context.compaction = compaction;
  return context;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
