import { Body, Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { CreateThumbnail, CreateThumbnailDto, ParseDraftFile, ParsedFileDto, ThumbnailDto } from '#libs/files';
import { PARSED_FILE_EXAMPLE, THUMBNAIL_EXAMPLE, THUMBNAIL_REQUEST_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

const USER_TOKEN_ONLY = 'For signed-in users only: send a user token (JWT). Every API key, whatever its access, gets 403 `user_token_required` (these are the product\'s private routes).';

/**
 * The product's private file routes (manual OCR pre-parse and image
 * thumbnails under /api/agent, outside the public /api/v1 surface), for user tokens only.
 */
@ApiTags(TAGS.productFiles.name)
@ApiBearerAuth()
@Controller('api/agent')
export class AgentFilesController {
  constructor(
    private readonly parseDraftFile: ParseDraftFile,
    private readonly createThumbnail: CreateThumbnail,
  ) {}

  @Post('files/:file_id/parse')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'parseDraftFile',
    summary: 'Pre-parse a draft (OCR)',
    description: `${USER_TOKEN_ONLY} The text of one of the caller's drafts, page by page: a text file as it is; a PDF's text layer (the first 50 pages), with OCR for its scanned pages (the largest image of each page without text; at most 10 pages); an image (PNG, JPEG, GIF, WebP) by OCR (English, tesseract). An image over 40 megapixels is refused from its header, before decoding (422 \`image_too_large\`); recognition has a time limit (OCR_TIMEOUT_MS, 422 \`file_unreadable\`), and a request waiting behind others past its queue wait is 503 \`service_unavailable\` (retry). A file attached to a session is no longer a draft: 409 (its agent reads it with \`ocr_parse_file\`).`,
  })
  @ApiParam({ name: 'file_id', description: 'A draft of the caller (32 hexadecimal characters).', schema: { type: 'string', pattern: '^[0-9a-f]{32}$' } })
  @ApiOkResponse({ type: ParsedFileDto, description: 'The text, page by page.', example: PARSED_FILE_EXAMPLE })
  @ApiErrors('user_token_required', 'not_found', 'file_already_bound', 'image_too_large', 'file_unreadable', 'file_work_limited')
  parse(@CurrentPrincipal() principal: Principal, @Param('file_id') fileId: string): Promise<ParsedFileDto> {
    return this.parseDraftFile.execute(principal, fileId);
  }

  @Post('images')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createImageThumbnail',
    summary: 'Make a thumbnail of a draft image',
    description: `${USER_TOKEN_ONLY} A WebP thumbnail of one of the caller's draft images (PNG, JPEG, GIF: its first frame, WebP), fitting in \`width\` × \`height\` (default 256 × 256, at most 1024) with its aspect ratio, never enlarged, EXIF orientation applied; returned as a data URL. An image over 40 megapixels is refused from its header (422 \`image_too_large\`); a draft that is not an image is 415.`,
  })
  @ApiBody({ type: CreateThumbnailDto, examples: { thumbnail: { value: THUMBNAIL_REQUEST_EXAMPLE } } })
  @ApiOkResponse({ type: ThumbnailDto, description: 'The thumbnail.', example: THUMBNAIL_EXAMPLE })
  @ApiErrors('user_token_required', 'validation_failed', 'invalid_json', 'not_found', 'file_already_bound', 'file_type_not_allowed', 'image_too_large', 'file_unreadable', 'file_work_limited')
  thumbnail(@CurrentPrincipal() principal: Principal, @Body() body: CreateThumbnailDto): Promise<ThumbnailDto> {
    return this.createThumbnail.execute(principal, body);
  }
}
