import type { ModelMessage, ModelUserPart } from '#libs/models';
import { isCallItem, isReasoningPart, type ItemEntity } from '#libs/engine';
import { MISSING_IMAGE_TEXT, userMessage } from './image-references.js';

/** A file attached to a user message, as the model is told about it. */
export interface MessageAttachment {
  id: string;
  filename: string;
  mimeType: string;
  bytes: number;
}

/**
 * The conversation a model call sees, from the session's latest items: user and assistant messages
 * as text, each function_call attached to the assistant message before it, each output as a tool
 * message. Providers refuse a tool call without its output (and the reverse), and a window of the
 * latest items can cut a pair in two: unpaired calls and outputs are left out. A user message that
 * files were bound to (on consumption: the last message of an input submitted with attachments)
 * lists them after its text; messages of inputs not consumed yet are not items, so the model never
 * hears of queued or cancelled inputs' files. A user message with images also carries them (see
 * image-references).
 */
export function toModelMessages(items: readonly ItemEntity[], attachments: ReadonlyMap<string, readonly MessageAttachment[]> = new Map()): ModelMessage[] {
  const outputs = new Set(items.filter((i) => i.type === 'function_call_output').map((i) => i.content[0]?.call_id));
  const calls = new Set(items.filter((i) => isCallItem(i.type)).map((i) => i.content[0]?.call_id));
  const names = new Map(items.filter((i) => isCallItem(i.type)).map((i) => [i.content[0]?.call_id, i.content[0]?.name ?? '']));
  const messages: ModelMessage[] = [];
  // The images of the current step's tool outputs, shown once its last output is in.
  let shown: ModelUserPart[] = [];
  const flush = (): void => {
    if (shown.length === 0) return;
    messages.push(toolImagesMessage(shown));
    shown = [];
  };
  for (const item of items) {
    if (item.status === 'in_progress') continue;
    const part = item.content[0];
    if (item.type === 'function_call_output') {
      if (part?.call_id && calls.has(part.call_id)) {
        messages.push({ role: 'tool', call_id: part.call_id, output: part.output ?? '' });
        if (part.file_ids?.length) shown.push(...toolImageParts(names.get(part.call_id) ?? '', part.call_id, part.file_ids, part.image_urls));
      }
      continue;
    }
    flush();
    if (isCallItem(item.type)) {
      if (!part?.call_id || !outputs.has(part.call_id)) continue;
      const call = { call_id: part.call_id, name: part.name ?? '', arguments: part.arguments ?? '' };
      const last = messages.at(-1);
      if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
      else messages.push({ role: 'assistant', text: '', tool_calls: [call] });
      continue;
    }
    const text = item.content
      .filter((p) => typeof p.text === 'string' && !isReasoningPart(p))
      .map((p) => p.text)
      .join('\n');
    if (item.role === 'assistant') {
      messages.push({ role: 'assistant', text });
      continue;
    }
    const files = attachments.get(item.id);
    const message = userMessage(withAttachmentList(text, files), item.content);
    // With images the parts are what the provider sends: the list goes after them too.
    if (message.role === 'user' && message.parts && files?.length) message.parts = [...message.parts, { type: 'text', text: withAttachmentList('', files).trim() }];
    messages.push(message);
  }
  flush();
  return messages;
}

/**
 * OpenAI-compatible tool messages carry text only: the images tool results returned reach the model
 * in one user message after the step's tool messages, each tool's images under a line naming the
 * call (its output's `[image N: …]` lines say where they stood). Marked `toolImages`: no person wrote it.
 */
function toolImagesMessage(parts: ModelUserPart[]): ModelMessage {
  const text = parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
  return { role: 'user', text, parts, toolImages: true };
}

function toolImageParts(name: string, callId: string, fileIds: readonly string[], urls: readonly string[] | undefined): ModelUserPart[] {
  const images = fileIds.map((_, index): ModelUserPart => {
    const url = urls?.[index];
    return url?.startsWith('data:') ? { type: 'image', url } : { type: 'text', text: MISSING_IMAGE_TEXT };
  });
  return [{ type: 'text', text: `[Images returned by tool ${name} (call ${callId})]` }, ...images];
}

/** The message text, then one line naming its attached files (by file_id, which the file tools take). */
export function withAttachmentList(text: string, files: readonly MessageAttachment[] | undefined): string {
  if (!files || files.length === 0) return text;
  const list = files.map((file) => `${file.filename} (file_id ${file.id}, ${file.mimeType}, ${file.bytes} bytes)`).join('; ');
  return `${text}\n\n[Attached files: ${list}]`;
}
