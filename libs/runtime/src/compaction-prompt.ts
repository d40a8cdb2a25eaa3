import { countTokens, MESSAGE_OVERHEAD_TOKENS } from '#libs/models';
import { isCallItem, type ItemEntity, itemText } from '#libs/engine';
import { type MessageAttachment, withAttachmentList } from './model-context.js';

/**
 * What the summariser is asked, as pure functions: a structured prompt (goal, decisions, facts,
 * open tasks, files) and the transcript of what it summarises, the previous summary first so that
 * facts carried from earlier compactions survive the next one.
 */
export const SUMMARY_PROMPT = [
  'You compact the history of a conversation between a user and an AI agent. The agent will continue the conversation',
  'with only your summary, the latest user message and the most recent items, so keep everything it needs.',
  'Write these sections, each a short list; omit a section that would be empty:',
  'Goal: what the user wants overall.',
  'Decisions: what was decided or agreed, and by whom.',
  'Facts: identifiers, names, numbers, amounts, dates, URLs and file ids, copied exactly as written.',
  'Open tasks: what is still to be done or was promised.',
  'Files: the files attached or produced (file id, name).',
  'Keep every fact of the previous summary that is still true. Do not invent anything. Do not address the user.',
].join('\n');

/** How the summary opens the context of later model calls (as the first user message). */
export const SUMMARY_HEADING = 'Summary of the earlier conversation (compacted):';

/** The message a summary opens later contexts with. */
export function summaryMessage(summary: string): { role: 'user'; text: string } {
  return { role: 'user', text: `${SUMMARY_HEADING}\n${summary}` };
}

/** That message's size in a context. */
export async function summaryMessageTokens(summary: string): Promise<number> {
  return (await countTokens(summaryMessage(summary).text)) + MESSAGE_OVERHEAD_TOKENS;
}

export function summaryPrompt(agentInstructions: string, requestInstructions: string | undefined): string {
  return [SUMMARY_PROMPT, agentInstructions.trim(), requestInstructions?.trim() ?? ''].filter(Boolean).join('\n\n');
}

/** One line per item, as the summariser reads it; a user message names its attached files, as the model was told. */
export function transcriptLine(item: Pick<ItemEntity, 'type' | 'role' | 'content'> & { id?: string }, attachments?: ReadonlyMap<string, readonly MessageAttachment[]>): string {
  const part = item.content[0];
  if (isCallItem(item.type)) return `[tool call] ${part?.name ?? ''}(${part?.arguments ?? ''})`;
  if (item.type === 'function_call_output') return `[tool result${part?.success === false ? ', failed' : ''}] ${part?.output ?? ''}`;
  const { text, images } = itemText(item.content);
  const pictures = images > 0 ? ` [${images} image${images > 1 ? 's' : ''}]` : '';
  const files = item.id ? attachments?.get(item.id) : undefined;
  return `[${item.role ?? 'assistant'}] ${withAttachmentList(text, files).replace(/\n+/g, ' ')}${pictures}`;
}

/**
 * The transcript to summarise: the previous summary, then the items. When it is longer than
 * `maxChars` (what the summariser's window can take), each line longer than its share keeps its
 * head and tail, so every message is still represented.
 */
export function transcript(
  previousSummary: string | null,
  items: readonly (Pick<ItemEntity, 'type' | 'role' | 'content'> & { id?: string })[],
  maxChars: number,
  attachments?: ReadonlyMap<string, readonly MessageAttachment[]>,
): string {
  const head = previousSummary ? `Previous summary:\n${previousSummary}\n\nConversation since:` : 'Conversation:';
  let lines = items.map((item) => transcriptLine(item, attachments));
  const length = (all: string[]): number => all.reduce((sum, line) => sum + line.length + 1, head.length);
  if (length(lines) > maxChars && lines.length > 0) {
    // Each line's share, less what the cut mark and the newline add.
    const share = Math.max(200, Math.floor((maxChars - head.length) / lines.length) - 8);
    lines = lines.map((line) => (line.length <= share ? line : `${line.slice(0, Math.ceil(share * 0.7))} […] ${line.slice(-Math.floor(share * 0.3))}`));
  }
  // Still too long (many short items): the middle goes, the oldest and the latest lines stay.
  if (length(lines) > maxChars) {
    const budget = maxChars - head.length - 64;
    let first = 0;
    let last = lines.length;
    let used = 0;
    while (first < last) {
      const next = first <= lines.length - last ? lines[first]! : lines[last - 1]!;
      if (used + next.length + 1 > budget) break;
      used += next.length + 1;
      if (first <= lines.length - last) first += 1;
      else last -= 1;
    }
    lines = [...lines.slice(0, first), `[… ${last - first} items omitted …]`, ...lines.slice(last)];
  }
  return [head, ...lines].join('\n');
}
