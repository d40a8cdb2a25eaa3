import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

const HOSTED = 'Present when `type` is `openai_hosted`.';

export class EnvironmentNetworkViewDto {
  @ApiProperty({ enum: ['disabled', 'restricted', 'enabled'], description: '`disabled` (the default): no network; `restricted`: only the allowed (and not blocked) domains, through the egress proxy; `enabled`: any public address, through the egress proxy.' })
  access!: 'disabled' | 'restricted' | 'enabled';
  @ApiProperty({ type: [String], description: '`restricted`: the domains (and their subdomains) commands may reach.' }) allowed_domains!: string[];
  @ApiProperty({ type: [String], description: 'Domains never reached, whatever else allows them.' }) blocked_domains!: string[];
}

export class EnvironmentFileViewDto {
  @ApiProperty({ enum: ['file_id'] }) type!: 'file_id';
  @ApiProperty({ description: 'The file\'s id in the environment (the uploaded file\'s id).' }) id!: string;
  @ApiProperty({ description: 'The uploaded file (POST /files) placed in the workspace.' }) file_id!: string;
  @ApiProperty({ example: '/workspace/data/input.csv', description: 'Its absolute path inside the environment.' }) path!: string;
}

export class EnvironmentLimitsViewDto {
  @ApiProperty({ type: 'integer', description: 'Wall time of one command, seconds.' }) timeout_s!: number;
  @ApiProperty({ type: 'integer', description: 'CPU time of one command, seconds.' }) cpu_s!: number;
  @ApiProperty({ type: 'integer', description: 'Memory of each process of a command, MiB.' }) memory_mb!: number;
  @ApiProperty({ type: 'integer', description: 'Processes and threads of a command at once.' }) processes!: number;
  @ApiProperty({ type: 'integer', description: 'The workspace\'s size (and the largest file), MiB.' }) disk_mb!: number;
}

export class EnvironmentPackagesViewDto {
  @ApiProperty({ type: [String] }) npm!: string[];
  @ApiProperty({ type: [String] }) python!: string[];
  @ApiProperty({ type: [String] }) system!: string[];
}

/**
 * The session resource's `environment`: `{type: "none"}`, or the hosted environment the session
 * works in (the upstream resource's fields, and this deployment's `env_names`,
 * `setup_command_count` and `limits`). Env values and setup command bodies are never shown.
 */
export class SessionEnvironmentViewDto {
  @ApiProperty({ enum: ['none', 'openai_hosted'], description: '`none`: the session runs without an execution environment; `openai_hosted`: in a sandboxed workspace hosted by this deployment.' })
  type!: 'none' | 'openai_hosted';
  @ApiPropertyOptional({ description: `${HOSTED} The workspace's id: the session's workdir (shared by its tree and its project).` }) id?: string;
  @ApiPropertyOptional({ type: EnvironmentNetworkViewDto, description: `${HOSTED} The effective network policy.` }) network?: EnvironmentNetworkViewDto;
  @ApiPropertyOptional({ type: [String], description: `${HOSTED} The names of the variables set for every command, sorted; their values are never shown.` })
  env_names?: string[];
  @ApiPropertyOptional({ type: [EnvironmentFileViewDto], description: `${HOSTED} Files placed in the workspace when it is first made.` }) files?: EnvironmentFileViewDto[];
  @ApiPropertyOptional({ type: 'integer', description: `${HOSTED} How many setup commands run when the workspace is first made; their bodies are never shown.` })
  setup_command_count?: number;
  @ApiPropertyOptional({ type: EnvironmentLimitsViewDto, description: `${HOSTED} The effective limits of each command (the deployment's defaults where neither the session nor its agent asked for less).` })
  limits?: EnvironmentLimitsViewDto;
  @ApiPropertyOptional({ type: [String], description: `${HOSTED} Always empty here.` }) capability_directories?: string[];
  @ApiPropertyOptional({ type: EnvironmentPackagesViewDto, description: `${HOSTED} Always empty lists here.` }) packages?: EnvironmentPackagesViewDto;
  @ApiPropertyOptional({ type: 'array', items: { type: 'object' }, description: `${HOSTED} Always empty here.` }) plugins?: object[];
  @ApiPropertyOptional({ type: 'array', items: { type: 'object' }, description: `${HOSTED} Always empty here.` }) skills?: object[];
}
