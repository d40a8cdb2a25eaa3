import { sessionFileUrl } from '#libs/files';
import { type ItemDto, type ItemEntity, toItemDto } from '#libs/engine';

/**
 * An item a fork inherited, as the fork shows it. Its inline images were stored with the path of
 * the session that received them; they are shown with the fork's path instead, which serves the
 * files of the fork's ancestors too, so the link keeps working after the source is deleted and
 * only the fork needs to be visible to the reader. The rest stays the truth: `session_id` of the
 * turn and run, and `input_id` (readable on the session that received it only).
 */
export function inheritedItemDto(viewerId: string, item: ItemEntity, receipts: ReadonlyMap<string, Date>): ItemDto {
  const dto = toItemDto(item, receipts);
  if (!dto.content?.some((part) => part.type === 'input_image' && typeof part.file_id === 'string')) return dto;
  return {
    ...dto,
    content: dto.content.map((part) => (part.type === 'input_image' && typeof part.file_id === 'string' ? { ...part, image_url: sessionFileUrl(viewerId, part.file_id) } : part)),
  };
}
