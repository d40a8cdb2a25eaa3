import type { ModelMessage } from '#libs/models';
import type { ItemEntity } from '#libs/turns';
import { userMessage } from './image-references.js';

/**
 * The conversation a model call sees, from the session's latest items: user and assistant messages
 * as text, each function_call attached to the assistant message before it, each output as a tool
 * message (a user message with images also carries them, see image-references). Providers refuse a tool call without its output (and the reverse), and a window of the
 * latest items can cut a pair in two: unpaired calls and outputs are left out.
 */
export function toModelMessages(items: readonly ItemEntity[]): ModelMessage[] {
  const outputs = new Set(items.filter((i) => i.type === 'function_call_output').map((i) => i.content[0]?.call_id));
  const calls = new Set(items.filter((i) => i.type === 'function_call').map((i) => i.content[0]?.call_id));
  const messages: ModelMessage[] = [];
  for (const item of items) {
    if (item.status === 'in_progress') continue;
    const part = item.content[0];
    if (item.type === 'function_call') {
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
      .filter((p) => typeof p.text === 'string')
      .map((p) => p.text)
      .join('\n');
    messages.push(item.role === 'assistant' ? { role: 'assistant', text } : userMessage(text, item.content));
  }
  return messages;
}
