import { useMemo, useState } from 'react';
import type { AgentsClient } from '#libs/sdk';
import { clientFor, forgetCredential, storedCredential, storeCredential } from './credentials.js';
import { navigate, usePath } from './router.js';
import { AgentsPage } from './pages/AgentsPage.js';
import { SessionPage } from './pages/SessionPage.js';
import { SessionsPage } from './pages/SessionsPage.js';
import { SignInPage } from './pages/SignInPage.js';

const NAV = [
  { path: '/', label: 'Sessions' },
  { path: '/agents', label: 'Agents' },
  { path: '/keys', label: 'API keys' },
  { path: '/audit', label: 'Audit' },
  { path: '/queues', label: 'Queues' },
] as const;

export function App() {
  const [credential, setCredential] = useState(storedCredential());
  const client = useMemo(() => (credential ? clientFor(credential) : null), [credential]);
  const path = usePath();
  if (!client) {
    return (
      <SignInPage
        onSignedIn={(value) => {
          storeCredential(value);
          setCredential(value);
        }}
      />
    );
  }
  const signOut = () => {
    forgetCredential();
    setCredential(null);
    navigate('/');
  };
  return (
    <div className="shell">
      <header className="bar">
        <span className="brand">Agents console</span>
        <nav aria-label="Main">
          {NAV.map((item) => (
            <a
              key={item.path}
              href={`/console${item.path}`}
              aria-current={isCurrent(path, item.path) ? 'page' : undefined}
              onClick={(event) => {
                event.preventDefault();
                navigate(item.path);
              }}
            >
              {item.label}
            </a>
          ))}
        </nav>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>{page(client, path)}</main>
    </div>
  );
}

function isCurrent(path: string, item: string): boolean {
  return item === '/' ? path === '/' || path.startsWith('/sessions') : path.startsWith(item);
}

function page(client: AgentsClient, path: string) {
  const session = /^\/sessions\/([^/]+)$/.exec(path);
  if (session) return <SessionPage client={client} sessionId={decodeURIComponent(session[1]!)} />;
  if (path === '/agents') return <AgentsPage client={client} />;
  if (path === '/keys' || path === '/audit' || path === '/queues') return <Pending title={NAV.find((n) => n.path === path)!.label} />;
  return <SessionsPage client={client} />;
}

/** A page whose API lands with the operator API (issue 21); it says so rather than showing nothing. */
function Pending({ title }: { title: string }) {
  return (
    <section aria-labelledby="pending-title">
      <h1 id="pending-title">{title}</h1>
      <p className="empty">This page needs the operator API, which this server does not serve yet.</p>
    </section>
  );
}
