import { countTokens, countTokensIfLoaded, IMAGE_TOKENS, MESSAGE_OVERHEAD_TOKENS } from '#libs/models';
import { type ItemEntity, isReasoningPart, type StoredContentPart } from '../tables/turn.entities.js';

/** What of an item a model is shown, as text, and how many images come with it. */
export function itemText(content: readonly StoredContentPart[]): { text: string; images: number } {
  const texts: string[] = [];
  let images = 0;
  for (const part of content) {
    // Reasoning is shown to clients, never sent back to a model.
    if (isReasoningPart(part)) continue;
    if (part.type === 'input_image') images += 1;
    // A tool's images are shown to the model after its output (model-context).
    images += part.file_ids?.length ?? 0;
    for (const field of [part.name, part.arguments, part.output, part.text]) if (typeof field === 'string' && field) texts.push(field);
  }
  return { text: texts.join('\n'), images };
}

/** An item's size in a model context, when the tokenizer is loaded (in the worker); null elsewhere. */
export function itemTokensIfLoaded(content: readonly StoredContentPart[]): number | null {
  const { text, images } = itemText(content);
  const tokens = countTokensIfLoaded(text);
  return tokens === null ? null : tokens + images * IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS;
}

/** An item's size in a model context: its stored count, or counted now (items the api wrote). */
export async function itemTokens(item: Pick<ItemEntity, 'content' | 'tokens'>): Promise<number> {
  if (item.tokens !== null && item.tokens !== undefined) return item.tokens;
  const { text, images } = itemText(item.content);
  return (await countTokens(text)) + images * IMAGE_TOKENS + MESSAGE_OVERHEAD_TOKENS;
}
