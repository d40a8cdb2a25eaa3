import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { type DataSource, IsNull, type Repository } from 'typeorm';
// TypeORM's deep-partial type cannot express JSON with `unknown` values (tool schemas); jsonb columns take them as is.
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity.js';
import { AppConfig } from '#libs/config';
import { canonicalJson, listEnvelope, type PageQuery, prepared, toPage, unixSeconds } from '#libs/database';
import { DomainError } from '#libs/errors';
import { McpHeaderBox, type McpToolDeclaration, REDACTED_SECRET, type ToolDeclaration } from '#libs/tools';
import { AuditLog } from '#libs/audit';
import type { AgentDto, AgentListDto, AgentVersionDto, AgentVersionListDto } from './agent.dto.js';
import { DEFAULT_AGENT_LIMITS, AgentEntity, type AgentLimits, type AgentSnapshot } from './agent.entity.js';
import { AGENT_ID, type AgentDefinition } from './agent-definition.js';
import { agentEnvironmentView, redactedEnvironment } from './agent-environment.js';
import { refusedMcpAddresses } from './mcp-addresses.js';

/** Who is looking: private agents are for their owner, and never for an app's end users. */
export interface AgentViewer {
  userId: string;
  mayUsePrivate: boolean;
  /** An administrator sees where a public agent's MCP servers are; other callers do not. */
  isAdmin?: boolean;
}

/** Who changes an agent (null: the deployment, e.g. AGENTS_FILE): administrators manage every agent, other full-access users public ones and their own. */
export interface AgentActor {
  actorId: string;
  keyId: string | null;
  isAdmin: boolean;
}

/** The agent every fresh install has; it cannot be deleted. */
export const DEFAULT_AGENT_ID = 'default-chatbot';

/**
 * Saved agents: public ones (no owner) are visible to everyone, private ones to their owner only;
 * deleted ones to nobody (their rows stay: sessions keep referring to them). Sessions never read
 * an agent after creation: they keep its snapshot.
 */
@Injectable()
export class AgentsService {
  private readonly headerBox: McpHeaderBox;

  constructor(
    @InjectRepository(AgentEntity) private readonly agents: Repository<AgentEntity>,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly audit: AuditLog,
    private readonly config: AppConfig,
  ) {
    this.headerBox = new McpHeaderBox(config.secretsKey);
  }

  async list(viewer: AgentViewer): Promise<AgentListDto> {
    const rows = await this.agents.find({
      where: viewer.mayUsePrivate
        ? [
            { ownerId: IsNull(), deletedAt: IsNull() },
            { ownerId: viewer.userId, deletedAt: IsNull() },
          ]
        : [{ ownerId: IsNull(), deletedAt: IsNull() }],
      order: { id: 'ASC' },
    });
    return listOf(rows.map((row) => this.toDto(row, false, seesEndpoints(viewer.userId, viewer.isAdmin === true, row))));
  }

  /** Live agents with their instructions: every one for administrators; public ones and their own for other full-access users. */
  async adminList(actor: AgentActor): Promise<AgentListDto> {
    const rows = await this.agents.find({
      where: actor.isAdmin
        ? { deletedAt: IsNull() }
        : [
            { ownerId: IsNull(), deletedAt: IsNull() },
            { ownerId: actor.actorId, deletedAt: IsNull() },
          ],
      order: { id: 'ASC' },
    });
    // Instructions are the owner's: another owner's (a public agent's are the deployment's) stay hidden from a non-administrator.
    return listOf(rows.map((row) => this.toDto(row, actor.isAdmin || (row.ownerId !== null && row.ownerId === actor.actorId), seesEndpoints(actor.actorId, actor.isAdmin, row))));
  }

  /** The agent if the caller may use it; otherwise 404, whether it exists or not. */
  async getVisible(viewer: AgentViewer, agentId: string): Promise<AgentEntity> {
    // Not an agent id (a NUL would even fail the query): nothing to look up.
    const row = AGENT_ID.test(agentId) ? await this.agents.findOneBy({ id: agentId }) : null;
    if (!row || row.deletedAt !== null || (row.ownerId !== null && (!viewer.mayUsePrivate || row.ownerId !== viewer.userId))) throw DomainError.notFound(`Agent ${agentId}`);
    return row;
  }

  async getDto(viewer: AgentViewer, agentId: string): Promise<AgentDto> {
    const row = await this.getVisible(viewer, agentId);
    return this.toDto(row, false, seesEndpoints(viewer.userId, viewer.isAdmin === true, row));
  }

  effectiveModel(agent: AgentEntity): string {
    return agent.model ?? this.config.defaultModel;
  }

  /**
   * What a session keeps of the agent it was created with. `creator`: who creates the session (a
   * private agent's sessions are its owner's only), so that an administrator's own private agent
   * counts as administrator-owned; without it only public agents do.
   */
  snapshot(agent: AgentEntity, creator?: { userId: string; isAdmin: boolean }): AgentSnapshot {
    // Named secrets resolve in the agent owner's namespace (a public agent's: the shared one); the
    // snapshot says whose, since a session's caller need not be the agent's owner.
    // An agent administrators own (a public one, an administrator's own private one): MCP_ALLOWED_HOSTS applies to its servers.
    const adminOwned = agent.ownerId === null || (creator?.isAdmin === true && agent.ownerId === creator.userId);
    const tools = agent.tools.map((tool) => {
      if (tool.type !== 'mcp') return tool;
      const owned = adminOwned ? { ...tool, admin_owned: true } : tool;
      return tool.auth ? { ...owned, secrets_owner_id: agent.ownerId } : owned;
    });
    const snapshot: AgentSnapshot = { version: agent.version, tools, limits: effectiveLimits(agent.limits), context: agent.context };
    if (agent.multiAgent?.enabled) snapshot.multi_agent = agent.multiAgent;
    if (agent.ttl) snapshot.ttl = agent.ttl;
    snapshot.policy = {
      owner_id: agent.ownerId,
      model: this.effectiveModel(agent),
      allowed_models: agent.allowedModels,
      tool_approval_mode: agent.toolApprovalMode,
      tool_approval_pinned: agent.toolApprovalPinned,
    };
    return snapshot;
  }

  /**
   * Creates or replaces an agent (a replacement gets the next version). A private agent belongs to
   * its creator; replacing it keeps its owner. `unchanged` skips the write when the stored
   * definition is already this one (AGENTS_FILE at every start must not bump versions).
   */
  async put(actor: AgentActor | null, agentId: string, definition: AgentDefinition, options: { unlessUnchanged?: boolean } = {}): Promise<{ agent: AgentDto; created: boolean; changed: boolean }> {
    try {
      return await this.putOnce(actor, agentId, definition, options);
    } catch (error) {
      if (!(error instanceof RetryPut)) throw error;
      return this.putOnce(actor, agentId, definition, options);
    }
  }

  private async putOnce(actor: AgentActor | null, agentId: string, definition: AgentDefinition, options: { unlessUnchanged?: boolean }): Promise<{ agent: AgentDto; created: boolean; changed: boolean }> {
    if (agentId === DEFAULT_AGENT_ID && definition.visibility === 'private') {
      throw new DomainError('invalid_agent', `${DEFAULT_AGENT_ID} is every caller's agent and cannot be private`, { fields: [{ field: 'visibility', errors: ['must be public'] }] });
    }
    return this.dataSource.transaction(async (manager) => {
      const repo = manager.getRepository(AgentEntity);
      const existing = await repo.createQueryBuilder('a').setLock('pessimistic_write').where('a.id = :agentId', { agentId }).getOne();
      // A replaced private agent keeps its owner; a new (or re-created) one belongs to its creator.
      const live = existing && existing.deletedAt === null ? existing : null;
      if (live && !manages(actor, live)) throw DomainError.notFound(`Agent ${agentId}`);
      if (actor && !actor.isAdmin && (definition.visibility === 'public' || live?.ownerId === null)) {
        throw new DomainError('forbidden', 'Public agents are managed by administrators; other users manage their own private agents');
      }
      const ownerId = definition.visibility === 'private' ? (live?.ownerId ?? actor?.actorId ?? null) : null;
      // The outbound address policy, where the URL alone decides it (a literal address).
      const adminOwned = ownerId === null || (actor !== null && actor.isAdmin && ownerId === actor.actorId);
      const refused = refusedMcpAddresses(definition.tools, { allowPrivate: this.config.mcpAllowPrivateNetworks, allowedHosts: this.config.mcpAllowedHosts, adminOwned });
      if (refused.length > 0) throw new DomainError('mcp_url_not_allowed', `The MCP server address is not allowed: ${refused[0].field} ${refused[0].errors[0]}`, { fields: refused });
      // Every version made is kept (the history), with its audit entry, in this transaction.
      const record = async (action: 'agent.created' | 'agent.replaced', version: number): Promise<void> => {
        await manager.query(prepared(`INSERT INTO agent_versions (agent_id, version, definition, actor_id, created_at) VALUES ($1, $2, $3::jsonb, $4, clock_timestamp())`), [
          agentId,
          version,
          JSON.stringify(definitionOf({ ...definition, tools: sealedTools })),
          actor?.actorId ?? null,
        ]);
        await this.audit.record(manager, { actorId: actor?.actorId ?? null, keyId: actor?.keyId ?? null, action, targetType: 'agent', targetId: agentId, details: { version, visibility: definition.visibility } });
      };
      // MCP header values are credentials: sealed under SECRETS_KEY in the row and its versions.
      const sealedTools = this.headerBox.sealTools(definition.tools);
      const fields = {
        ownerId,
        name: definition.name,
        description: definition.description,
        instructions: definition.instructions,
        model: definition.model,
        toolApprovalMode: definition.tool_approval_mode,
        allowedModels: definition.allowed_models,
        toolApprovalPinned: definition.tool_approval_pinned,
        tools: sealedTools,
        limits: definition.limits,
        context: definition.context,
        multiAgent: definition.multi_agent,
        visibility: definition.visibility,
        environment: definition.environment,
        ttl: definition.ttl,
      };
      const now = new Date();
      if (!existing) {
        const row = repo.create({ id: agentId, ...fields, version: 1, deletedAt: null, createdAt: now, updatedAt: now });
        // Two creators of one new id (or api replicas loading one AGENTS_FILE) race on the insert:
        // the loser finds the winner's row and replaces it instead of failing.
        const inserted = await repo.createQueryBuilder().insert().values(row as QueryDeepPartialEntity<AgentEntity>).orIgnore().returning('id').execute();
        if ((inserted.raw as unknown[]).length === 0) throw new RetryPut();
        await record('agent.created', 1);
        return { agent: this.toDto(row, true), created: true, changed: true };
      }
      // Sealing is randomised: what is stored is compared opened, with the definition as written.
      if (options.unlessUnchanged && existing.deletedAt === null && sameDefinition({ ...existing, tools: this.headerBox.openTools(existing.tools) }, { ...fields, tools: definition.tools })) {
        return { agent: this.toDto(existing, true), created: false, changed: false };
      }
      const row: AgentEntity = { ...existing, ...fields, version: existing.version + 1, deletedAt: null, updatedAt: now };
      await repo.update({ id: agentId }, { ...fields, version: row.version, deletedAt: null, updatedAt: now } as QueryDeepPartialEntity<AgentEntity>);
      await record(existing.deletedAt !== null ? 'agent.created' : 'agent.replaced', row.version);
      return { agent: this.toDto(row, true), created: existing.deletedAt !== null, changed: true };
    });
  }

  /**
   * The versions of a live agent, newest first by default; the cursor is a version number. A
   * deleted or unknown agent is 404 (its history goes with it).
   */
  async versions(agentId: string, page: PageQuery): Promise<AgentVersionListDto> {
    const live = AGENT_ID.test(agentId) ? await this.agents.findOneBy({ id: agentId, deletedAt: IsNull() }) : null;
    if (!live) throw DomainError.notFound(`Agent ${agentId}`);
    const params: unknown[] = [agentId, page.limit + 1];
    let where = '';
    if (page.after !== undefined) {
      const after = /^[1-9][0-9]{0,9}$/.test(page.after) ? Number(page.after) : NaN;
      const anchor = Number.isSafeInteger(after) && after <= 2 ** 31 - 1
        ? ((await this.dataSource.query(prepared(`SELECT 1 FROM agent_versions WHERE agent_id = $1 AND version = $2`), [agentId, after])) as unknown[])[0]
        : undefined;
      if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not a version of this agent');
      params.push(after);
      where = `AND version ${page.order === 'desc' ? '<' : '>'} $3`;
    }
    const rows = (await this.dataSource.query(
      `SELECT agent_id, version, definition, created_at, actor_id FROM agent_versions WHERE agent_id = $1 ${where} ORDER BY version ${page.order === 'desc' ? 'DESC' : 'ASC'} LIMIT $2`,
      params,
    )) as AgentVersionRow[];
    const { rows: data, hasMore } = toPage(rows.map(versionDto), page.limit);
    return { object: 'list', data, first_id: data[0] ? String(data[0].version) : null, last_id: data.at(-1) ? String(data.at(-1)!.version) : null, has_more: hasMore };
  }

  async remove(actor: AgentActor, agentId: string): Promise<void> {
    if (agentId === DEFAULT_AGENT_ID) throw new DomainError('state_conflict', `${DEFAULT_AGENT_ID} is the built-in agent and cannot be deleted; replace it instead`);
    if (!AGENT_ID.test(agentId)) throw DomainError.notFound(`Agent ${agentId}`);
    await this.dataSource.transaction(async (manager) => {
      const live = await manager.findOneBy(AgentEntity, { id: agentId, deletedAt: IsNull() });
      if (!live || !manages(actor, live)) throw DomainError.notFound(`Agent ${agentId}`);
      if (!actor.isAdmin && live.ownerId === null) throw new DomainError('forbidden', 'Public agents are managed by administrators');
      await manager.update(AgentEntity, { id: agentId }, { deletedAt: new Date() });
      await this.audit.record(manager, { actorId: actor.actorId, keyId: actor.keyId, action: 'agent.deleted', targetType: 'agent', targetId: agentId });
    });
  }

  /** `endpoints`: the caller owns or administers the agent, and sees where its MCP servers are (else only their labels and tools). */
  toDto(row: AgentEntity, admin: boolean, endpoints = true): AgentDto {
    const dto: AgentDto = {
      id: row.id,
      object: 'agent',
      name: row.name,
      description: row.description,
      model: this.effectiveModel(row),
      created_at: unixSeconds(row.createdAt),
      yuxi: {
        tool_approval_mode: row.toolApprovalMode,
        tool_approval_pinned: row.toolApprovalPinned,
        allowed_models: row.allowedModels,
        system: row.ownerId === null,
        visibility: row.visibility,
        version: row.version,
        tools: row.tools.map(endpoints ? redactTool : withoutEndpoint),
        limits: effectiveLimits(row.limits),
        context: row.context,
        multi_agent: row.multiAgent,
        environment: agentEnvironmentView(row.environment, admin),
        ttl: row.ttl ?? null,
        updated_at: unixSeconds(row.updatedAt),
      },
    };
    if (admin) dto.yuxi.instructions = row.instructions;
    return dto;
  }
}

/** Another user's private agent is not there for a non-administrator (404, as in the public API); public ones are (but only administrators change them). */
function manages(actor: AgentActor | null, agent: AgentEntity): boolean {
  return actor === null || actor.isAdmin || agent.ownerId === null || agent.ownerId === actor.actorId;
}

export function effectiveLimits(limits: Partial<AgentLimits> | undefined): AgentLimits {
  return { ...DEFAULT_AGENT_LIMITS, ...limits };
}

/** The insert lost a race with a concurrent create of the same id: the put runs again as a replacement. */
class RetryPut extends Error {}

/** Whether `callerId` owns or administers `row`, and so may see where its MCP servers are. */
function seesEndpoints(callerId: string, isAdmin: boolean, row: AgentEntity): boolean {
  return isAdmin || (row.ownerId !== null && row.ownerId === callerId);
}

/**
 * An MCP server as a caller who does not own the agent sees it: its label and tools, never its
 * host, path, header names or auth (a map of the deployment's internal services otherwise).
 */
function withoutEndpoint(tool: ToolDeclaration): object {
  if (tool.type !== 'mcp') return tool;
  const shown: Partial<McpToolDeclaration> = { ...tool };
  delete shown.server_url;
  delete shown.headers;
  delete shown.auth;
  delete shown.secrets_owner_id;
  delete shown.admin_owned;
  return shown;
}

/** MCP header values are credentials: shown as names only; credentials in the URL (user info, query) likewise. */
function redactTool(tool: ToolDeclaration): object {
  if (tool.type !== 'mcp') return tool;
  const redacted = { ...tool, server_url: redactUrl(tool.server_url) };
  if (tool.headers) redacted.headers = Object.fromEntries(Object.keys(tool.headers).map((name) => [name, REDACTED_SECRET]));
  return redacted;
}

function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.username || url.password) {
      url.username = REDACTED_SECRET;
      url.password = '';
    }
    for (const key of [...url.searchParams.keys()]) url.searchParams.set(key, REDACTED_SECRET);
    return url.toString();
  } catch {
    return REDACTED_SECRET;
  }
}

interface AgentVersionRow {
  agent_id: string;
  version: number;
  definition: AgentDefinition;
  created_at: Date;
  actor_id: string | null;
}

/** The definition a version keeps: every field, as written (a valid PUT body). */
function definitionOf(definition: AgentDefinition): AgentDefinition {
  return {
    name: definition.name,
    description: definition.description,
    instructions: definition.instructions,
    model: definition.model,
    tools: definition.tools,
    tool_approval_mode: definition.tool_approval_mode,
    // Versions written before these settings existed have neither: their defaults.
    allowed_models: definition.allowed_models ?? null,
    tool_approval_pinned: definition.tool_approval_pinned ?? false,
    limits: definition.limits,
    context: definition.context,
    multi_agent: definition.multi_agent,
    visibility: definition.visibility,
    environment: definition.environment ?? null,
    ttl: definition.ttl ?? null,
  };
}

/** Kept whole, shown as the agent is: MCP credentials redacted; fields in the order of a PUT body (jsonb keeps its own). */
function versionDto(row: AgentVersionRow): AgentVersionDto {
  const definition = { ...definitionOf(row.definition), tools: row.definition.tools.map(redactTool), environment: redactedEnvironment(row.definition.environment) } as unknown as AgentVersionDto['definition'];
  return { object: 'agent.version', agent_id: row.agent_id, version: row.version, definition, created_at: unixSeconds(row.created_at), actor_id: row.actor_id };
}

function sameDefinition(row: AgentEntity, fields: Partial<AgentEntity>): boolean {
  return (Object.keys(fields) as (keyof AgentEntity)[]).every((key) => canonicalJson(row[key]) === canonicalJson(fields[key]));
}

function listOf(data: AgentDto[]): AgentListDto {
  return listEnvelope(data, false);
}
