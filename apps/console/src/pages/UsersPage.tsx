import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import type { ListUsersParams, User, UserRole } from '#libs/sdk';
import { ErrorState, MorePages, problem, TableWrap } from '../admin-ui.js';
import { useConsole } from '../caller.js';
import { exact, shortId, when } from '../format.js';
import '../admin.css';

type Kind = NonNullable<ListUsersParams['kind']>;
const KINDS: { value: Kind; label: string }[] = [
  { value: 'user', label: 'Product users' },
  { value: 'end_user', label: 'End users of apps' },
  { value: 'all', label: 'All' },
];
const ROLES: { value: UserRole; label: string }[] = [
  { value: null, label: 'No role' },
  { value: 'viewer', label: 'Viewer (reads every session)' },
  { value: 'operator', label: 'Operator (reads and acts on every session)' },
  { value: 'admin', label: 'Admin (everything)' },
];
const PAGE = 50;

function nameOf(user: User): string {
  if (user.kind === 'end_user') return user.subject === '' ? `default end user of ${user.app_id}` : `${user.subject ?? shortId(user.id)}`;
  return user.subject ?? `user ${shortId(user.id)}`;
}

/** Users by kind, a cursor page at a time; an administrator grants or removes a product user's role. */
export function UsersPage() {
  const { client } = useConsole();
  const [kind, setKind] = useState<Kind>('user');
  const [notice, setNotice] = useState('');
  const [error, setError] = useState('');
  const users = useInfiniteQuery({
    queryKey: ['users', kind],
    queryFn: ({ pageParam }) => client.admin.users({ kind, limit: PAGE, ...(pageParam ? { after: pageParam } : {}) }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const rows = users.data?.pages.flatMap((page) => page.data) ?? [];
  return (
    <section aria-labelledby="users-title" className="admin-page">
      <h1 id="users-title">Users</h1>
      <p className="muted lede">
        The principals sessions and keys belong to, newest first. Roles apply from the user’s next request: <strong>viewer</strong> reads every session, <strong>operator</strong> also acts on them, <strong>admin</strong> does
        everything. End users of apps hold no role.
      </p>
      <div className="toolbar">
        <div className="field">
          <label htmlFor="users-kind">Kind</label>
          <select
            id="users-kind"
            value={kind}
            onChange={(event) => {
              setNotice('');
              setError('');
              setKind(event.target.value as Kind);
            }}
          >
            {KINDS.map((choice) => (
              <option key={choice.value} value={choice.value}>
                {choice.label}
              </option>
            ))}
          </select>
        </div>
      </div>
      <p role="status" className="ok">
        {notice}
      </p>
      {error && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
      {users.isPending && <p aria-busy="true">Loading users…</p>}
      {users.isError && <ErrorState what="the users" error={users.error} onRetry={() => void users.refetch()} />}
      {users.isSuccess && rows.length === 0 && (
        <p className="empty">
          {kind === 'end_user' ? 'No end users yet: they appear when an app-bound key acts for one.' : 'No users of this kind yet: a user appears with their first key or token.'}
        </p>
      )}
      {rows.length > 0 && (
        <TableWrap label="Users">
          <table className="admin-table">
            <caption className="visually-hidden">Users, newest first</caption>
            <thead>
              <tr>
                <th scope="col">User</th>
                <th scope="col">Kind</th>
                <th scope="col">Role</th>
                <th scope="col">Since</th>
                <th scope="col">Access</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((user) => (
                <UserRow
                  key={user.id}
                  user={user}
                  onSaved={(saved, message) => {
                    setError('');
                    setNotice(message ?? (saved.role ? `${nameOf(saved)} is now ${saved.role === 'admin' ? 'an admin' : `a ${saved.role}`}.` : `${nameOf(saved)} holds no role now.`));
                  }}
                  onFailed={(message) => {
                    setNotice('');
                    setError(message);
                  }}
                />
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
      <MorePages shown={rows.length} hasMore={users.hasNextPage} loading={users.isFetchingNextPage} onMore={() => void users.fetchNextPage()} noun={['user', 'users']} />
    </section>
  );
}

function UserRow({ user, onSaved, onFailed }: { user: User; onSaved: (user: User, message?: string) => void; onFailed: (message: string) => void }) {
  const { client, caller } = useConsole();
  const queries = useQueryClient();
  const [role, setRole] = useState<UserRole>(user.role);
  const [busy, setBusy] = useState(false);
  const name = nameOf(user);
  const selectId = `role-${user.id}`;
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    try {
      const saved = await client.admin.setUserRole(user.id, role);
      onSaved(saved);
      await queries.invalidateQueries({ queryKey: ['users'] });
      if (user.id === caller.actor_id) await queries.invalidateQueries({ queryKey: ['me'] });
    } catch (error) {
      setRole(user.role);
      onFailed(`The role of ${name} was not changed. ${problem(error)}`);
    } finally {
      setBusy(false);
    }
  };
  const toggleSuspension = async () => {
    setBusy(true);
    try {
      const saved = user.suspended_at ? await client.admin.reactivateUser(user.id) : await client.admin.suspendUser(user.id);
      onSaved(saved, saved.suspended_at ? `${name} is suspended: their keys and tokens are refused.` : `${name} is active again.`);
      await queries.invalidateQueries({ queryKey: ['users'] });
    } catch (error) {
      onFailed(`${name} was not ${user.suspended_at ? 'reactivated' : 'suspended'}. ${problem(error)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <tr>
      <th scope="row">
        {name}
        {user.id === caller.actor_id && <>{' '}<span className="badge">you</span></>}
        <div className="muted small">
          <code title={user.id}>{user.id}</code>
        </div>
      </th>
      <td>
        {user.kind === 'end_user' ? 'end user' : 'product user'}
        {user.app_id && <div className="muted small">app {user.app_id}</div>}
      </td>
      <td>
        {user.kind === 'user' ? (
          <form className="actions" onSubmit={save}>
            <label htmlFor={selectId} className="visually-hidden">
              Role of {name}
            </label>
            <select id={selectId} value={role ?? ''} onChange={(event) => setRole((event.target.value || null) as UserRole)}>
              {ROLES.map((choice) => (
                <option key={choice.value ?? 'none'} value={choice.value ?? ''}>
                  {choice.label}
                </option>
              ))}
            </select>
            <button type="submit" disabled={busy || role === user.role}>
              {busy ? 'Saving…' : 'Save role'}
              <span className="visually-hidden"> of {name}</span>
            </button>
          </form>
        ) : (
          <span className="muted">none (end user)</span>
        )}
      </td>
      <td title={exact(user.created_at)}>{when(user.created_at)}</td>
      <td>
        {user.suspended_at ? <span className="badge">suspended</span> : <span className="muted">active</span>}
        {user.kind === 'user' && user.id !== caller.actor_id && (
          <div className="actions">
            <button type="button" disabled={busy} onClick={() => void toggleSuspension()}>
              {user.suspended_at ? 'Reactivate' : 'Suspend'}
              <span className="visually-hidden"> {name}</span>
            </button>
          </div>
        )}
      </td>
    </tr>
  );
}
