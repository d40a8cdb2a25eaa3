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

const integer = new Intl.NumberFormat();

/** A count as people read it ("1,234"); a dash when unknown. */
export function count(value: number | null | undefined): string {
  return value === null || value === undefined ? '—' : integer.format(value);
}

/** A span of seconds in its two largest units: "45 s", "3 min 5 s", "2 h 10 min", "3 d 4 h". */
export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
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
