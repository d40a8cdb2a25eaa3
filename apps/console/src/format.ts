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
