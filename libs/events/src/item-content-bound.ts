import type { OutgoingEvent } from './outgoing-events.js';

/**
 * The events that embed an item's content, and where: the item events carry the whole item, a
 * content part's events its part, `output_text.done` and `reasoning.done` the full text. Deltas
 * are small by nature and are never cut.
 */
const BOUNDED_TYPES = new Set([
  'agent.session.turn.item.added',
  'agent.session.turn.item.done',
  'agent.session.turn.content_part.added',
  'agent.session.turn.content_part.done',
  'agent.session.turn.output_text.done',
  'yuxi.session.turn.reasoning.done',
]);

/** The text-bearing fields of an item (ItemDto), in the order the budget is spent on them (`command`: a command_execution's). */
const ITEM_FIELDS = ['arguments', 'command', 'output', 'summary', 'task', 'message'] as const;

type Json = Record<string, unknown>;

const encoder = new TextEncoder();

/** What is left of the byte budget of one event's content as its strings are taken in order. */
class Budget {
  truncated = false;
  constructor(private left: number) {}

  take(text: unknown): unknown {
    if (typeof text !== 'string') return text;
    const bytes = Buffer.byteLength(text);
    if (bytes <= this.left) {
      this.left -= bytes;
      return text;
    }
    this.truncated = true;
    // encodeInto writes whole characters only: the cut never splits one.
    const { read } = encoder.encodeInto(text, new Uint8Array(this.left));
    this.left = 0;
    return text.slice(0, read);
  }
}

/** The UTF-16 length of an event's content strings: UTF-8 takes at most 3 bytes per code unit, so 3× this bounds their bytes without encoding them. */
function contentLength(event: Json): number {
  let length = typeof event.text === 'string' ? event.text.length : 0;
  const part = event.part as Json | undefined;
  if (typeof part?.text === 'string') length += part.text.length;
  const item = event.item as Json | undefined;
  if (!item) return length;
  for (const field of ITEM_FIELDS) if (typeof item[field] === 'string') length += (item[field] as string).length;
  for (const p of (item.content as Json[] | undefined) ?? []) if (typeof p.text === 'string') length += p.text.length;
  for (const r of ((item.yuxi as Json | undefined)?.reasoning as Json[] | undefined) ?? []) if (typeof r.text === 'string') length += r.text.length;
  return length;
}

/**
 * An event that embeds an item's content, with that content cut to `maxBytes` (UTF-8, all its
 * texts together, in order) and `yuxi.truncated: true` when anything was cut; clients read the
 * whole item from the items routes. Other events, and content within the bound, are returned as
 * they are (the same object: an ordinary event pays a few length reads). Storage and fan-out stay
 * bounded whatever one message, tool output or answer holds.
 */
export function boundItemContent<E extends OutgoingEvent>(event: E, maxBytes: number): E {
  if (!BOUNDED_TYPES.has(event.type)) return event;
  const source = event as unknown as Json;
  if (contentLength(source) * 3 <= maxBytes) return event;
  const budget = new Budget(maxBytes);
  const bounded: Json = { ...source };
  if ('text' in source) bounded.text = budget.take(source.text);
  if (source.part) bounded.part = { ...(source.part as Json), ...('text' in (source.part as Json) ? { text: budget.take((source.part as Json).text) } : {}) };
  if (source.item) {
    const item: Json = { ...(source.item as Json) };
    if (Array.isArray(item.content)) item.content = (item.content as Json[]).map((p) => ('text' in p ? { ...p, text: budget.take(p.text) } : p));
    for (const field of ITEM_FIELDS) if (field in item) item[field] = budget.take(item[field]);
    const yuxi = item.yuxi as Json | undefined;
    if (Array.isArray(yuxi?.reasoning)) item.yuxi = { ...yuxi, reasoning: (yuxi.reasoning as Json[]).map((r) => ({ ...r, text: budget.take(r.text) })) };
    bounded.item = item;
  }
  if (!budget.truncated) return event;
  bounded.yuxi = { ...(source.yuxi as Json | undefined), truncated: true };
  return bounded as unknown as E;
}
