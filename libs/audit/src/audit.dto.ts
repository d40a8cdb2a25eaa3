import { ApiProperty } from '@nestjs/swagger';

export class AuditTargetDto {
  @ApiProperty({ enum: ['api_key', 'agent', 'session'] }) type!: string;
  @ApiProperty() id!: string;
}

export class AuditEntryDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['audit_entry'] }) object!: 'audit_entry';
  @ApiProperty({ enum: ['api_key.created', 'api_key.revoked', 'agent.created', 'agent.replaced', 'agent.deleted', 'session.cancel_requested'] }) action!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The user who acted (null: the deployment itself, e.g. AGENTS_FILE).' }) actor_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The API key used (null for a user token).' }) key_id!: string | null;
  @ApiProperty({ type: AuditTargetDto }) target!: AuditTargetDto;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'Names, access levels, versions; never secrets.' }) details!: Record<string, unknown>;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
}

export class AuditListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AuditEntryDto] }) data!: AuditEntryDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}
