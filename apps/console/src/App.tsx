import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import type { AgentsClient, Caller } from '#libs/sdk';
import { ConsoleContext, may } from './caller.js';
import { clientFor, forgetCredential, storedCredential, storeCredential } from './credentials.js';
import { AgentsPage } from './pages/AgentsPage.js';
import { AuditPage } from './pages/AuditPage.js';
import { AutomationsPage } from './pages/AutomationsPage.js';
import { InboxPage } from './pages/InboxPage.js';
import { KeysPage } from './pages/KeysPage.js';
import { QueuesPage } from './pages/QueuesPage.js';
import { StoragePage } from './pages/StoragePage.js';
import { SessionPage } from './pages/SessionPage.js';
import { SessionsPage } from './pages/SessionsPage.js';
import { SignInPage } from './pages/SignInPage.js';
import { UsagePage } from './pages/UsagePage.js';
import { UsersPage } from './pages/UsersPage.js';
import { navigate, usePath } from './router.js';

interface NavItem {
  path: string;
  label: string;
  /** Shown only to callers the server would answer (the server still decides). */
  shown: (caller: Caller) => boolean;
}

const NAV: NavItem[] = [
  { path: '/', label: 'Sessions', shown: () => true },
  { path: '/inbox', label: 'Inbox', shown: may.readEverySession },
  { path: '/agents', label: 'Agents', shown: () => true },
  { path: '/automations', label: 'Automations', shown: () => true },
  { path: '/usage', label: 'Usage', shown: () => true },
  { path: '/keys', label: 'API keys', shown: may.manageOwnKeys },
  { path: '/users', label: 'Users', shown: may.administer },
  { path: '/audit', label: 'Audit', shown: may.administer },
  { path: '/queues', label: 'Queues', shown: may.readEverySession },
  { path: '/storage', label: 'Storage', shown: may.readEverySession },
];

export function App() {
  const [credential, setCredential] = useState(storedCredential());
  const client = useMemo(() => (credential ? clientFor(credential) : null), [credential]);
  const queries = useQueryClient();
  if (!client) {
    return (
      <SignInPage
        onSignedIn={(value) => {
          // Nothing another key loaded may show under this one (its role, keys, audit, sessions).
          queries.clear();
          storeCredential(value);
          setCredential(value);
        }}
      />
    );
  }
  const signOut = () => {
    forgetCredential();
    queries.clear();
    setCredential(null);
    navigate('/');
  };
  return <SignedIn client={client} signOut={signOut} />;
}

function SignedIn({ client, signOut }: { client: AgentsClient; signOut: () => void }) {
  const path = usePath();
  const caller = useQuery({ queryKey: ['me'], queryFn: () => client.me(), staleTime: 60_000 });
  const value = useMemo(() => (caller.data ? { client, caller: caller.data } : null), [client, caller.data]);
  if (caller.isError) {
    return (
      <main className="shell">
        <p role="alert" className="error">
          Could not tell who this key is ({String(caller.error)}). Check the API is up, or sign out and sign in again.
        </p>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </main>
    );
  }
  if (!value) return <p aria-busy="true">Signing in…</p>;
  return (
    <ConsoleContext.Provider value={value}>
      <div className="shell">
        <a className="skip" href="#content">
          Skip to content
        </a>
        <header className="bar">
          <span className="brand">Agents console</span>
          <nav aria-label="Main">
            {NAV.filter((item) => item.shown(value.caller)).map((item) => (
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
          <span className="muted who-am-i">{value.caller.role ?? 'user'}</span>
          <button type="button" onClick={signOut}>
            Sign out
          </button>
        </header>
        <main id="content">{page(client, path)}</main>
      </div>
    </ConsoleContext.Provider>
  );
}

function isCurrent(path: string, item: string): boolean {
  return item === '/' ? path === '/' || path.startsWith('/sessions') : path.startsWith(item);
}

function page(client: AgentsClient, path: string) {
  const session = /^\/sessions\/([^/]+)$/.exec(path);
  if (session) return <SessionPage client={client} sessionId={decodeURIComponent(session[1]!)} />;
  if (path.startsWith('/agents')) return <AgentsPage client={client} />;
  if (path.startsWith('/automations')) return <AutomationsPage />;
  if (path === '/inbox') return <InboxPage />;
  if (path === '/keys') return <KeysPage />;
  if (path === '/users') return <UsersPage />;
  if (path === '/audit') return <AuditPage />;
  if (path === '/queues') return <QueuesPage />;
  if (path === '/storage') return <StoragePage />;
  if (path === '/usage') return <UsagePage />;
  return <SessionsPage client={client} />;
}
