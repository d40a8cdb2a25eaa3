import { ApiProperty } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';
import { LIFECYCLE_CLOCK_MAX_OFFSET_S } from '#libs/database';

export class SetLifecycleClockDto {
  @ApiProperty({ type: 'integer', minimum: -LIFECYCLE_CLOCK_MAX_OFFSET_S, maximum: LIFECYCLE_CLOCK_MAX_OFFSET_S, description: 'Seconds the lifecycle clock runs ahead of (or, negative, behind) the database\'s; 0 puts it back.' })
  @IsInt()
  @Min(-LIFECYCLE_CLOCK_MAX_OFFSET_S)
  @Max(LIFECYCLE_CLOCK_MAX_OFFSET_S)
  offset_s!: number;
}

export class LifecycleClockDto {
  @ApiProperty({ enum: ['lifecycle_clock'] }) object!: 'lifecycle_clock';
  @ApiProperty({ type: 'integer' }) offset_s!: number;
  @ApiProperty({ type: 'integer', description: 'The lifecycle clock now (Unix seconds): what session TTLs and retention go by.' }) now!: number;
}
