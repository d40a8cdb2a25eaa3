import type { SessionStatus, Usage } from '#libs/sdk';

// Numbers as people read them (the sessions pages' additions to ../format.ts).

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });

/** 1234 → "1,234" (in the reader's locale). */
export function count(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : integer.format(value);
}

/** Milliseconds as "850 ms", "2.4 s", "3 min 5 s". */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${integer.format(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return seconds ? `${minutes} min ${seconds} s` : `${minutes} min`;
}

/** Token usage in one short phrase: "1.2K in · 340 out". */
export function tokens(usage: Usage | null | undefined): string {
  if (!usage) return 'no usage reported';
  const cached = usage.cached_tokens ? ` (${compact.format(usage.cached_tokens)} cached)` : '';
  return `${compact.format(usage.input_tokens)} in${cached} · ${compact.format(usage.output_tokens)} out`;
}

/** A status as words: "requires_action" → "requires action". */
export function statusText(status: string): string {
  return status.replaceAll('_', ' ');
}

/** Whether a session has work under way (its view must keep refreshing). */
export function isActive(status: SessionStatus): boolean {
  return status === 'in_progress' || status === 'requires_action';
}

/** A long id shortened for a table cell (the full id stays in the title and the link). */
export function shortId(id: string): string {
  return id.length > 13 ? `${id.slice(0, 8)}…` : id;
}

/** "a" or "an" before a word. */
export function article(word: string): string {
  return /^[aeiou]/i.test(word) ? 'an' : 'a';
}
