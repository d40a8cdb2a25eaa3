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
