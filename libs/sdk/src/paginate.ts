/** What a list page looks like, whatever it lists. */
interface Page<T> {
  data: T[];
  has_more: boolean;
  last_id: string | null;
}

/**
 * Every element of a paged list, following `last_id` / `after` until `has_more` is false.
 * `maxPages` bounds the walk (a cursor that never ends would otherwise loop forever).
 */
export async function* paginate<T>(fetchPage: (after: string | undefined) => Promise<Page<T>>, maxPages = 10_000): AsyncGenerator<T> {
  let after: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const result = await fetchPage(after);
    yield* result.data;
    if (!result.has_more || result.last_id === null) return;
    after = result.last_id;
  }
  throw new Error(`Stopped after ${maxPages} pages: the list did not end`);
}
