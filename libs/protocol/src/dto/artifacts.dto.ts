import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsUUID } from 'class-validator';
import { ListQueryDto } from './session.dto.js';
import { OptionalNotNull } from './validators.js';

/** `GET …/sessions/{id}/artifacts`: the standard cursor query, and the upstream `environment_id` filter. */
export class ArtifactListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ format: 'uuid', description: 'Only the artifacts written in this environment (the session\'s workdir).' })
  @OptionalNotNull()
  @IsUUID()
  environment_id?: string;
}
