import { useEffect, useState } from 'react';

/**
 * The page's query string (filters live in the address bar: a filtered view can be bookmarked,
 * shared and gone back to). `set` pushes a new history entry with the given parameters; empty
 * values are left out.
 */
export function useSearchParams(): [URLSearchParams, (next: Record<string, string | undefined>) => void] {
  const [search, setSearch] = useState(window.location.search);
  useEffect(() => {
    const onChange = () => setSearch(window.location.search);
    window.addEventListener('popstate', onChange);
    window.addEventListener('console:navigate', onChange);
    return () => {
      window.removeEventListener('popstate', onChange);
      window.removeEventListener('console:navigate', onChange);
    };
  }, []);
  const set = (next: Record<string, string | undefined>) => {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(next)) if (value) params.set(key, value);
    const query = params.toString();
    const url = `${window.location.pathname}${query ? `?${query}` : ''}`;
    if (url === `${window.location.pathname}${window.location.search}`) return;
    window.history.pushState(null, '', url);
    window.dispatchEvent(new Event('console:navigate'));
  };
  return [new URLSearchParams(search), set];
}
