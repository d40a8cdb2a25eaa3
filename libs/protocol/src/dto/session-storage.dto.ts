import { ApiProperty } from '@nestjs/swagger';

export class RowStorageDto {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The session\'s own rows in the table.' }) rows!: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'The bytes those rows take as stored: each column\'s value as kept (compressed ones compressed, values moved out of line at their stored size) plus a 24-byte tuple header per row; not the table\'s indexes, dead row versions or free space.',
  })
  bytes!: number;
}

export class FileStorageDto {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Files the session holds: attachments (bound or in its workdir), its inputs\' inline images and its tools\' images. An attachment copied into the workspace (`attachments/`) is stored twice, as the file and in the workspace, and counted in both.' })
  count!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Their bytes as recorded when they were stored.' }) bytes!: number;
}

export class WorkspaceStorageDto {
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      'The bytes of the files the workspace holds now (its latest version\'s recorded sizes). Blobs are stored once per content: a file several versions, forks or workspaces hold is one blob.',
  })
  bytes!: number;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'How many files the workspace holds now.' }) files!: number;
  @ApiProperty({ type: RowStorageDto, description: 'The workdir\'s own versions (one per commit: a manifest of paths, hashes and sizes) as stored rows.' })
  versions!: RowStorageDto;
  @ApiProperty({
    description:
      'The workspace is the session\'s project\'s or its tree root\'s (shared with their other sessions): shown, but not in `total_bytes` (a tree\'s counts on its root).',
  })
  shared!: boolean;
  @ApiProperty({
    description:
      'The session is a fork whose workspace has not committed a version of its own yet: its files are its source\'s (counted there), shown, but not in `total_bytes`.',
  })
  inherited!: boolean;
}

export class SessionStorageDto {
  @ApiProperty({ enum: ['yuxi.session.storage'] }) object!: 'yuxi.session.storage';
  @ApiProperty({ format: 'uuid' }) session_id!: string;
  @ApiProperty({ type: RowStorageDto, description: 'The session\'s own history: messages, tool calls and outputs, compactions. A fork\'s inherited history (listed by `GET …/items`) is its source\'s rows, counted there.' }) items!: RowStorageDto;
  @ApiProperty({ type: RowStorageDto, description: 'The durable events of the event stream (the outbox the stream is replayed and relayed from).' }) events!: RowStorageDto;
  @ApiProperty({ type: RowStorageDto, description: 'The inputs received: messages and control events.' }) inputs!: RowStorageDto;
  @ApiProperty({ type: RowStorageDto, description: 'The turns.' }) turns!: RowStorageDto;
  @ApiProperty({ type: RowStorageDto, description: 'The runs (execution segments of the turns).' }) runs!: RowStorageDto;
  @ApiProperty({ type: RowStorageDto, description: 'The recorded steps of the runs: model calls, tool calls, waitpoints.' }) steps!: RowStorageDto;
  @ApiProperty({ type: RowStorageDto, description: 'The exact model requests kept for audit (`MODEL_REQUEST_AUDIT`).' }) model_requests!: RowStorageDto;
  @ApiProperty({ type: FileStorageDto }) files!: FileStorageDto;
  @ApiProperty({ type: WorkspaceStorageDto, nullable: true, description: 'Null: the session\'s workdir has no workspace (no environment was used).' })
  workspace!: WorkspaceStorageDto | null;
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The sum of the bytes above (a shared or inherited workspace excluded). Read in one snapshot, under a time limit: the read costs one row fetch per row the session owns.' }) total_bytes!: number;
  @ApiProperty({ type: 'integer', description: 'Unix seconds: when the figures were read.' }) measured_at!: number;
}
