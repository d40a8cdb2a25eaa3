import { useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useEffect, useId, useRef, useState } from 'react';
import type { ApiKey, ApiKeyCreated, CreateApiKeyParams } from '#libs/sdk';
import { Actor, ConfirmDialog, ErrorState, fieldErrors, problem, TableWrap } from '../admin-ui.js';
import { may, useConsole } from '../caller.js';
import { exact, when } from '../format.js';
import '../admin.css';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function statusOf(key: ApiKey): 'active' | 'revoked' | 'expired' {
  if (key.revoked_at !== null) return 'revoked';
  if (key.expires_at !== null && key.expires_at * 1000 <= Date.now()) return 'expired';
  return 'active';
}

/** The caller's API keys (every key for administrators): create one (its secret shown once), revoke one. */
export function KeysPage() {
  const { client, caller } = useConsole();
  const admin = may.administer(caller);
  const queries = useQueryClient();
  const keys = useQuery({ queryKey: ['api-keys'], queryFn: () => client.admin.listApiKeys() });
  const [showAll, setShowAll] = useState(false);
  const [created, setCreated] = useState<ApiKeyCreated | null>(null);
  const [revoking, setRevoking] = useState<ApiKey | null>(null);
  const [revokeBusy, setRevokeBusy] = useState(false);
  const [revokeError, setRevokeError] = useState<string | null>(null);
  const [notice, setNotice] = useState('');

  const all = keys.data?.data ?? [];
  const rows = showAll ? all : all.filter((key) => statusOf(key) === 'active');
  const hidden = all.length - rows.length;

  const revoke = async () => {
    if (!revoking) return;
    setRevokeBusy(true);
    setRevokeError(null);
    try {
      await client.admin.revokeApiKey(revoking.id);
      setNotice(`Revoked “${revoking.name}”: requests with it now fail.`);
      setRevoking(null);
      await queries.invalidateQueries({ queryKey: ['api-keys'] });
    } catch (error) {
      setRevokeError(`Not revoked. ${problem(error)}`);
    } finally {
      setRevokeBusy(false);
    }
  };

  return (
    <section aria-labelledby="keys-title" className="admin-page">
      <h1 id="keys-title">API keys</h1>
      <p className="muted lede">
        {admin ? 'Every key of every user. ' : 'Your keys. '}A key’s secret is shown once, when it is created; the list shows only its first characters.
      </p>
      <CreateKey
        admin={admin}
        onCreated={(key) => {
          setNotice('');
          setCreated(key);
          void queries.invalidateQueries({ queryKey: ['api-keys'] });
        }}
      />
      <SecretDialog created={created} onDone={() => setCreated(null)} />

      <section aria-labelledby="keys-list-title">
        <div className="page-head">
          <h2 id="keys-list-title">{admin ? 'All keys' : 'Your keys'}</h2>
          <label className="choice">
            <input type="checkbox" checked={showAll} onChange={(event) => setShowAll(event.target.checked)} /> Show revoked and expired keys
          </label>
        </div>
        <p role="status" className="ok">
          {notice}
        </p>
        {keys.isPending && <p aria-busy="true">Loading keys…</p>}
        {keys.isError && <ErrorState what="the API keys" error={keys.error} onRetry={() => void keys.refetch()} />}
        {keys.isSuccess && rows.length === 0 && (
          <p className="empty">{hidden > 0 ? `No active keys; ${hidden} revoked or expired (tick “Show revoked and expired keys”).` : 'No keys yet. Create one above.'}</p>
        )}
        {rows.length > 0 && (
          <TableWrap label="API keys">
            <table className="admin-table">
              <caption className="visually-hidden">API keys, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Key</th>
                  <th scope="col">Access</th>
                  <th scope="col">Owner</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Status</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((key) => {
                  const status = statusOf(key);
                  return (
                    <tr key={key.id}>
                      <th scope="row">
                        {key.name}
                        {key.id === caller.key_id && <>{' '}<span className="badge">this key</span></>}
                      </th>
                      <td>
                        <code>{key.prefix}…</code>
                      </td>
                      <td>
                        {key.access}
                        {key.app_id && <div className="muted small">app {key.app_id}</div>}
                      </td>
                      <td>
                        <Actor id={key.user_id} />
                      </td>
                      <td title={exact(key.created_at)}>{when(key.created_at)}</td>
                      <td title={exact(key.last_used_at)}>{key.last_used_at ? when(key.last_used_at) : 'never'}</td>
                      <td>
                        <span className={`badge badge-${status}`} title={status === 'revoked' ? exact(key.revoked_at) : status === 'expired' ? exact(key.expires_at) : undefined}>
                          {status}
                        </span>
                      </td>
                      <td>
                        {status === 'active' && (
                          <button
                            type="button"
                            className="danger"
                            onClick={() => {
                              setRevokeError(null);
                              setRevoking(key);
                            }}
                          >
                            Revoke<span className="visually-hidden"> {key.name}</span>
                          </button>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </TableWrap>
        )}
        {keys.data?.has_more && <p className="muted">Only the newest 1,000 keys are listed.</p>}
      </section>

      <ConfirmDialog
        open={revoking !== null}
        title={`Revoke “${revoking?.name ?? ''}”?`}
        confirmLabel="Revoke key"
        busy={revokeBusy}
        error={revokeError}
        onConfirm={() => void revoke()}
        onCancel={() => setRevoking(null)}
      >
        <p>Every request with this key fails from now on, on every api replica. A revoked key cannot be restored: create a new one instead.</p>
        {revoking?.id === caller.key_id && (
          <p className="warning">
            <strong>This is the key you are signed in with.</strong> The console stops working until you sign in with another key.
          </p>
        )}
      </ConfirmDialog>
    </section>
  );
}

function CreateKey({ admin, onCreated }: { admin: boolean; onCreated: (key: ApiKeyCreated) => void }) {
  const { client } = useConsole();
  const [name, setName] = useState('');
  const [access, setAccess] = useState<CreateApiKeyParams['access']>('agents');
  const [owner, setOwner] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [nameError, setNameError] = useState<string | null>(null);
  const [ownerError, setOwnerError] = useState<string | null>(null);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    setOwnerError(null);
    const trimmed = name.trim();
    setNameError(trimmed ? null : 'Give the key a name, to recognise it later.');
    if (!trimmed) return;
    const who = owner.trim();
    const params: CreateApiKeyParams = { name: trimmed, access, ...(who ? (UUID.test(who) ? { user_id: who } : { user_subject: who }) : {}) };
    setBusy(true);
    try {
      onCreated(await client.admin.createApiKey(params));
      setName('');
      setOwner('');
    } catch (caught) {
      const fields = fieldErrors(caught);
      const about = (field: string) => fields?.filter((f) => f.field === field).flatMap((f) => f.errors) ?? [];
      if (about('name').length > 0) setNameError(`Name ${about('name').join('; ')}`);
      const ownerProblems = [...about('user_id'), ...about('user_subject')];
      if (ownerProblems.length > 0) setOwnerError(`Owner ${ownerProblems.join('; ')}`);
      const rest = fields?.filter((f) => !['name', 'user_id', 'user_subject'].includes(f.field)) ?? [];
      if (!fields) setError(`Not created. ${problem(caught)}`);
      else if (rest.length > 0) setError(`Not created: ${rest.map((f) => `${f.field} ${f.errors.join('; ')}`).join(', ')}`);
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="create-key-title" className="panel">
      <h2 id="create-key-title">Create a key</h2>
      <form onSubmit={submit} noValidate className="admin-page">
        <div className="field">
          <label htmlFor="key-name">Name</label>
          <input
            id="key-name"
            value={name}
            onChange={(event) => setName(event.target.value)}
            maxLength={200}
            autoComplete="off"
            aria-invalid={nameError ? true : undefined}
            aria-describedby={nameError ? 'key-name-error' : undefined}
          />
          {nameError && (
            <p id="key-name-error" className="error">
              {nameError}
            </p>
          )}
        </div>
        <fieldset>
          <legend>Access</legend>
          <label className="choice">
            <input type="radio" name="key-access" value="agents" checked={access === 'agents'} onChange={() => setAccess('agents')} />
            <span>
              <strong>agents</strong>: the public agents API only (sessions, agents); admin routes answer 403
            </span>
          </label>
          <label className="choice">
            <input type="radio" name="key-access" value="full" checked={access === 'full'} onChange={() => setAccess('full')} />
            <span>
              <strong>full</strong>: also keys, and what its owner’s role allows under /api/v1/admin
            </span>
          </label>
        </fieldset>
        {admin && (
          <div className="field">
            <label htmlFor="key-owner">Owner (optional)</label>
            <input
              id="key-owner"
              value={owner}
              onChange={(event) => setOwner(event.target.value)}
              autoComplete="off"
              spellCheck={false}
              aria-invalid={ownerError ? true : undefined}
              aria-describedby={ownerError ? 'key-owner-hint key-owner-error' : 'key-owner-hint'}
            />
            <p id="key-owner-hint" className="muted hint">
              A user id (as on the Users page) or a user’s subject (the <code>sub</code> of their tokens; a new one makes the user). Empty: the key is yours.
            </p>
            {ownerError && (
              <p id="key-owner-error" className="error">
                {ownerError}
              </p>
            )}
          </div>
        )}
        {error && (
          <p role="alert" className="error">
            {error}
          </p>
        )}
        <div className="actions">
          <button type="submit" className="primary" disabled={busy}>
            {busy ? 'Creating…' : 'Create key'}
          </button>
        </div>
      </form>
    </section>
  );
}

/**
 * The new key's secret, this once: a modal with the secret selected for copying, a Copy button and
 * the warning. Done forgets it (it is in no list, no storage, no later page).
 */
function SecretDialog({ created, onDone }: { created: ApiKeyCreated | null; onDone: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const secretRef = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState('');
  const id = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (created && !dialog.open) {
      setCopied('');
      dialog.showModal();
      secretRef.current?.select();
    } else if (!created && dialog.open) {
      dialog.close();
      // Back to the form the key came from (its button was busy, so focus would be lost).
      document.getElementById('key-name')?.focus();
    }
  }, [created]);
  const copy = async () => {
    if (!created) return;
    try {
      await navigator.clipboard.writeText(created.secret);
      setCopied('Copied to the clipboard.');
    } catch {
      secretRef.current?.select();
      setCopied('The browser did not allow copying: the secret is selected, press Ctrl+C (⌘C on a Mac).');
    }
  };
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={`${id}-title`}
      aria-describedby={`${id}-once`}
      onCancel={(event) => {
        event.preventDefault();
        onDone();
      }}
    >
      {created && (
        <>
          <h2 id={`${id}-title`}>Key “{created.name}” created</h2>
          <p id={`${id}-once`} className="warning">
            <strong>Copy the secret now: you will not see it again.</strong> Only its first characters are kept for the list. If it is lost, revoke the key and create another.
          </p>
          <label htmlFor={`${id}-secret`}>Secret</label>
          <div className="secret">
            <input id={`${id}-secret`} ref={secretRef} readOnly value={created.secret} spellCheck={false} onFocus={(event) => event.target.select()} />
            <button type="button" className="primary" onClick={() => void copy()}>
              Copy
            </button>
          </div>
          <p role="status" className="ok">
            {copied}
          </p>
          <p className="muted small">
            Access <strong>{created.access}</strong>; send it as <code>Authorization: Bearer …</code>.
          </p>
          <div className="actions">
            <button type="button" onClick={onDone}>
              Done
            </button>
          </div>
        </>
      )}
    </dialog>
  );
}
