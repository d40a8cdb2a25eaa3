import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsString, IsUUID, Length } from 'class-validator';
import { METADATA_SCHEMA } from './session.dto.js';
import { IsSessionMetadata, OptionalNotNull } from './validators.js';

/** `POST /sessions/{id}/fork`: where the fork starts (at most one of the two turn ids) and its own title and labels. */
export class ForkSessionDto {
  @ApiPropertyOptional({
    format: 'uuid',
    description: 'The fork inherits the history up to the end of this finished turn (one the source shows, inherited ones included). Omitted with `before_turn_id`: the last finished turn.',
  })
  @OptionalNotNull()
  @IsUUID()
  after_turn_id?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'The fork inherits the history up to the start of this turn (edit and resend); any started turn the source shows. Not with `after_turn_id`.' })
  @OptionalNotNull()
  @IsUUID()
  before_turn_id?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 200, description: 'The fork\'s title; omitted: the source\'s.' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 200)
  title?: string;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: `The fork's labels (replace the source's); omitted: the source's. ${METADATA_SCHEMA.description}` })
  @OptionalNotNull()
  @IsSessionMetadata()
  metadata?: Record<string, string>;
}
