/** Cursor pagination of every public list: `after` is the last id of the previous page. */
export interface PageQuery {
  after?: string;
  limit: number;
  order: 'asc' | 'desc';
}

export interface Page<T> {
  rows: T[];
  hasMore: boolean;
}

/** Fetches limit + 1 rows to learn has_more without a count. */
export function toPage<T>(rows: T[], limit: number): Page<T> {
  return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
}

/** The body of a public list page: its items, the ids that bound it, and whether more follow. */
export interface ListEnvelope<T> {
  object: 'list';
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

/** The list page of `data` (items with an `id`), as every public list answers it. */
export function listEnvelope<T extends { id: string }>(data: T[], hasMore: boolean): ListEnvelope<T> {
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more: hasMore };
}
