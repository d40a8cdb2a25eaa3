import type { InputMessage } from '#libs/engine';

/** The title of a session created with neither a title nor a text to take one from. */
export const DEFAULT_SESSION_TITLE = 'New session';

/** Characters (code points) of a title taken from a message, the ellipsis included. */
export const DERIVED_TITLE_MAX_CHARS = 60;

/**
 * The title of a session created without one: the start of its first message's text, on one line
 * (runs of whitespace and control characters become one space), without the invisible characters
 * that would make it render other than it reads (INVISIBLE), cut at a word boundary where one is
 * near, with an ellipsis; the default when the input has no text (images only, or no input).
 *
 * Removed from a derived title: bidi embeddings, overrides and isolates (U+202A–202E, U+2066–2069)
 * and marks (U+200E, U+200F, U+061C), which make a title render reversed or out of order in lists
 * that show it beside others, and the zero-width space and byte-order mark (U+200B, U+FEFF), which
 * make two titles look alike. The zero-width (non-)joiners (U+200C, U+200D) stay: they are part of
 * emoji sequences and of Persian and Indic spelling, and reorder nothing.
 */
const INVISIBLE = /[\u061c\u200b\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/gu;

export function titleFromInput(messages: InputMessage[] | null): string {
  // The first text block with something visible once cleaned (a block of only invisible characters is passed over).
  for (const block of messages?.flatMap((message) => message.content) ?? []) {
    if (block.type !== 'input_text') continue;
    const line = oneLine(block.text);
    if (line !== '') return cutToTitle(line);
  }
  return DEFAULT_SESSION_TITLE;
}

/** The start of a text on one line, without invisible and control characters. */
function oneLine(text: string): string {
  // Only the start is read (an input may hold 256 KiB of text); a pair cut in two is dropped.
  const start = text.slice(0, 4096).replace(/[\uD800-\uDBFF]$/, '');
  // eslint-disable-next-line no-control-regex -- control characters are what is replaced
  return start.replace(INVISIBLE, '').replace(/[\s\u0000-\u001f\u007f-\u009f]+/gu, ' ').trim();
}

function cutToTitle(line: string): string {
  const chars = Array.from(line);
  if (chars.length <= DERIVED_TITLE_MAX_CHARS) return line;
  const head = chars.slice(0, DERIVED_TITLE_MAX_CHARS - 1).join('');
  const space = head.lastIndexOf(' ');
  // A word boundary in the last third keeps whole words; a long word (or a script without spaces) is cut.
  const cut = space >= head.length * (2 / 3) ? head.slice(0, space) : head;
  return `${cut.trimEnd()}…`;
}
