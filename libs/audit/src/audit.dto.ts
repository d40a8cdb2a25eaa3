import { ApiProperty } from '@nestjs/swagger';
import { AUDIT_ACTIONS, AUDIT_TARGET_TYPES } from './audit-log.js';

export class AuditTargetDto {
  @ApiProperty({ enum: AUDIT_TARGET_TYPES }) type!: string;
  @ApiProperty() id!: string;
}

export class AuditEntryDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['audit_entry'] }) object!: 'audit_entry';
  @ApiProperty({
    enum: AUDIT_ACTIONS,
    description: '`user.role_changed`: an administrator granted or removed a role (`details.role`, `details.previous_role`); `session.operator_event`: an operator or administrator sent a control event to another owner\'s session through the admin route (`details.event_type`, `details.owner_id`); `session.cancel_requested`: an operator asked a session\'s active turn to cancel through bulk cancel (`details.idempotency_key` names the call); `session.model_requests_read`: an administrator read a page of a run\'s exact model requests (`details.run_id`, `details.owner_id`, `details.step_ids`: the requests the page showed); `webhook_endpoint.secret_rotated`: an owner rotated an endpoint\'s signing secret; `webhook_endpoint.disabled`: deliveries disabled an endpoint (`details.reason` gone: it answered 410, failing: it failed for WEBHOOK_DISABLE_AFTER_S; `details.owner_id`, `details.status_code`); `webhook_endpoint.recovered`: an endpoint that was failing took a delivery again (`details.owner_id`); `model_price.set`, `model_price.deleted`: an administrator set or removed a model\'s price (`details.model`; the target id is the model, cut at 128 characters).',
  })
  action!: string;
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
