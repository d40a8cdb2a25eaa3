import { type FormEvent, useState } from 'react';
import { AgentsApiError } from '#libs/sdk';
import { clientFor } from '../credentials.js';

/** Sign in with an API key or a user token: checked with one cheap call before it is kept. */
export function SignInPage({ onSignedIn }: { onSignedIn: (credential: string) => void }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const credential = value.trim();
    if (!credential) return setError('Enter an API key or a user token.');
    setBusy(true);
    setError(null);
    try {
      await clientFor(credential).sessions.list({ limit: 1 });
      onSignedIn(credential);
    } catch (caught) {
      setError(caught instanceof AgentsApiError && caught.status === 401 ? 'This key or token is not valid.' : `Could not sign in: ${String(caught)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="signin">
      <form onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">Agents console</h1>
        <p>Kept in this tab only; closing it signs you out.</p>
        <label htmlFor="credential">API key</label>
        <input id="credential" type="password" autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} aria-describedby={error ? 'signin-error' : undefined} />
        {error && (
          <p id="signin-error" role="alert" className="error">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
