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
    const { definition, errors } = parseAgentDefinition(raw);
    if (!AGENT_ID.test(agentId)) errors.unshift({ field: 'agent_id', errors: ['must be a lowercase slug of 1–64 characters (a-z, 0-9, _ and -)'] });
    else if (RESERVED_AGENT_IDS.includes(agentId)) errors.unshift({ field: 'agent_id', errors: [`is reserved (${RESERVED_AGENT_IDS.join(', ')} are routes under /api/v1/agents)`] });
    const body = raw as { id?: unknown } | null;
    if (body && typeof body === 'object' && body.id !== undefined && body.id !== agentId) errors.push({ field: 'id', errors: ['must equal the agent_id of the path when given'] });
    if (definition?.model) {
      try {
        this.models.validate(definition.model);
      } catch (error) {
        errors.push({ field: 'model', errors: [error instanceof Error ? error.message : 'unknown model'] });
      }
    }
    for (const [index, ref] of (definition?.allowed_models ?? []).entries()) {
      try {
        this.models.validate(ref);
      } catch (error) {
        errors.push({ field: `allowed_models[${index}]`, errors: [error instanceof Error ? error.message : 'unknown model'] });
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
    const summarizer = definition?.context.compaction?.model;
    if (summarizer) {
      try {
        this.models.validate(summarizer);
      } catch (error) {
        errors.push({ field: 'context.compaction.model', errors: [error instanceof Error ? error.message : 'unknown model'] });
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
