import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsDefined, IsIn, IsInt, IsObject, IsString, IsUUID, Length, Max, Min, ValidateNested } from 'class-validator';
import { OptionalNotNull } from '#libs/errors';
import { MAX_UNIX_SECONDS } from '#libs/protocol';

/** At most this many sessions are cancelled per call: a larger match is worked through by calling again (`has_more`). */
export const BULK_CANCEL_MAX = 1000;
/** How many matching session ids a dry run shows. */
export const BULK_CANCEL_SAMPLE = 100;
export const BULK_CANCEL_STATUSES = ['in_progress', 'requires_action'] as const;

/** Which sessions a bulk cancel selects: those with an active turn not already being cancelled, narrowed by every field given. */
export class BulkCancelFilterDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 64, description: 'Only sessions of this agent.' }) @OptionalNotNull() @IsString() @Length(1, 64) agent_id?: string;
  @ApiPropertyOptional({ format: 'uuid', description: 'Only sessions of this user.' }) @OptionalNotNull() @IsUUID() owner_id?: string;
  @ApiPropertyOptional({
    enum: BULK_CANCEL_STATUSES,
    description: 'Only sessions whose active turn is in this status (`requires_action`: waiting at a waitpoint). Without it: both.',
  })
  @OptionalNotNull()
  @IsIn(BULK_CANCEL_STATUSES)
  status?: (typeof BULK_CANCEL_STATUSES)[number];
  @ApiPropertyOptional({ type: 'integer', description: 'Only sessions created before this time (Unix seconds).' }) @OptionalNotNull() @IsInt() @Min(0) @Max(MAX_UNIX_SECONDS) created_before?: number;
  @ApiPropertyOptional({ type: 'integer', description: 'Only sessions created after this time (Unix seconds).' }) @OptionalNotNull() @IsInt() @Min(0) @Max(MAX_UNIX_SECONDS) created_after?: number;
}

export class BulkCancelSessionsDto {
  @ApiProperty({ type: BulkCancelFilterDto, description: 'An empty filter matches every session with an active turn: run it with `dry_run: true` first.' })
  @IsDefined()
  @IsObject()
  @ValidateNested()
  @Type(() => BulkCancelFilterDto)
  filter!: BulkCancelFilterDto;

  @ApiProperty({ description: '`true`: only count the matches (no Idempotency-Key needed); `false`: ask each matching session\'s active turn to cancel.' })
  @IsBoolean()
  dry_run!: boolean;
}

export class BulkCancelSkippedDto {
  @ApiProperty() session_id!: string;
  @ApiProperty({ description: 'Why it was not cancelled: `state_conflict` (its turn ended meanwhile) or `not_found` (deleted meanwhile).' }) code!: string;
}

export class BulkCancelResultDto {
  @ApiProperty({ enum: ['admin.bulk_cancel'] }) object!: 'admin.bulk_cancel';
  @ApiProperty() dry_run!: boolean;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Sessions matching the filter when the call selected them.' }) matched!: number;
  @ApiProperty({ type: 'integer', description: `At most this many sessions are cancelled per call (${BULK_CANCEL_MAX}).` }) limit!: number;
  @ApiProperty({
    type: [String],
    description: `A dry run: the first ${BULK_CANCEL_SAMPLE} matching sessions, oldest first. A real run: the sessions whose active turn was asked to cancel (or, waiting at a waitpoint, cancelled at once).`,
  })
  session_ids!: string[];
  @ApiProperty({ type: [BulkCancelSkippedDto], description: 'A real run: selected sessions left as they were (always empty on a dry run).' }) skipped!: BulkCancelSkippedDto[];
  @ApiProperty({ description: 'More sessions matched than this call acted on: call again (with a new Idempotency-Key) for the rest.' }) has_more!: boolean;
}
