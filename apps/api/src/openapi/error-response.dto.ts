import { ApiProperty } from '@nestjs/swagger';
import { ERROR_CODES } from '#libs/errors';

export class ErrorDetailDto {
  @ApiProperty({ enum: Object.keys(ERROR_CODES), description: 'Stable machine-readable code; branch on this, never on message.' })
  code!: string;
  @ApiProperty() message!: string;
  @ApiProperty({ enum: ['invalid_request', 'authentication', 'permission', 'not_found', 'invalid_state', 'unavailable', 'internal'] })
  type!: string;
  @ApiProperty() retryable!: boolean;
  @ApiProperty({ description: 'Same as the X-Request-Id response header.' }) request_id!: string;
  @ApiProperty({ type: Object, description: 'Structured diagnostics; validation errors list `fields: [{field, errors}]`.' })
  details!: Record<string, unknown>;
}

export class ErrorResponseDto {
  @ApiProperty({ type: ErrorDetailDto }) error!: ErrorDetailDto;
}
