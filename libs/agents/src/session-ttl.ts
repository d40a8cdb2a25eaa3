import type { FieldError } from '#libs/errors';

/**
 * Session TTL (issue 43): how long a session may stay idle (no input, no turn activity: its
 * `last_active_at`) before the worker archives it, and before it deletes it. Set on an agent, a
 * project and a session; a session keeps the effective values resolved when it was created (or
 * updated), so editing the agent later changes no existing session.
 */
export interface SessionTtl {
  archive_after_idle_s?: number;
  delete_after_idle_s?: number;
}

/** The fields of a `ttl` object, in the order they apply (archive first, then delete). */
export const TTL_FIELDS = ['archive_after_idle_s', 'delete_after_idle_s'] as const;
export type TtlField = (typeof TTL_FIELDS)[number];

/** The shortest TTL: one minute (a shorter idle time would archive a session between two messages). */
export const TTL_MIN_S = 60;
/** The longest TTL: ten years of 366 days (a bound on the input; beyond it, set none). */
export const TTL_MAX_S = 10 * 366 * 24 * 3600;

/** The TTL a session goes by: each null where nothing set it. */
export interface EffectiveTtl {
  archiveAfterS: number | null;
  deleteAfterS: number | null;
}

export const NO_TTL: EffectiveTtl = { archiveAfterS: null, deleteAfterS: null };

/**
 * Reads a `ttl` object (an agent definition's, a project's, a session's), naming each problem's
 * field under `field`. Absent, null or `{}`: no TTL (null). Each value an integer
 * TTL_MIN_S–TTL_MAX_S; with both, delete may not come before archive.
 */
export function parseTtl(raw: unknown, field: string): { ttl: SessionTtl | null; errors: FieldError[] } {
  const errors: FieldError[] = [];
  if (raw === undefined || raw === null) return { ttl: null, errors };
  if (typeof raw !== 'object' || Array.isArray(raw)) return { ttl: null, errors: [{ field, errors: ['must be an object'] }] };
  const given = raw as Record<string, unknown>;
  const ttl: SessionTtl = {};
  for (const key of Object.keys(given)) if (!(TTL_FIELDS as readonly string[]).includes(key)) errors.push({ field: `${field}.${key}`, errors: ['is an unknown field'] });
  for (const key of TTL_FIELDS) {
    const value = given[key];
    if (value === undefined || value === null) continue;
    if (!Number.isInteger(value) || (value as number) < TTL_MIN_S || (value as number) > TTL_MAX_S) errors.push({ field: `${field}.${key}`, errors: [`must be an integer ${TTL_MIN_S}–${TTL_MAX_S} (seconds)`] });
    else ttl[key] = value as number;
  }
  if (ttl.archive_after_idle_s !== undefined && ttl.delete_after_idle_s !== undefined && ttl.delete_after_idle_s < ttl.archive_after_idle_s) {
    errors.push({ field: `${field}.delete_after_idle_s`, errors: ['must be at least archive_after_idle_s'] });
  }
  if (errors.length > 0) return { ttl: null, errors };
  return { ttl: Object.keys(ttl).length === 0 ? null : ttl, errors };
}

/**
 * The TTL a session goes by, from its own (`own`, as sent: `field` names it in errors), its
 * project's and its agent's. Each field on its own: the strictest (shortest) that any of them sets
 * wins; a session may shorten what its project or agent sets, never lengthen it (an error naming
 * the field). A field none sets stays null (never archived, or never deleted, for idleness). An
 * archive that would not come before the delete is dropped: the session is deleted first.
 */
export function resolveSessionTtl(
  sources: { own?: SessionTtl | null; project?: SessionTtl | null; agent?: SessionTtl | null },
  field: string,
): { ttl: EffectiveTtl; errors: FieldError[] } {
  const errors: FieldError[] = [];
  const pick = (key: TtlField): number | null => {
    const own = sources.own?.[key];
    for (const [name, bound] of [
      ['project', sources.project?.[key]],
      ['agent', sources.agent?.[key]],
    ] as const) {
      if (own !== undefined && bound !== undefined && own > bound) errors.push({ field: `${field}.${key}`, errors: [`must be at most ${bound}, the ${name}'s ${key}`] });
    }
    const set = [own, sources.project?.[key], sources.agent?.[key]].filter((value): value is number => value !== undefined);
    return set.length === 0 ? null : Math.min(...set);
  };
  const archiveAfterS = pick('archive_after_idle_s');
  const deleteAfterS = pick('delete_after_idle_s');
  const ttl = { archiveAfterS: archiveAfterS !== null && deleteAfterS !== null && archiveAfterS >= deleteAfterS ? null : archiveAfterS, deleteAfterS };
  return { ttl, errors };
}

/** The `ttl` object a session shows (`yuxi.ttl`): the fields it goes by; null without any. */
export function ttlView(ttl: EffectiveTtl): SessionTtl | null {
  if (ttl.archiveAfterS === null && ttl.deleteAfterS === null) return null;
  const view: SessionTtl = {};
  if (ttl.archiveAfterS !== null) view.archive_after_idle_s = ttl.archiveAfterS;
  if (ttl.deleteAfterS !== null) view.delete_after_idle_s = ttl.deleteAfterS;
  return view;
}

/**
 * `yuxi.expires_at` (Unix seconds): when the TTL next acts on the session if it stays idle — its
 * deletion where a delete TTL is set, else its archiving while it is not archived yet; null when
 * neither will happen. A later input or turn moves it (idle time counts from `last_active_at`); an
 * active turn or pending input postpones it.
 */
export function ttlExpiresAt(ttl: EffectiveTtl, lastActiveAt: Date, archived: boolean): number | null {
  const after = ttl.deleteAfterS ?? (archived ? null : ttl.archiveAfterS);
  return after === null ? null : Math.floor(lastActiveAt.getTime() / 1000) + after;
}
