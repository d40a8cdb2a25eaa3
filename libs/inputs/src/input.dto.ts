import { ApiProperty } from '@nestjs/swagger';

export class InputContentBlockDto {
  @ApiProperty({ enum: ['input_text', 'input_image'] }) type!: string;
  @ApiProperty({ required: false }) text?: string;
  @ApiProperty({ required: false, description: 'Inline data URL.' }) image_url?: string;
}

export class InputMessageDto {
  @ApiProperty({ enum: ['user'] }) role!: 'user';
  @ApiProperty({ type: [InputContentBlockDto] }) content!: InputContentBlockDto[];
}

export class InputDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['yuxi.session.input'] }) object!: 'yuxi.session.input';
  @ApiProperty() session_id!: string;
  @ApiProperty({ enum: ['pending', 'consumed', 'cancelled'] }) status!: string;
  @ApiProperty({ enum: ['follow_up', 'steer'] }) mode!: string;
  @ApiProperty({ type: 'integer', minimum: 1, description: 'Position in the per-session received order.' }) received_seq!: number;
  @ApiProperty({ type: [InputMessageDto], description: 'The messages exactly as received, in order.' }) messages!: InputMessageDto[];
  @ApiProperty({ type: [String] }) attachment_file_ids!: string[];
  @ApiProperty({ type: [Object], description: 'The attachments of the submission that still exist (none until file attachments are available).' })
  attachments!: object[];
  @ApiProperty({ enum: ['ready', 'preparing'], description: 'Inputs without attachments are always ready.' }) attachment_status!: string;
  @ApiProperty({ type: String, nullable: true }) attachment_error!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The turn that consumed the input; null while pending or after cancellation.' })
  turn_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) run_id!: string | null;
  @ApiProperty({ type: 'integer', description: 'Unix seconds the input was durably received.' }) received_at!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds the input was projected into history (consumed).' })
  created_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds the input was cancelled.' }) cancelled_at!: number | null;
  @ApiProperty({ description: 'Frozen model of this input.' }) model!: string;
}
