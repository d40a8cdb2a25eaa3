import { useInfiniteQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import type { AdminAgent, AgentsClient, AgentVersion } from '#libs/sdk';
import { Actor, ConfirmDialog, ErrorState, MorePages, problem, TableWrap } from '../admin-ui.js';
import { AgentEditor, definitionOf, versionJson } from '../agent-editor.js';
import { exact, when } from '../format.js';
import { navigate } from '../router.js';

// An administrator's tools on one agent's page (AgentsPage.tsx): its editor, its version history
// and its deletion.
const VERSIONS_PAGE = 20;

export function AdminAgentTools({ client, agent }: { client: AgentsClient; agent: AdminAgent }) {
  const queries = useQueryClient();
  const versions = useInfiniteQuery({
    queryKey: ['agent-versions', agent.id],
    queryFn: ({ pageParam }) => client.admin.agentVersions(agent.id, { limit: VERSIONS_PAGE, ...(pageParam ? { after: pageParam } : {}) }),
    initialPageParam: '',
    getNextPageParam: (last) => (last.has_more && last.last_id ? last.last_id : undefined),
  });
  const rows = versions.data?.pages.flatMap((page) => page.data) ?? [];
  // The editor starts from what was written for the current version (exact: defaults not filled
  // in), or from the agent's effective definition when the history cannot say.
  const current = rows.find((v) => v.version === agent.yuxi.version);
  const [loaded, setLoaded] = useState<{ text: string; key: string } | null>(null);
  const [viewing, setViewing] = useState<AgentVersion | null>(null);
  const ready = !versions.isPending;
  const initial = loaded?.text ?? (current ? versionJson(current) : JSON.stringify(definitionOf(agent), null, 2));
  // Stable across saves (the editor keeps what was saved and says so); a loaded version remounts it.
  const editorKey = loaded?.key ?? 'editor';

  const refresh = () => {
    void queries.invalidateQueries({ queryKey: ['admin-agents'] });
    void queries.invalidateQueries({ queryKey: ['agent-versions', agent.id] });
  };

  return (
    <>
      <section aria-labelledby="edit-title" className="panel">
        <h2 id="edit-title">Edit</h2>
        {ready ? (
          <AgentEditor
            key={editorKey}
            initial={initial}
            submitLabel="Save"
            save={(definition) => client.admin.putAgent(agent.id, definition)}
            onSaved={refresh}
          />
        ) : (
          <p aria-busy="true">Loading the definition…</p>
        )}
      </section>

      <section aria-labelledby="history-title">
        <h2 id="history-title">Version history</h2>
        {versions.isError && <ErrorState what="the version history" error={versions.error} onRetry={() => void versions.refetch()} />}
        {versions.isSuccess && rows.length === 0 && <p className="empty">No versions are kept for this agent yet; the next save makes the first.</p>}
        {rows.length > 0 && (
          <TableWrap label="Version history">
            <table className="admin-table">
              <caption className="visually-hidden">Versions of {agent.name}, newest first</caption>
              <thead>
                <tr>
                  <th scope="col">Version</th>
                  <th scope="col">Saved</th>
                  <th scope="col">By</th>
                  <th scope="col">
                    <span className="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {rows.map((version) => (
                  <tr key={version.version} aria-current={version.version === agent.yuxi.version ? 'true' : undefined}>
                    <th scope="row">
                      Version {version.version}
                      {version.version === agent.yuxi.version && (
                        <>
                          {' '}
                          <span className="badge">current</span>
                        </>
                      )}
                    </th>
                    <td title={exact(version.created_at)}>{when(version.created_at)}</td>
                    <td>
                      <Actor id={version.actor_id} />
                    </td>
                    <td>
                      <button type="button" aria-expanded={viewing?.version === version.version} aria-controls="version-view" onClick={() => setViewing(viewing?.version === version.version ? null : version)}>
                        View JSON<span className="visually-hidden"> of version {version.version}</span>
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
        <MorePages shown={rows.length} hasMore={versions.hasNextPage} loading={versions.isFetchingNextPage} onMore={() => void versions.fetchNextPage()} noun={['version', 'versions']} />
        <div id="version-view">
          {viewing && (
            <section aria-labelledby="version-view-title" className="panel">
              <h3 id="version-view-title">
                Version {viewing.version}, saved {exact(viewing.created_at)}
              </h3>
              <div className="json-view" role="region" aria-labelledby="version-view-title" tabIndex={0}>
                <pre>{versionJson(viewing)}</pre>
              </div>
              <div className="actions">
                <button
                  type="button"
                  onClick={() => {
                    setLoaded({ text: versionJson(viewing), key: `load-${viewing.version}-${Date.now()}` });
                    setViewing(null);
                    document.getElementById('edit-title')?.scrollIntoView();
                  }}
                >
                  Load into the editor
                </button>
                <button type="button" onClick={() => setViewing(null)}>
                  Close
                </button>
              </div>
              <p className="muted hint">Loading a version only fills the editor; Save makes it the next version.</p>
            </section>
          )}
        </div>
      </section>

      <DeleteAgent client={client} agent={agent} />
    </>
  );
}

function DeleteAgent({ client, agent }: { client: AgentsClient; agent: AdminAgent }) {
  const queries = useQueryClient();
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await client.admin.deleteAgent(agent.id);
      setOpen(false);
      await queries.invalidateQueries({ queryKey: ['admin-agents'] });
      navigate('/agents');
    } catch (caught) {
      setError(`Not deleted. ${problem(caught)}`);
    } finally {
      setBusy(false);
    }
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    setError(null);
    setOpen(true);
  };
  return (
    <section aria-labelledby="delete-title" className="panel danger-zone">
      <h2 id="delete-title">Delete</h2>
      <form onSubmit={submit}>
        <p>Sessions created with this agent keep working with their snapshot; no new session can use it, and its version history goes with it.</p>
        <button type="submit" className="danger">
          Delete agent
        </button>
      </form>
      <ConfirmDialog open={open} title={`Delete ${agent.name}?`} confirmLabel="Delete agent" busy={busy} error={error} onConfirm={() => void confirm()} onCancel={() => setOpen(false)}>
        <p>
          <code>{agent.id}</code> will no longer be available for new sessions. This cannot be undone from the console.
        </p>
      </ConfirmDialog>
    </section>
  );
}
