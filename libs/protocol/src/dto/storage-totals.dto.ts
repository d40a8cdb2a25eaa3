import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsString, IsUUID, Length, Max, Min } from 'class-validator';
import { SessionOwnerDto } from './admin-session.dto.js';
import { OptionalNotNull } from './validators.js';

/** The operators' storage totals (`GET /api/v1/admin/storage`): every filter narrows. */
export class StorageTotalsQueryDto {
  @ApiPropertyOptional({ enum: ['owner', 'project'], default: 'owner', description: '`owner`: one total per owner (all its sessions); `project`: one per project of an owner (its sessions in that project).' })
  @OptionalNotNull()
  @IsIn(['owner', 'project'])
  by?: 'owner' | 'project';
  @ApiPropertyOptional({ format: 'uuid', description: 'Totals of this owner only (a user id of the users list).' }) @OptionalNotNull() @IsUUID() owner_id?: string;
  @ApiPropertyOptional({ minLength: 1, maxLength: 128, description: 'The total of this project only (only with `by=project`: 422 `validation_failed` with `by=owner`).' }) @OptionalNotNull() @IsString() @Length(1, 128) project_id?: string;
  @ApiPropertyOptional({ minLength: 1, maxLength: 200, description: 'The `last_id` of the previous page (400 `invalid_cursor` when it is no total of this list).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 200)
  after?: string;
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, description: 'Page size (default 50).' }) @OptionalNotNull() @Type(() => Number) @IsInt() @Min(1) @Max(100) limit?: number;
}

export class StorageTotalDto {
  @ApiProperty({ description: 'The total\'s id in this list (pass it as `after`): the owner id, or `{owner_id}/{project_id}` for a project\'s.' }) id!: string;
  @ApiProperty({ enum: ['yuxi.storage.total'] }) object!: 'yuxi.storage.total';
  @ApiProperty({ format: 'uuid' }) owner_id!: string;
  @ApiProperty({ type: SessionOwnerDto }) owner!: SessionOwnerDto;
  @ApiProperty({ type: String, nullable: true, description: 'Null: the owner\'s total over all its sessions.' }) project_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The project\'s name (null for an owner\'s total, a deleted project, or a label from before projects).' }) project_name!: string | null;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The live sessions\' stored bytes (each as `GET …/sessions/{id}/storage` counts its `total_bytes`), as last measured; a deleted session leaves it at the accounting\'s next pass.' }) bytes!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The rows those bytes are in (the sessions\' rows in each table, and their workspace versions).' }) rows!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Sessions counted: the live ones measured at least once (a deleted session is not counted from the accounting\'s next pass, though its rows are stored until it is purged).' }) sessions!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds: when a measurement (or a delete, or a purge) of one of its sessions last changed it (null: none measured yet). A session is measured again after its next activity, within the storage accounting interval (RETENTION_SWEEP_MS).' })
  measured_at!: number | null;
  @ApiProperty({ type: 'integer', description: 'Unix seconds: when this total last changed (each measurement adds what changed in its session; an hourly re-sum from the sessions\' measurements corrects it).' }) summed_at!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'The deployment\'s per-owner quota (STORAGE_QUOTA_BYTES) an owner\'s total is held to; null: none.' }) quota_bytes!: number | null;
}

export class StorageTotalListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [StorageTotalDto] }) data!: StorageTotalDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class ProjectStorageDto {
  @ApiProperty({ enum: ['yuxi.project.storage'] }) object!: 'yuxi.project.storage';
  @ApiProperty({ format: 'uuid' }) project_id!: string;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The bytes the project\'s live sessions store (each as `GET …/sessions/{id}/storage` counts its `total_bytes`; the project\'s shared workspace is counted on none of them), as last measured.' }) bytes!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The rows those bytes are in.' }) rows!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Live sessions counted (a deleted one not from the accounting\'s next pass).' }) sessions!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds: the latest measurement of one of its sessions (null: none yet). Sessions are measured after their activity by the worker, so the figures lag by up to the storage accounting interval.' })
  measured_at!: number | null;
}
