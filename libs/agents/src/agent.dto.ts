import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional, getSchemaPath } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';
import { OptionalNotNull } from '#libs/errors';
import { TTL_MAX_S, TTL_MIN_S } from './session-ttl.js';
import { COMPACTION_MODES } from './agent.entity.js';
import { AgentEnvironmentDto, ENVIRONMENT_DEFAULT_RULE, EnvironmentParamDto } from './environment.dto.js';

export class FunctionToolDto {
  @ApiProperty({ enum: ['function'] }) type!: 'function';
  @ApiProperty({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }) name!: string;
  @ApiPropertyOptional({ maxLength: 1024 }) description?: string;
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'JSON Schema (type object) of the arguments; the model\'s arguments are validated against it.' })
  parameters?: Record<string, unknown>;
}

export class BuiltinToolDto {
  @ApiProperty({ enum: ['builtin'] }) type!: 'builtin';
  @ApiProperty({
    enum: ['ask_user', 'calculator', 'current_time', 'list_files', 'read_file', 'ocr_parse_file', 'web_search'],
    description:
      '`list_files` and `read_file` (`{"file_id"}`: text, and page text for PDFs) read the session\'s workdir: the files attached to its inputs, and to those of every other session of its project. `ocr_parse_file` (`{"file_id"}`) reads the same files with OCR: the text of an image, and of a PDF\'s scanned pages (at most 10, 40 megapixels an image). ' +
      '`web_search` (`{"query", "count"?}`) searches the web through the deployment\'s provider (WEB_SEARCH_PROVIDER: a SearXNG instance, Brave Search or Tavily), run by the worker and inherited by subagents: its output is JSON `{"query", "results": [{"n", "title", "url", "snippet"}], "note"}`, results numbered for the model to cite as `[n](url)`; a provider that fails or is slow gives an error output (`web_search error: …`), never a failed turn. Off until the deployment configures a provider: a definition naming it is then refused (422 `invalid_agent`).',
  })
  name!: string;
  @ApiPropertyOptional({ description: 'Ask the user to approve each call first.' }) requires_approval?: boolean;
  @ApiPropertyOptional({ description: 'Safe to run again after a crash mid-call (default true for builtins).' }) idempotent?: boolean;
}

export class McpBearerAuthDto {
  @ApiProperty({ enum: ['bearer'] }) type!: 'bearer';
  @ApiProperty({ pattern: '^[A-Za-z0-9_.-]{1,64}$', description: 'The name of a secret (`PUT /api/v1/admin/secrets/{name}`) holding the token, sent as `Authorization: Bearer`; never the token itself.' })
  secret!: string;
}

export class McpClientCredentialsAuthDto {
  @ApiProperty({ enum: ['oauth_client_credentials'] }) type!: 'oauth_client_credentials';
  @ApiProperty({ pattern: '^[A-Za-z0-9_.-]{1,64}$', description: 'The name of a secret holding the client secret; never the secret itself.' }) secret!: string;
  @ApiProperty({ minLength: 1, maxLength: 256, description: 'The OAuth client id.' }) client_id!: string;
  @ApiProperty({
    format: 'uri',
    description: 'The authorization server the client is registered with. The credentials go to no other: a server whose protected resource metadata names another one is not called.',
  })
  issuer!: string;
  @ApiPropertyOptional({ maxLength: 1024, description: 'Scopes to request, space-separated.', example: 'mcp:tools' }) scope?: string;
}

export class McpToolDto {
  @ApiProperty({ enum: ['mcp'] }) type!: 'mcp';
  @ApiProperty({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }) server_label!: string;
  @ApiPropertyOptional({
    format: 'uri',
    maxLength: 2048,
    description:
      'Streamable HTTP endpoint (http or https) of the MCP server; required in a PUT. Shown only to the agent\'s owner and administrators: other callers see a public agent\'s MCP servers without `server_url`, `headers` and `auth`.',
  })
  server_url?: string;
  @ApiPropertyOptional({
    type: 'object',
    maxProperties: 32,
    additionalProperties: { type: 'string', maxLength: 8192 },
    description: 'Sent with every request (not Content-Type, Accept, Host, Content-Length, Idempotency-Key or the Mcp-* headers); values are shown as "***" and sealed under SECRETS_KEY at rest.',
  })
  headers?: Record<string, string>;
  @ApiPropertyOptional({
    oneOf: [{ $ref: getSchemaPath(McpBearerAuthDto) }, { $ref: getSchemaPath(McpClientCredentialsAuthDto) }],
    description:
      'Credentials from a named secret, read by the worker at each call (a rotated secret reaches running sessions): a bearer token, or OAuth 2.1 client credentials with the protected resource metadata discovery of the MCP authorization spec. A private agent\'s secrets are its owner\'s, a public agent\'s the shared ones. Not with an `Authorization` header.',
  })
  auth?: McpBearerAuthDto | McpClientCredentialsAuthDto;
  @ApiPropertyOptional({ type: 'array', items: { type: 'string', pattern: '^[a-zA-Z0-9_-]{1,64}$' }, maxItems: 256, description: 'Only these tools of the server are offered to the model.' })
  allowed_tools?: string[];
  @ApiPropertyOptional() requires_approval?: boolean;
  @ApiPropertyOptional({ description: 'Safe to run again after a crash mid-call (default false: the model gets outcome_unknown instead).' })
  idempotent?: boolean;
  @ApiPropertyOptional({
    description:
      'The server may ask the session\'s model for completions during a call (MCP sampling). Default false: the server is not offered sampling. Each completion counts against the turn\'s `max_model_calls` and is cut at MCP_SAMPLING_MAX_TOKENS.',
  })
  sampling?: boolean;
}

const TOOL_SCHEMA = { oneOf: [{ $ref: getSchemaPath(FunctionToolDto) }, { $ref: getSchemaPath(BuiltinToolDto) }, { $ref: getSchemaPath(McpToolDto) }] };

export class AgentLimitsDto {
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 1000, description: 'Model calls per turn (default 25).' }) max_model_calls!: number;
  @ApiProperty({ type: 'integer', minimum: 0, maximum: 1000, description: 'Tool calls per turn (default 50).' }) max_tool_calls!: number;
  @ApiProperty({ type: 'integer', minimum: 1, maximum: 86400, description: 'Execution time per turn in seconds, waits excluded (default 900).' }) turn_timeout_s!: number;
}

/** The limits of a PUT body: any subset, the rest take their defaults. */
export class AgentLimitsInputDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 1000, description: 'Model calls per turn (default 25).' }) max_model_calls?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 1000, description: 'Tool calls per turn (default 50).' }) max_tool_calls?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 86400, description: 'Execution time per turn in seconds, waits excluded (default 900).' }) turn_timeout_s?: number;
}

export class CompactionPolicyDto {
  @ApiPropertyOptional({
    enum: COMPACTION_MODES,
    default: 'auto',
    description:
      'auto: compact before a model call whose context would pass the threshold, and once after a provider\'s context-length error; manual: only on `yuxi.session.input.compact`; off: never automatically (a context that does not fit fails the turn with `context_window_exceeded`; an explicit `yuxi.session.input.compact` still compacts). A session may override it (`yuxi.compaction_mode`).',
  })
  mode?: string;
  @ApiPropertyOptional({ minimum: 0.1, maximum: 0.95, default: 0.8, description: 'Fraction of the window at which auto compaction starts.' }) threshold?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 0, description: 'About how much of the latest history a compaction keeps verbatim (default a quarter of the window).' })
  keep_recent_tokens?: number;
  @ApiPropertyOptional({ minLength: 3, maxLength: 200, description: 'The summariser, `provider:model` (default the agent\'s model).', example: 'scripted:summary' }) model?: string;
  @ApiPropertyOptional({ maxLength: 10000, description: 'Added to the structured summary prompt (goal, decisions, facts, open tasks, files).' }) instructions?: string;
}

/** How the agent's sessions manage the model context; only the fields set (defaults apply to the rest). */
export class AgentContextDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1024,
    maximum: 10000000,
    description: 'The model\'s context window in tokens. Default by model: `scripted:` 32768; `openai:` gpt-4o 128000, gpt-4.1 1047576, gpt-5 400000, o-series 200000, others 128000.',
  })
  window_tokens?: number;
  @ApiPropertyOptional({ type: CompactionPolicyDto }) compaction?: CompactionPolicyDto;
}

/** Cooperation: the coordinator's tools and its tree's limits (README "Cooperation: subagents and trees"). */
export class MultiAgentDto {
  @ApiProperty({ description: 'Gives the agent create_subagent, message_subagent, wait_subagents and interrupt_subagent.' }) enabled!: boolean;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 20, default: 6, description: 'Members of one tree running at once; more wait queued.' }) max_concurrent_subagents?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 5, default: 1, description: 'How deep a tree grows: 1 = members do not spawn members.' }) max_depth?: number;
  @ApiPropertyOptional({ type: [String], minItems: 1, maxItems: 32, description: 'Agents members may be created with (default: the coordinator\'s own).' }) agents?: string[];
}


/** The override rule, said once for every place it shows (agent fields, session create, follow-ups, session update). */
export const MODEL_OVERRIDE_RULE =
  'Who may switch the model: the deployment allows only the models of its MODEL_ALLOWLIST (empty: every model of a known provider). Within it, the agent\'s managers (its owner; administrators for every agent, public ones included) may switch to any model; other callers only to a model of the agent\'s `allowed_models` (none when it is null), or keep the agent\'s own. Anything else is 422 `model_not_allowed`.';
export const APPROVAL_PIN_RULE =
  'With `tool_approval_pinned`, callers who do not manage the agent (its owner; administrators for every agent) may raise the approval mode above the agent\'s `tool_approval_mode` (`always_trust` < `default` < `always_ask`) at session create, on a session update or per message, never lower it (422 `tool_approval_pinned`), and their `approve_session` decisions approve the one call only. Not pinned: every caller sets the modes as before.';

/** The session TTL rule, said once for every place a `ttl` shows (agent, project, session create and update). */
export const TTL_RULE =
  'Idle time counts from the session\'s `last_active_at` (its latest input or turn activity), by the lifecycle clock. The worker archives a session idle longer than `archive_after_idle_s` and deletes it (a soft delete, as `DELETE`) when idle longer than `delete_after_idle_s`; an active turn or a pending input postpones either. A session goes by the shortest value its own `yuxi.ttl`, its project\'s and its agent\'s set, field by field; its own may shorten theirs, never lengthen them (422 naming the field). Cooperation members follow their root.';

const TTL_SECONDS = (description: string, example: number) =>
  applyDecorators(ApiPropertyOptional({ type: 'integer', minimum: TTL_MIN_S, maximum: TTL_MAX_S, description, example }), OptionalNotNull(), IsInt(), Min(TTL_MIN_S), Max(TTL_MAX_S));

/**
 * A `ttl` wherever it shows: what an agent, a project and a session show, and what a session
 * (create, update) and a project (create) send (the validators apply to those bodies; an agent's
 * definition is read by parseTtl).
 */
export class SessionTtlDto {
  @TTL_SECONDS('Seconds idle before the session is archived.', 86_400) archive_after_idle_s?: number;
  @TTL_SECONDS('Seconds idle before the session is deleted; at least `archive_after_idle_s` when both are set (else 422 naming it).', 2_592_000) delete_after_idle_s?: number;
}

export class AgentYuxiDto {
  @ApiProperty({ enum: ['default', 'always_ask', 'always_trust'] }) tool_approval_mode!: string;
  @ApiProperty({ description: `true: the approval mode is pinned. ${APPROVAL_PIN_RULE}` }) tool_approval_pinned!: boolean;
  @ApiProperty({ type: [String], nullable: true, description: `Models callers who do not manage the agent may switch to; null: none. ${MODEL_OVERRIDE_RULE}`, example: null })
  allowed_models!: string[] | null;
  @ApiProperty({
    description:
      "true: an agent of the deployment, owned by no user: the built-in `default-chatbot`, those declared in AGENTS_FILE, and those administrators save as `public`. Every caller sees it; only administrators change it. false: a user's own private agent. (It goes with `visibility`: `public` is always a system agent.)",
  })
  system!: boolean;
  @ApiProperty({ enum: ['public', 'private'] }) visibility!: string;
  @ApiProperty({ type: 'integer', minimum: 1, description: 'Grows with every replacement; a session keeps the version it was created with.' }) version!: number;
  @ApiProperty({ type: 'array', items: TOOL_SCHEMA }) tools!: object[];
  @ApiProperty({ type: AgentLimitsDto, description: 'Effective limits (defaults filled in).' }) limits!: AgentLimitsDto;
  @ApiProperty({ type: AgentContextDto, description: 'Context management as defined (defaults not filled in).' }) context!: AgentContextDto;
  @ApiProperty({ type: MultiAgentDto, nullable: true, description: 'Cooperation (defaults filled in); null: the agent does not coordinate.' }) multi_agent!: MultiAgentDto | null;
  @ApiProperty({ type: AgentEnvironmentDto, nullable: true, description: `The environment its sessions get by default; null: none. ${ENVIRONMENT_DEFAULT_RULE}` }) environment!: AgentEnvironmentDto | null;
  @ApiProperty({ type: SessionTtlDto, nullable: true, description: `Its sessions' TTL; null: none. ${TTL_RULE}` }) ttl!: SessionTtlDto | null;
  @ApiPropertyOptional({ description: 'System prompt; shown to administrators only.' }) instructions?: string;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) updated_at!: number;
}

export class AgentDto {
  @ApiProperty({ example: 'default-chatbot' }) id!: string;
  @ApiProperty({ enum: ['agent'] }) object!: 'agent';
  @ApiProperty() name!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ description: 'Effective model, `provider:model`.', example: 'scripted:echo' }) model!: string;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: AgentYuxiDto }) yuxi!: AgentYuxiDto;
}

export class AgentListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AgentDto] }) data!: AgentDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

/** The PUT body of `/admin/agents/{agent_id}`: the whole definition (a replacement, not a patch). */
export class PutAgentDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 64, description: 'Must equal the agent_id of the path when given.' }) id?: string;
  @ApiProperty({ minLength: 1, maxLength: 200 }) name!: string;
  @ApiPropertyOptional({ maxLength: 2000 }) description?: string;
  @ApiPropertyOptional({ maxLength: 100000, description: 'System prompt.' }) instructions?: string;
  @ApiPropertyOptional({ type: String, nullable: true, minLength: 3, maxLength: 200, description: '`provider:model`; omitted or null = the deployment default.', example: 'scripted:echo' })
  model?: string | null;
  @ApiPropertyOptional({ type: 'array', items: TOOL_SCHEMA, maxItems: 64 }) tools?: object[];
  @ApiPropertyOptional({ enum: ['default', 'always_ask', 'always_trust'], default: 'default' }) tool_approval_mode?: string;
  @ApiPropertyOptional({ type: [String], nullable: true, maxItems: 32, description: `Models (\`provider:model\`) callers who do not manage the agent may switch to; omitted or null: none. ${MODEL_OVERRIDE_RULE}`, example: ['openai:gpt-4o-mini'] })
  allowed_models?: string[] | null;
  @ApiPropertyOptional({ default: false, description: APPROVAL_PIN_RULE }) tool_approval_pinned?: boolean;
  @ApiPropertyOptional({ type: AgentLimitsInputDto, description: 'Any subset; the rest take defaults.' }) limits?: AgentLimitsInputDto;
  @ApiPropertyOptional({ type: AgentContextDto, description: 'Context window and compaction policy (README "Context and compaction").' }) context?: AgentContextDto;
  @ApiPropertyOptional({ type: MultiAgentDto, nullable: true, description: 'Cooperation: subagents and trees (README "Cooperation: subagents and trees").' }) multi_agent?: MultiAgentDto | null;
  @ApiPropertyOptional({ enum: ['public', 'private'], default: 'public', description: 'private: visible to its creator only.' }) visibility?: string;
  @ApiPropertyOptional({ type: EnvironmentParamDto, nullable: true, description: `The environment its sessions get by default (without \`files\`: they belong to a caller); omitted, null or \`{"type": "none"}\`: none. ${ENVIRONMENT_DEFAULT_RULE}` })
  environment?: EnvironmentParamDto | null;
  @ApiPropertyOptional({ type: SessionTtlDto, nullable: true, description: `How long its sessions may stay idle before they are archived, and deleted; omitted, null or \`{}\`: no TTL. Each value an integer ${TTL_MIN_S}–${TTL_MAX_S} seconds (else 422 naming the field). ${TTL_RULE}` })
  ttl?: SessionTtlDto | null;
}

export class AgentDeletedDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['agent.deleted'] }) object!: 'agent.deleted';
  @ApiProperty({ enum: [true] }) deleted!: true;
}

/** A whole agent definition as it was written (every field present): a valid PUT body as it is. */
export class AgentDefinitionDto {
  @ApiProperty() name!: string;
  @ApiProperty() description!: string;
  @ApiProperty({ description: 'System prompt.' }) instructions!: string;
  @ApiProperty({ type: String, nullable: true, description: '`provider:model`; null = the deployment default.', example: 'scripted:echo' }) model!: string | null;
  @ApiProperty({ type: 'array', items: TOOL_SCHEMA, description: 'MCP header values and credentials in server URLs are shown as "***".' }) tools!: object[];
  @ApiProperty({ enum: ['default', 'always_ask', 'always_trust'] }) tool_approval_mode!: string;
  @ApiProperty({ type: [String], nullable: true, description: 'Models callers who do not manage the agent may switch to; null: none.' }) allowed_models!: string[] | null;
  @ApiProperty({ description: 'Callers who do not manage the agent may raise the approval mode, never lower it.' }) tool_approval_pinned!: boolean;
  @ApiProperty({ type: AgentLimitsInputDto, description: 'The limits the definition sets (the rest took their defaults).' }) limits!: AgentLimitsInputDto;
  @ApiProperty({ type: AgentContextDto }) context!: AgentContextDto;
  @ApiProperty({ type: MultiAgentDto, nullable: true }) multi_agent!: MultiAgentDto | null;
  @ApiProperty({ enum: ['public', 'private'] }) visibility!: string;
  @ApiProperty({ type: EnvironmentParamDto, nullable: true, description: 'The default environment as normalised (env values shown as "***"); null: none.' }) environment!: EnvironmentParamDto | null;
  @ApiProperty({ type: SessionTtlDto, nullable: true, description: 'Its sessions\' TTL; null: none.' }) ttl!: SessionTtlDto | null;
}

/** One version of a saved agent: what a create or replace wrote. */
export class AgentVersionDto {
  @ApiProperty({ enum: ['agent.version'] }) object!: 'agent.version';
  @ApiProperty({ example: 'support-bot' }) agent_id!: string;
  @ApiProperty({ type: 'integer', minimum: 1, description: 'The agent\'s `yuxi.version` this definition had; also the list\'s cursor (`first_id`, `last_id`, `after`).' }) version!: number;
  @ApiProperty({ type: AgentDefinitionDto }) definition!: AgentDefinitionDto;
  @ApiProperty({ type: 'integer', description: 'Unix seconds: when the version was written.' }) created_at!: number;
  @ApiProperty({ type: String, nullable: true, description: 'The user who wrote it (null: the deployment, e.g. AGENTS_FILE, or a version from before the history was kept).' }) actor_id!: string | null;
}

export class AgentVersionListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AgentVersionDto] }) data!: AgentVersionDto[];
  @ApiProperty({ type: String, nullable: true, description: 'The first version of the page, as a string.' }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The last version of the page, as a string: the next page\'s `after`.' }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
