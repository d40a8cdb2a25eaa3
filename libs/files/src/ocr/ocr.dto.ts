import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsString, Matches, Max, Min } from 'class-validator';
import { OptionalNotNull } from '#libs/errors';

const FILE_ID_EXAMPLE = '0123456789abcdef0123456789abcdef';
/** The largest thumbnail side: a thumbnail, not a resampled original. */
export const THUMBNAIL_MAX_SIDE = 1024;
export const THUMBNAIL_DEFAULT_SIDE = 256;

export class ParsedPageDto {
  @ApiProperty({ type: 'integer', description: 'From 1.', example: 1 }) page!: number;
  @ApiProperty({ description: 'The page\'s text (empty for a scanned page left unrecognised, see `pages_not_recognised`).', example: 'Quarterly report\nRevenue grew 12%.\n' })
  text!: string;
  @ApiProperty({ enum: ['text', 'ocr'], description: '`text`: a text file or a PDF\'s text layer; `ocr`: recognised from the image (an image file, or a scanned PDF page\'s largest image).' })
  source!: 'text' | 'ocr';
}

/** `POST /api/agent/files/{file_id}/parse`: the text of a draft, page by page. */
export class ParsedFileDto {
  @ApiProperty({ enum: ['file.parse'] }) object!: 'file.parse';
  @ApiProperty({ example: FILE_ID_EXAMPLE }) file_id!: string;
  @ApiProperty({ example: 'image/png' }) mime_type!: string;
  @ApiProperty({ type: [ParsedPageDto] }) pages!: ParsedPageDto[];
  @ApiProperty({ type: 'integer', description: 'A PDF\'s page count: more than the pages listed when only the first 50 were read (1 for other files).', example: 1 })
  total_pages!: number;
  @ApiProperty({ type: 'integer', description: 'Scanned PDF pages not recognised: OCR reads at most the first 10 scanned pages and stops at 100 000 characters.', example: 0 })
  pages_not_recognised!: number;
}

/** `POST /api/agent/images`: which draft image, and the box its thumbnail fits in. */
export class CreateThumbnailDto {
  @ApiProperty({ description: 'A draft image of the caller (PNG, JPEG, GIF or WebP; uploaded with POST /api/v1/agents/files).', pattern: '^[0-9a-f]{32}$', example: FILE_ID_EXAMPLE })
  @IsString()
  @Matches(/^[0-9a-f]{32}$/, { message: 'must be a file id (32 hexadecimal characters)' })
  file_id!: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: THUMBNAIL_MAX_SIDE, description: `The thumbnail's largest width. Omitted: ${THUMBNAIL_DEFAULT_SIDE}.`, example: THUMBNAIL_DEFAULT_SIDE })
  @OptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(THUMBNAIL_MAX_SIDE)
  width?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: THUMBNAIL_MAX_SIDE, description: `The thumbnail's largest height. Omitted: ${THUMBNAIL_DEFAULT_SIDE}.`, example: THUMBNAIL_DEFAULT_SIDE })
  @OptionalNotNull()
  @IsInt()
  @Min(1)
  @Max(THUMBNAIL_MAX_SIDE)
  height?: number;
}

export class ThumbnailDto {
  @ApiProperty({ enum: ['image.thumbnail'] }) object!: 'image.thumbnail';
  @ApiProperty({ example: FILE_ID_EXAMPLE }) file_id!: string;
  @ApiProperty({ enum: ['image/webp'] }) mime_type!: 'image/webp';
  @ApiProperty({ type: 'integer', description: 'Fits in the requested box, keeping the aspect ratio; never larger than the image.', example: 256 }) width!: number;
  @ApiProperty({ type: 'integer', example: 192 }) height!: number;
  @ApiProperty({ type: 'integer', description: 'Size of the WebP in bytes.', example: 5120 }) bytes!: number;
  @ApiProperty({ description: 'The thumbnail as a `data:image/webp;base64,…` URL (ready for an <img> src).', example: 'data:image/webp;base64,UklGRhYAAABXRUJQVlA4IAoAAAAwAQCdASoBAAEAAQAcJaQAA3AA/v3AgAA=' })
  data_url!: string;
}
