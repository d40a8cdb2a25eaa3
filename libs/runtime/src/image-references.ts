import { Injectable } from '@nestjs/common';
import { ResolveSessionImages } from '#libs/files';
import type { ModelMessage, ModelUserPart } from '#libs/models';
import type { ItemEntity, StoredContentPart } from '#libs/engine';

/** What the model reads where an image of the conversation can no longer be loaded (its file is gone). */
export const MISSING_IMAGE_TEXT = '[image no longer available]';

/**
 * Inline images are stored as session files and user items refer to them (`file_id`, and an
 * `image_url` that is a path on this API). Before a model call, each reference becomes the image's
 * bytes as a `data:` URL, as OpenAI-compatible providers take them; items stored with a data URL
 * (before images became files) pass through unchanged. The images a tool returned (`file_ids` of
 * its output) are resolved alike, into the part's `image_urls` (see model-context).
 *
 * An image belongs to the session whose item refers to it. A fork's context holds items of its
 * ancestors (by reference, nothing copied), so the lookup is scoped to the sessions of the items
 * that refer to images: the ones whose history the context shows, never any other.
 */
@Injectable()
export class ImageReferences {
  constructor(private readonly images: ResolveSessionImages) {}

  async resolve(items: readonly ItemEntity[]): Promise<ItemEntity[]> {
    // Both kinds in one lookup; a context without images asks nothing.
    const wanted: string[] = [];
    const sessionIds = new Set<string>();
    for (const item of items) {
      const ids = item.content.flatMap((part) => (isReference(part) ? [part.file_id!] : toolImageIds(part)));
      if (ids.length === 0) continue;
      wanted.push(...ids);
      sessionIds.add(item.sessionId);
    }
    if (wanted.length === 0) return [...items];
    const urls = await this.images.dataUrls([...sessionIds], wanted);
    return items.map((item) =>
      item.content.some((part) => isReference(part) || toolImageIds(part).length > 0)
        ? {
            ...item,
            content: item.content.map((part): StoredContentPart => {
              const tool = toolImageIds(part);
              if (tool.length > 0) return { ...part, image_urls: tool.map((id) => urls.get(id) ?? '') };
              if (!isReference(part)) return part;
              const url = urls.get(part.file_id!);
              return url ? { type: 'input_image', file_id: part.file_id, image_url: url } : { type: 'input_text', text: MISSING_IMAGE_TEXT };
            }),
          }
        : item,
    );
  }
}

/** A user message for the model: its text, and its parts in order when it holds images. */
export function userMessage(text: string, content: readonly StoredContentPart[]): ModelMessage {
  if (!content.some((part) => part.type === 'input_image')) return { role: 'user', text };
  const parts: ModelUserPart[] = content.flatMap((part): ModelUserPart[] => {
    if (part.type === 'input_image') return part.image_url?.startsWith('data:') ? [{ type: 'image', url: part.image_url }] : [{ type: 'text', text: MISSING_IMAGE_TEXT }];
    return typeof part.text === 'string' ? [{ type: 'text', text: part.text }] : [];
  });
  return { role: 'user', text, parts };
}

/** The images a tool's output part names (function_call_output items of tools that returned images). */
function toolImageIds(part: StoredContentPart): string[] {
  return part.type === 'function_call_output' && Array.isArray(part.file_ids) ? part.file_ids : [];
}

function isReference(part: StoredContentPart): boolean {
  return part.type === 'input_image' && typeof part.file_id === 'string' && !part.image_url?.startsWith('data:');
}
