import { ApiProperty } from '@nestjs/swagger';
import { AttachmentDto } from '#libs/files';
import { INPUT_MODES, INPUT_STATUSES } from '../machines/input-states.js';

export class InputContentBlockDto {
  @ApiProperty({ enum: ['input_text', 'input_image'] }) type!: string;
  @ApiProperty({ required: false }) text?: string;
  @ApiProperty({
    required: false,
    description:
      'input_image: where the image\'s bytes are. An inline image is stored as a session file when its submission is accepted, and this is then the path of its bytes on this API (`GET /api/v1/agents/sessions/{session_id}/files/{file_id}/content`, authorised like the session), not the data URL that was sent. Inputs received before images were stored as files keep their `data:` URL.',
    example: '/api/v1/agents/sessions/01970c4e-7a3b-7cc1-9e1a-4f3b2a1c0d9e/files/0123456789abcdef0123456789abcdef/content',
  })
  image_url?: string;
  @ApiProperty({ required: false, description: 'input_image: the session file holding the image (32 hexadecimal characters); absent on inputs that kept a data URL.', pattern: '^[0-9a-f]{32}$' })
  file_id?: string;
}

export class InputMessageDto {
  @ApiProperty({ enum: ['user'] }) role!: 'user';
  @ApiProperty({ type: [InputContentBlockDto] }) content!: InputContentBlockDto[];
}

export class InputDto {
  @ApiProperty() id!: string;
  @ApiProperty({ enum: ['yuxi.session.input'] }) object!: 'yuxi.session.input';
  @ApiProperty() session_id!: string;
  @ApiProperty({ enum: INPUT_STATUSES }) status!: string;
  @ApiProperty({ enum: INPUT_MODES }) mode!: string;
  @ApiProperty({ enum: ['message', 'compact'], description: '`compact`: a `yuxi.session.input.compact` request (no messages); its turn only compacts the context.' }) kind!: 'message' | 'compact';
  @ApiProperty({ type: 'integer', minimum: 1, description: 'Position in the per-session received order.' }) received_seq!: number;
  @ApiProperty({ type: [InputMessageDto], description: 'The messages exactly as received, in order.' }) messages!: InputMessageDto[];
  @ApiProperty({ type: [String], description: 'The file ids of the submission (`yuxi.attachment_file_ids`) exactly as received, in order; unchanged when an attachment is deleted later.' })
  attachment_file_ids!: string[];
  @ApiProperty({ type: [AttachmentDto], description: 'The attachments of the submission that still exist, in the order of attachment_file_ids.' })
  attachments!: AttachmentDto[];
  @ApiProperty({
    enum: ['ready', 'preparing'],
    description:
      '`preparing`: the attached files are being copied into the session workdir by a worker; the input cannot run yet, and no later follow-up runs before it. Inputs without attachments are always ready. A cancelled input becomes ready once its remaining files are prepared (or deleted: nothing is left to prepare).',
  })
  attachment_status!: 'preparing' | 'ready';
  @ApiProperty({ type: String, nullable: true, description: 'Why the last preparation attempt failed; the recovery sweep keeps retrying, at growing intervals up to 5 minutes apart (cancel the input to stop it from blocking the queue, then delete its attachments to give the preparation up). Null once ready.' })
  attachment_error!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The turn that consumed the input; null while pending or after cancellation.' })
  turn_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) run_id!: string | null;
  @ApiProperty({ type: 'integer', description: 'Unix seconds the input was durably received.' }) received_at!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds the input was projected into history (consumed).' })
  created_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds the input was cancelled.' }) cancelled_at!: number | null;
  @ApiProperty({ description: 'Frozen model of this input.' }) model!: string;
}
