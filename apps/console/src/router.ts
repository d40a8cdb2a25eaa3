import { type MouseEvent, useEffect, useState } from 'react';

/** The console's path below /console (e.g. `/sessions/…`), kept in the address bar with pushState. */
export function usePath(): string {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const onPop = () => setPath(currentPath());
    window.addEventListener('popstate', onPop);
    window.addEventListener('console:navigate', onPop);
    return () => {
      window.removeEventListener('popstate', onPop);
      window.removeEventListener('console:navigate', onPop);
    };
  }, []);
  return path;
}

export function navigate(to: string): void {
  window.history.pushState(null, '', `/console${to}`);
  window.dispatchEvent(new Event('console:navigate'));
}

/** Props of a link inside the console: a plain link for a new tab (modifier keys, middle click), the console's router otherwise. */
export function link(to: string) {
  return {
    href: `/console${to}`,
    onClick: (event: MouseEvent) => {
      if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
      event.preventDefault();
      navigate(to);
    },
  };
}

function currentPath(): string {
  const path = window.location.pathname.replace(/^\/console/, '');
  return path === '' ? '/' : path;
}
