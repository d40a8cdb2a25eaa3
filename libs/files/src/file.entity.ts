import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { FileStatus } from './file-states.js';

/**
 * `uploading`: the row is written, the blob may not be (a crash leaves it for the sweep);
 * `draft`: uploaded, owner-scoped, expiring; `bound`: attached to a session input, its preparation
 * into the session's workdir unfinished; `ready`: in the workdir; `deleting`: a tombstone whose
 * blobs are being removed (invisible everywhere); `inline`: an inline image of a user message,
 * stored when its submission was accepted (never a draft or an attachment).
 */
export type { FileStatus } from './file-states.js';

/**
 * `upload`: POST /files (a draft, then maybe an attachment); `inline`: an `input_image` data URL of
 * a submission; `tool`: an image a tool result returned (`ready` in the session's workdir from the
 * transaction that recorded the result; no input).
 */
export type FileOrigin = 'upload' | 'inline' | 'tool';

@Entity('files')
export class FileEntity {
  @PrimaryColumn('char', { length: 32 }) id!: string;
  @Column('uuid', { name: 'owner_id' }) ownerId!: string;
  @Column('varchar') filename!: string;
  @Column('integer') bytes!: number;
  @Column('varchar', { name: 'mime_type' }) mimeType!: string;
  @Column('char', { length: 64 }) sha256!: string;
  @Column('varchar') status!: FileStatus;
  @Column('varchar') origin!: FileOrigin;
  /** The uploaded bytes, until preparation copied them into the workdir and cleaned them up. */
  @Column('varchar', { name: 'draft_key', nullable: true }) draftKey!: string | null;
  /** The file in its session's workdir. */
  @Column('varchar', { name: 'session_key', nullable: true }) sessionKey!: string | null;
  @Column('uuid', { name: 'session_id', nullable: true }) sessionId!: string | null;
  @Column('uuid', { name: 'input_id', nullable: true }) inputId!: string | null;
  /** The last user message of the input, once the input was consumed. */
  @Column('uuid', { name: 'message_id', nullable: true }) messageId!: string | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'expires_at', nullable: true }) expiresAt!: Date | null;
  @Column('timestamptz', { name: 'bound_at', nullable: true }) boundAt!: Date | null;
  @Column('timestamptz', { name: 'ready_at', nullable: true }) readyAt!: Date | null;
}

export const FILE_COLUMNS =
  'id, owner_id, filename, bytes, mime_type, sha256, status, origin, draft_key, session_key, session_id, input_id, message_id, created_at, expires_at, bound_at, ready_at';

export function fileFromRow(row: Record<string, unknown>): FileEntity {
  return {
    id: String(row.id),
    ownerId: String(row.owner_id),
    filename: String(row.filename),
    bytes: Number(row.bytes),
    mimeType: String(row.mime_type),
    sha256: String(row.sha256),
    status: row.status as FileStatus,
    origin: (row.origin as FileOrigin | undefined) ?? 'upload',
    draftKey: (row.draft_key as string | null) ?? null,
    sessionKey: (row.session_key as string | null) ?? null,
    sessionId: (row.session_id as string | null) ?? null,
    inputId: (row.input_id as string | null) ?? null,
    messageId: (row.message_id as string | null) ?? null,
    createdAt: row.created_at as Date,
    expiresAt: (row.expires_at as Date | null) ?? null,
    boundAt: (row.bound_at as Date | null) ?? null,
    readyAt: (row.ready_at as Date | null) ?? null,
  };
}
