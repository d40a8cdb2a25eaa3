import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';
import { ModelRegistry } from '#libs/models';
import type { AgentDto } from './agent.dto.js';
import { AGENT_ID, type AgentDefinition, parseAgentDefinition, RESERVED_AGENT_IDS } from './agent-definition.js';
import { AgentsService } from './agents.service.js';

/** Administration of saved agents (`/admin/agents`): full-access callers only. */
@Injectable()
export class AgentAdmin {
  constructor(
    private readonly agents: AgentsService,
    private readonly models: ModelRegistry,
    private readonly config: AppConfig,
  ) {}

  /** Validates a definition completely (shape, tools, model provider); 422 invalid_agent lists every problem. */
  validate(agentId: string, raw: unknown): AgentDefinition {
    const { definition, errors } = parseAgentDefinition(raw, this.config.sandbox.ceilings);
    if (!AGENT_ID.test(agentId)) errors.unshift({ field: 'agent_id', errors: ['must be a lowercase slug of 1–64 characters (a-z, 0-9, _ and -)'] });
    else if (RESERVED_AGENT_IDS.includes(agentId)) errors.unshift({ field: 'agent_id', errors: [`is reserved (${RESERVED_AGENT_IDS.join(', ')} are routes under /api/v1/agents)`] });
    const body = raw as { id?: unknown } | null;
    if (body && typeof body === 'object' && body.id !== undefined && body.id !== agentId) errors.push({ field: 'id', errors: ['must equal the agent_id of the path when given'] });
    // Model references are checked against the registry even when the definition has other
    // problems (then read from the body where their shape is right), so that one answer names them all.
    const shaped = new Set(errors.map((e) => e.field));
    for (const [field, ref] of definition ? modelRefsOf(definition) : modelRefsOfBody(raw)) {
      if (shaped.has(field) || (field.startsWith('allowed_models[') && shaped.has('allowed_models'))) continue;
      try {
        this.models.validate(ref);
      } catch (error) {
        errors.push({ field, errors: [error instanceof Error ? error.message : 'unknown model'] });
      }
    }
    // Off until the deployment configures a provider: a definition enabling it is refused, not saved to do nothing.
    if (!this.config.webSearch) {
      for (const [index, tool] of (definition?.tools ?? []).entries()) {
        if (tool.type === 'builtin' && tool.name === 'web_search') {
          errors.push({ field: `tools[${index}].name`, errors: ['web_search is not available: this deployment has no search provider (WEB_SEARCH_PROVIDER)'] });
        }
      }
    }
    if (errors.length > 0 || !definition) {
      throw new DomainError('invalid_agent', `Invalid agent: ${errors[0]?.field}: ${errors[0]?.errors[0]}`, { fields: errors });
    }
    return definition;
  }

  async put(principal: Principal, agentId: string, raw: unknown): Promise<{ agent: AgentDto; created: boolean }> {
    const definition = this.validate(agentId, raw);
    return this.agents.put({ actorId: principal.actorId, keyId: principal.keyId, isAdmin: principal.isAdmin }, agentId, definition);
  }
}

/** The model references of a valid definition, by field: its model, allowed models and summariser. */
function modelRefsOf(definition: AgentDefinition): [string, string][] {
  const refs: [string, string][] = [];
  if (definition.model) refs.push(['model', definition.model]);
  for (const [index, ref] of (definition.allowed_models ?? []).entries()) refs.push([`allowed_models[${index}]`, ref]);
  const summarizer = definition.context.compaction?.model;
  if (summarizer) refs.push(['context.compaction.model', summarizer]);
  return refs;
}

/** The same references read from a body that did not parse: only those given as strings. */
function modelRefsOfBody(raw: unknown): [string, string][] {
  const body = (raw && typeof raw === 'object' ? raw : {}) as { model?: unknown; allowed_models?: unknown; context?: { compaction?: { model?: unknown } } };
  const refs: [string, string][] = [];
  if (typeof body.model === 'string') refs.push(['model', body.model]);
  if (Array.isArray(body.allowed_models)) for (const [index, ref] of body.allowed_models.entries()) if (typeof ref === 'string') refs.push([`allowed_models[${index}]`, ref]);
  const compaction = body.context && typeof body.context === 'object' ? body.context.compaction : undefined;
  if (compaction && typeof compaction === 'object' && typeof compaction.model === 'string') refs.push(['context.compaction.model', compaction.model]);
  return refs;
}
