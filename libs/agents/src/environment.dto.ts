import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ENVIRONMENT_BOUNDS, UNSUPPORTED_ENVIRONMENT_FIELDS } from './environment-param.js';

// The `environment` param of session create and of a saved agent, for the OpenAPI document (the
// body is read by parseEnvironmentParam, which names each problem's field).

const UNSUPPORTED_NOTE = `The upstream fields this deployment has no feature for (${UNSUPPORTED_ENVIRONMENT_FIELDS.map((field) => `\`${field}\``).join(', ')}) are 422 naming the field unless null.`;
const DOMAINS = `Domain names (each covers its subdomains; no wildcards, ports or addresses), at most ${ENVIRONMENT_BOUNDS.domainCount}.`;

export class EnvironmentNetworkParamDto {
  @ApiProperty({
    enum: ['disabled', 'restricted', 'enabled'],
    description:
      '`disabled` (the default when `network` is omitted): no network at all; `restricted`: only the allowed (and not blocked) domains, through the egress proxy; `enabled`: any public address, through the egress proxy. Private and metadata addresses are never reached, whatever the lists say.',
  })
  access!: 'disabled' | 'restricted' | 'enabled';
  @ApiPropertyOptional({ type: [String], nullable: true, description: `\`restricted\` only: the domains commands may reach. ${DOMAINS}`, example: ['pypi.org'] })
  allowed_domains?: string[] | null;
  @ApiPropertyOptional({ type: [String], nullable: true, description: `\`restricted\` only: domains never reached. ${DOMAINS}` }) blocked_domains?: string[] | null;
}

export class EnvironmentFileParamDto {
  @ApiProperty({ enum: ['file_id'] }) type!: 'file_id';
  @ApiProperty({ pattern: '^[0-9a-f]{32}$', description: 'A file of the caller (POST /files): a live draft, or a file attached to one of their sessions. Another caller\'s, unknown or expired: 404.' })
  file_id!: string;
  @ApiProperty({
    maxLength: ENVIRONMENT_BOUNDS.pathChars,
    example: 'data/input.csv',
    description: 'Where it is placed: relative to the workspace, or absolute under `/workspace`; no `..` or empty segments, not under `attachments/` (where the session\'s attachments go); each path once.',
  })
  path!: string;
}

const LIMIT = 'At least 1 and at most the deployment\'s ceiling (SANDBOX_*_MAX; above it: 422 naming the field); omitted: the agent\'s, else the deployment\'s default.';

export class EnvironmentLimitsParamDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: `Wall time of one command, seconds. ${LIMIT}` }) timeout_s?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: `CPU time of one command, seconds. ${LIMIT}` }) cpu_s?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: `Memory of each process, MiB. ${LIMIT}` }) memory_mb?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: `Processes and threads at once. ${LIMIT}` }) processes?: number;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, description: `The workspace's size (and the largest file), MiB. ${LIMIT}` }) disk_mb?: number;
}

/**
 * The upstream Agents API's `environment` param. `none`: no execution environment;
 * `openai_hosted`: a sandboxed workspace hosted by this deployment (the name is the upstream wire
 * value); `self_hosted` is 422 `environment_unavailable`. The upstream fields this deployment has
 * no feature for (UNSUPPORTED_ENVIRONMENT_FIELDS) are 422 naming the field; the description says so.
 */
export class EnvironmentParamDto {
  @ApiProperty({
    enum: ['none', 'openai_hosted', 'self_hosted'],
    description:
      `\`none\`: no execution environment. \`openai_hosted\`: a workspace hosted by this deployment, where the harness's tools (shell, write_file, apply_patch, list_files, read_file) run each command in a sandbox; a deployment without a sandbox runtime (SANDBOX_RUNTIME=none) answers 422 \`environment_unavailable\`. \`self_hosted\`: 422 \`environment_unavailable\`. ${UNSUPPORTED_NOTE}`,
  })
  type!: 'none' | 'openai_hosted' | 'self_hosted';
  @ApiPropertyOptional({ type: EnvironmentNetworkParamDto, nullable: true }) network?: EnvironmentNetworkParamDto | null;
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string', maxLength: ENVIRONMENT_BOUNDS.envValueChars },
    nullable: true,
    description: `Variables set for every command (nothing of the server's own environment reaches a command): at most ${ENVIRONMENT_BOUNDS.envCount}, names of letters, digits and _ (not starting with a digit, at most ${ENVIRONMENT_BOUNDS.envNameChars} characters), ${ENVIRONMENT_BOUNDS.envTotalChars} characters in all. Values are never shown back.`,
    example: { LANG: 'C.UTF-8' },
  })
  env?: Record<string, string> | null;
  @ApiPropertyOptional({ type: [EnvironmentFileParamDto], nullable: true, maxItems: ENVIRONMENT_BOUNDS.fileCount, description: 'Files placed in the workspace when it is first made. Not on an agent\'s default environment.' })
  files?: EnvironmentFileParamDto[] | null;
  @ApiPropertyOptional({
    type: 'array',
    nullable: true,
    maxItems: ENVIRONMENT_BOUNDS.setupCommandCount,
    items: {
      oneOf: [
        { type: 'string', maxLength: ENVIRONMENT_BOUNDS.setupCommandChars },
        {
          type: 'object',
          required: ['command'],
          properties: { command: { type: 'string', maxLength: ENVIRONMENT_BOUNDS.setupCommandChars }, cwd: { type: 'string', nullable: true, description: '`/workspace` (the default) or a directory in it.' } },
        },
      ],
    },
    description: 'Run once, in order, when the workspace is first made: a command, or the upstream `{command, cwd?}`. Never shown back (the resource counts them).',
  })
  setup_commands?: (string | { command: string; cwd?: string | null })[] | null;
  @ApiPropertyOptional({ type: EnvironmentLimitsParamDto, nullable: true, description: 'This deployment\'s addition: the limits of each command.' }) limits?: EnvironmentLimitsParamDto | null;
}

/**
 * How a session's environment param meets its agent's default, said once for the session create
 * and the agent documents.
 */
export const ENVIRONMENT_DEFAULT_RULE =
  'With a saved agent that has a default `environment`: omitted, the session gets the agent\'s; `{"type": "none"}`, none (the tightest there is); `openai_hosted`, the agent\'s tightened by the session\'s: network access only lower (disabled < restricted < enabled; restricted to restricted only with allowed domains within the agent\'s and every domain it blocks still blocked), each limit at most the agent\'s, `env` the agent\'s with the session\'s added (the session\'s value where both name a variable), `setup_commands` the agent\'s then the session\'s, `files` the session\'s. Asking for more than the agent allows is 422 `environment_loosened` naming each field.';

/** A saved agent's default environment as its resource shows it. */
export class AgentEnvironmentDto {
  @ApiProperty({ enum: ['openai_hosted'] }) type!: 'openai_hosted';
  @ApiProperty({ type: EnvironmentNetworkParamDto }) network!: EnvironmentNetworkParamDto;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' }, description: 'The variables it sets, their values shown as "***".', example: { LANG: '***' } }) env!: Record<string, string>;
  @ApiPropertyOptional({ type: [String], description: 'Shown to those who see the agent\'s instructions (its managers).' }) setup_commands?: string[];
  @ApiProperty({ type: EnvironmentLimitsParamDto, description: 'Only the limits the agent sets (the rest: the deployment\'s defaults).' }) limits!: EnvironmentLimitsParamDto;
}
