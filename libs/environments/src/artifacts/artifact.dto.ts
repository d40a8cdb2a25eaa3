import { ApiProperty } from '@nestjs/swagger';
import { unixSeconds } from '#libs/database';
import type { Artifact } from './artifacts.repository.js';

const ARTIFACT_ID_EXAMPLE = '01933b8e-8f1e-7c4a-9a3e-6f1d2c3b4a59';

/** A file a call of the session wrote (created or changed) in its environment, as it was then: the upstream `agent.session.artifact`. */
export class ArtifactDto {
  @ApiProperty({ example: ARTIFACT_ID_EXAMPLE }) id!: string;
  @ApiProperty({ enum: ['agent.session.artifact'] }) object!: 'agent.session.artifact';
  @ApiProperty() session_id!: string;
  @ApiProperty({ description: 'The environment (workspace) the file was written in: the session\'s workdir, shared by its tree and its project.' }) environment_id!: string;
  @ApiProperty({ description: 'The absolute path in the environment.', example: '/workspace/out/report.md' }) path!: string;
  @ApiProperty({ description: 'Size in bytes.', example: 1024 }) size_bytes!: number;
  @ApiProperty({ type: String, nullable: true, description: 'The turn whose call wrote the file.' }) turn_id!: string | null;
  @ApiProperty({ description: 'Unix seconds.', example: 1791504000 }) created_at!: number;
}

export class ArtifactListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [ArtifactDto] }) data!: ArtifactDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class ArtifactDeletedDto {
  @ApiProperty({ example: ARTIFACT_ID_EXAMPLE }) id!: string;
  @ApiProperty({ enum: ['agent.session.artifact.deleted'] }) object!: 'agent.session.artifact.deleted';
  @ApiProperty({ enum: [true] }) deleted!: true;
}

export function toArtifactDto(artifact: Artifact): ArtifactDto {
  return {
    id: artifact.id,
    object: 'agent.session.artifact',
    session_id: artifact.sessionId,
    environment_id: artifact.environmentId,
    path: artifact.path,
    size_bytes: artifact.sizeBytes,
    turn_id: artifact.turnId,
    created_at: unixSeconds(artifact.createdAt),
  };
}
