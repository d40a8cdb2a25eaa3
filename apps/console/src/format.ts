import type { AdminSession, SessionStatus, TimelineRun, Usage } from '#libs/sdk';

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });

/** Unix seconds as people read them: "5 minutes ago" within a day, a date beyond. */
export function when(unixSeconds: number | null | undefined): string {
  if (!unixSeconds) return '—';
  const ago = Date.now() / 1000 - unixSeconds;
  if (ago < 60) return relative.format(-Math.round(ago), 'second');
  if (ago < 3600) return relative.format(-Math.round(ago / 60), 'minute');
  if (ago < 86400) return relative.format(-Math.round(ago / 3600), 'hour');
  return dateTime.format(new Date(unixSeconds * 1000));
}

export function exact(unixSeconds: number | null | undefined): string {
  return unixSeconds ? dateTime.format(new Date(unixSeconds * 1000)) : '';
}

const integer = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const compact = new Intl.NumberFormat(undefined, { notation: 'compact', maximumFractionDigits: 1 });

/** A count as people read it ("1,234"); a dash when unknown. */
export function count(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : integer.format(value);
}

/** Milliseconds as people read them: "850 ms", "2.4 s", "45 s", then the two largest units ("3 min 5 s", "2 h 10 min", "3 d 4 h"). */
export function duration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—';
  if (ms < 1000) return `${integer.format(Math.max(0, ms))} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const s = Math.round(ms / 1000);
  const parts: [number, string][] = [
    [Math.floor(s / 86400), 'd'],
    [Math.floor((s % 86400) / 3600), 'h'],
    [Math.floor((s % 3600) / 60), 'min'],
    [s % 60, 's'],
  ];
  const first = parts.findIndex(([n]) => n > 0);
  return parts
    .slice(first, first + 2)
    .filter(([n]) => n > 0)
    .map(([n, unit]) => `${n} ${unit}`)
    .join(' ');
}

/** Token usage in one short phrase: "1.2K in · 340 out". */
export function tokens(usage: Pick<Usage, 'input_tokens' | 'output_tokens' | 'cached_tokens'> | null | undefined): string {
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

/** A long id shortened for a table cell (the whole id stays in its title or link). */
export function shortId(id: string): string {
  return id.length > 13 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
}

/** "a" or "an" before a word. */
export function article(word: string): string {
  return /^[aeiou]/i.test(word) ? 'an' : 'a';
}

/**
 * Who owns a session, in words a person recognises: a product user's subject (their tokens' `sub`)
 * or name (`bootstrap`, a `create-key` name), an end user with their app; a user known by id only
 * says so (the id is in the cell's title).
 */
export function ownerText(owner: AdminSession['yuxi']['owner']): string {
  if (owner.kind === 'end_user') return `${owner.subject || 'default end user'} (app ${owner.app_id ?? '?'})`;
  return owner.subject ?? owner.name ?? 'user without a name';
}

/**
 * A run's status in words, read with its turn: a run that stopped at a waitpoint has ended once the
 * turn went on (a later run resumed it, or the turn finished), so it no longer "requires action".
 */
export function runStatusText(run: Pick<TimelineRun, 'id' | 'status'>, turn: { status: string; runs: Pick<TimelineRun, 'resume_from_run_id'>[] }): string {
  if (run.status === 'requires_action' && (turn.status !== 'requires_action' || turn.runs.some((other) => other.resume_from_run_id === run.id))) return 'ended at waitpoint';
  return statusText(run.status);
}
