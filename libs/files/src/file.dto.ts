import { ApiProperty } from '@nestjs/swagger';
import { unixSeconds } from '#libs/database';
import type { FileEntity } from './file.entity.js';

const FILE_ID_EXAMPLE = '0123456789abcdef0123456789abcdef';

export class FileYuxiDto {
  @ApiProperty({ description: 'SHA-256 of the stored bytes, lowercase hex.', example: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08' }) sha256!: string;
}

/** A draft file: uploaded, not attached to anything yet. */
export class FileDto {
  @ApiProperty({ description: '32 hexadecimal characters.', example: FILE_ID_EXAMPLE, pattern: '^[0-9a-f]{32}$' }) id!: string;
  @ApiProperty({ enum: ['file'] }) object!: 'file';
  @ApiProperty({ description: 'The uploaded filename, sanitised: its last path segment, without control or reserved characters, at most 255 bytes.', example: 'report.pdf' })
  filename!: string;
  @ApiProperty({ description: 'Size in bytes (at most 5 MiB).', example: 1024 }) bytes!: number;
  @ApiProperty({ description: 'The type detected from the bytes (the client-sent type is ignored).', example: 'application/pdf' }) mime_type!: string;
  @ApiProperty({ description: 'Unix seconds.', example: 1791504000 }) created_at!: number;
  @ApiProperty({ description: 'Unix seconds after which the draft is deleted unless attached (created_at + FILE_DRAFT_TTL_S, 24 h by default).', example: 1791590400 })
  expires_at!: number;
  @ApiProperty({ enum: ['draft'] }) status!: 'draft';
  @ApiProperty({ type: FileYuxiDto }) yuxi!: FileYuxiDto;
}

export class FileDeletedDto {
  @ApiProperty({ example: FILE_ID_EXAMPLE }) id!: string;
  @ApiProperty({ enum: ['file.deleted'] }) object!: 'file.deleted';
  @ApiProperty({ enum: [true] }) deleted!: true;
}

/** A file attached to a session input: a formal file reference of the session's workdir. */
export class AttachmentDto {
  @ApiProperty({ description: 'The file id (the draft\'s id, unchanged).', example: FILE_ID_EXAMPLE }) id!: string;
  @ApiProperty({ enum: ['yuxi.session.attachment'] }) object!: 'yuxi.session.attachment';
  @ApiProperty() session_id!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The input whose submission attached the file.' }) input_id!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The last user message of that input, once the input was consumed; null before.' })
  message_id!: string | null;
  @ApiProperty({ example: 'report.pdf' }) filename!: string;
  @ApiProperty({ example: 1024 }) bytes!: number;
  @ApiProperty({ example: 'application/pdf' }) mime_type!: string;
  @ApiProperty({ description: 'SHA-256 of the bytes, lowercase hex.' }) sha256!: string;
  @ApiProperty({
    enum: ['preparing', 'ready'],
    description: '`preparing`: accepted, being copied into the session workdir by a worker (its input cannot run yet); `ready`: in the workdir.',
  })
  status!: 'preparing' | 'ready';
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Artifact URL (a path on this API, authorised like the session) to download the file; null while preparing.',
    example: '/api/v1/agents/sessions/01970c4e-7a3b-7cc1-9e1a-4f3b2a1c0d9e/files/0123456789abcdef0123456789abcdef/content',
  })
  url!: string | null;
  @ApiProperty({ description: 'Unix seconds the file was uploaded.' }) created_at!: number;
  @ApiProperty({ type: Number, nullable: true, description: 'Unix seconds the file was attached.' }) bound_at!: number | null;
}

export class AttachmentListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [AttachmentDto] }) data!: AttachmentDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class AttachmentDeletedDto {
  @ApiProperty({ example: FILE_ID_EXAMPLE }) id!: string;
  @ApiProperty({ enum: ['yuxi.session.attachment.deleted'] }) object!: 'yuxi.session.attachment.deleted';
  @ApiProperty() session_id!: string;
  @ApiProperty({ enum: [true] }) deleted!: true;
}

export function toFileDto(file: FileEntity): FileDto {
  return {
    id: file.id,
    object: 'file',
    filename: file.filename,
    bytes: file.bytes,
    mime_type: file.mimeType,
    created_at: unixSeconds(file.createdAt),
    expires_at: unixSeconds(file.expiresAt) ?? unixSeconds(file.createdAt),
    status: 'draft',
    yuxi: { sha256: file.sha256 },
  };
}

/** Where a session file's bytes are served (GET, authorised like the session). */
export function sessionFileUrl(sessionId: string, fileId: string): string {
  return `/api/v1/agents/sessions/${sessionId}/files/${fileId}/content`;
}

export function toAttachmentDto(file: FileEntity): AttachmentDto {
  const ready = file.status === 'ready';
  return {
    id: file.id,
    object: 'yuxi.session.attachment',
    session_id: file.sessionId ?? '',
    input_id: file.inputId,
    message_id: file.messageId,
    filename: file.filename,
    bytes: file.bytes,
    mime_type: file.mimeType,
    sha256: file.sha256,
    status: ready ? 'ready' : 'preparing',
    url: ready && file.sessionId ? sessionFileUrl(file.sessionId, file.id) : null,
    created_at: unixSeconds(file.createdAt),
    bound_at: unixSeconds(file.boundAt),
  };
}
