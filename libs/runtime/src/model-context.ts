import type { ModelMessage } from '#libs/models';
import { isCallItem, isReasoningPart, type ItemEntity } from '#libs/turns';
import { userMessage } from './image-references.js';

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
  const messages: ModelMessage[] = [];
  for (const item of items) {
    if (item.status === 'in_progress') continue;
    const part = item.content[0];
    if (isCallItem(item.type)) {
      if (!part?.call_id || !outputs.has(part.call_id)) continue;
      const call = { call_id: part.call_id, name: part.name ?? '', arguments: part.arguments ?? '' };
      const last = messages.at(-1);
      if (last?.role === 'assistant') (last.tool_calls ??= []).push(call);
      else messages.push({ role: 'assistant', text: '', tool_calls: [call] });
      continue;
    }
    if (item.type === 'function_call_output') {
      if (part?.call_id && calls.has(part.call_id)) messages.push({ role: 'tool', call_id: part.call_id, output: part.output ?? '' });
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
  return messages;
}

/** The message text, then one line naming its attached files (by file_id, which the file tools take). */
export function withAttachmentList(text: string, files: readonly MessageAttachment[] | undefined): string {
  if (!files || files.length === 0) return text;
  const list = files.map((file) => `${file.filename} (file_id ${file.id}, ${file.mimeType}, ${file.bytes} bytes)`).join('; ');
  return `${text}\n\n[Attached files: ${list}]`;
}
