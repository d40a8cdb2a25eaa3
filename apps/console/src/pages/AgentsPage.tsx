import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { AdminAgent, Agent, AgentsClient } from '#libs/sdk';
import { ErrorState, TableWrap } from '../admin-ui.js';
import { AgentEditor, NEW_AGENT_TEMPLATE } from '../agent-editor.js';
import { may, useConsole } from '../caller.js';
import { exact, when } from '../format.js';
import { link, navigate, usePath } from '../router.js';
import '../admin.css';
import { AdminAgentTools } from './AgentAdminTools.js';

const AGENT_ID = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** `/agents`: the agents this caller sees; `/agents/{id}`: one, with its editor and version history for administrators. */
export function AgentsPage({ client }: { client: AgentsClient }) {
  const path = usePath();
  const one = /^\/agents\/([^/]+)$/.exec(path);
  if (one) return <AgentDetail client={client} agentId={decodeURIComponent(one[1]!)} />;
  return <AgentList client={client} />;
}


/** Administrators read every agent with its definition; other callers the agents they may run. */
function useAgents(client: AgentsClient, admin: boolean) {
  return useQuery({
    queryKey: admin ? ['admin-agents'] : ['agents'],
    queryFn: (): Promise<{ data: (Agent | AdminAgent)[] }> => (admin ? client.admin.listAgents() : client.agents.list()),
  });
}

function AgentList({ client }: { client: AgentsClient }) {
  const { caller } = useConsole();
  const admin = may.administer(caller);
  const agents = useAgents(client, admin);
  const [creating, setCreating] = useState(false);
  const rows = agents.data?.data ?? [];
  return (
    <section aria-labelledby="agents-title" className="admin-page">
      <div className="page-head">
        <h1 id="agents-title">Agents</h1>
        {admin && (
          <button type="button" className="primary" aria-expanded={creating} aria-controls="new-agent" onClick={() => setCreating(!creating)}>
            New agent
          </button>
        )}
      </div>
      <p className="muted lede">
        {admin ? 'Every saved agent, private ones included. Open one to edit its definition or read its version history.' : 'The agents this key may start sessions with. Only administrators edit them.'}
      </p>
      {admin && creating && <NewAgent client={client} onCancel={() => setCreating(false)} />}
      {agents.isPending && <p aria-busy="true">Loading agents…</p>}
      {agents.isError && <ErrorState what="the agents" error={agents.error} onRetry={() => void agents.refetch()} />}
      {agents.isSuccess && rows.length === 0 && (
        <p className="empty">{admin ? 'No agents yet. Create one with “New agent”.' : 'No agents are visible to this key. Ask an administrator to make one public.'}</p>
      )}
      {rows.length > 0 && (
        <TableWrap label="Agents">
          <table className="admin-table">
            <caption className="visually-hidden">Agents by id</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Id</th>
                <th scope="col">Model</th>
                <th scope="col" className="num">
                  Version
                </th>
                <th scope="col">Visibility</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((agent) => (
                <tr key={agent.id}>
                  <td className="wrap">
                    <a {...link(`/agents/${encodeURIComponent(agent.id)}`)}>{agent.name}</a>
                    {agent.description && <div className="muted small">{agent.description}</div>}
                  </td>
                  <td>
                    <code>{agent.id}</code>
                  </td>
                  <td>
                    <code>{agent.model}</code>
                  </td>
                  <td className="num">{agent.yuxi.version}</td>
                  <td>
                    <span className={`badge badge-${agent.yuxi.visibility}`}>{agent.yuxi.visibility}</span>
                  </td>
                  <td title={exact(agent.yuxi.updated_at)}>{when(agent.yuxi.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </section>
  );
}

function NewAgent({ client, onCancel }: { client: AgentsClient; onCancel: () => void }) {
  const queries = useQueryClient();
  const [agentId, setAgentId] = useState('');
  const [idError, setIdError] = useState<string | null>(null);
  const precheck = (): boolean => {
    const id = agentId.trim();
    const error = !id ? 'Enter the agent id first.' : AGENT_ID.test(id) ? null : 'The agent id must be 1–64 characters a-z, 0-9, _ and -, starting with a letter or digit.';
    setIdError(error);
    if (error) document.getElementById('new-agent-id')?.focus();
    return error === null;
  };
  return (
    <section id="new-agent" aria-labelledby="new-agent-title" className="panel">
      <h2 id="new-agent-title">New agent</h2>
      <div className="field">
        <label htmlFor="new-agent-id">Agent id</label>
        <input
          id="new-agent-id"
          value={agentId}
          onChange={(event) => setAgentId(event.target.value)}
          autoComplete="off"
          spellCheck={false}
          aria-invalid={idError ? true : undefined}
          aria-describedby={idError ? 'new-agent-id-hint new-agent-id-error' : 'new-agent-id-hint'}
          placeholder="support-bot"
        />
        <p id="new-agent-id-hint" className="muted hint">
          Lowercase letters, digits, <code>_</code> and <code>-</code>; it cannot be changed later. An existing id is replaced.
        </p>
        {idError && (
          <p id="new-agent-id-error" role="alert" className="error">
            {idError}
          </p>
        )}
      </div>
      <AgentEditor
        initial={NEW_AGENT_TEMPLATE}
        submitLabel="Create agent"
        precheck={precheck}
        save={(definition) => client.admin.putAgent(agentId.trim(), definition)}
        onSaved={(agent) => {
          void queries.invalidateQueries({ queryKey: ['admin-agents'] });
          navigate(`/agents/${encodeURIComponent(agent.id)}`);
        }}
      />
      <button type="button" onClick={onCancel}>
        Cancel
      </button>
    </section>
  );
}

function AgentDetail({ client, agentId }: { client: AgentsClient; agentId: string }) {
  const { caller } = useConsole();
  const admin = may.administer(caller);
  // Administrators: from the admin list (a private agent of another user is not in the public route).
  const list = useQuery({ queryKey: ['admin-agents'], queryFn: () => client.admin.listAgents(), enabled: admin });
  const single = useQuery({ queryKey: ['agent', agentId], queryFn: () => client.agents.get(agentId), enabled: !admin });
  const query = admin ? list : single;
  const agent: Agent | AdminAgent | undefined = admin ? list.data?.data.find((a) => a.id === agentId) : single.data;
  return (
    <section aria-labelledby="agent-title" className="admin-page">
      <p className="crumbs">
        <a {...link('/agents')}>← All agents</a>
      </p>
      <h1 id="agent-title">{agent?.name ?? agentId}</h1>
      {query.isPending && <p aria-busy="true">Loading the agent…</p>}
      {query.isError && <ErrorState what="this agent" error={query.error} onRetry={() => void query.refetch()} />}
      {query.isSuccess && !agent && (
        <p className="empty" role="alert">
          There is no agent <code>{agentId}</code> (it may have been deleted). <a {...link('/agents')}>Back to the agents</a>.
        </p>
      )}
      {agent && <AgentSummary agent={agent} />}
      {agent && admin && <AdminAgentTools client={client} agent={agent as AdminAgent} />}
      {agent && !admin && (
        <section aria-labelledby="agent-definition-title">
          <h2 id="agent-definition-title">Definition</h2>
          <p className="muted">Read only: administrators edit agents.</p>
          <div className="json-view" role="region" aria-labelledby="agent-definition-title" tabIndex={0}>
            <pre>{JSON.stringify({ tools: agent.yuxi.tools, limits: agent.yuxi.limits, context: agent.yuxi.context, multi_agent: agent.yuxi.multi_agent }, null, 2)}</pre>
          </div>
        </section>
      )}
    </section>
  );
}

function AgentSummary({ agent }: { agent: Agent | AdminAgent }) {
  const tools = agent.yuxi.tools as { type: string; name?: string; server_label?: string }[];
  return (
    <dl className="facts">
      <div>
        <dt>Id</dt>
        <dd>
          <code>{agent.id}</code>
        </dd>
      </div>
      <div>
        <dt>Model</dt>
        <dd>
          <code>{agent.model}</code>
        </dd>
      </div>
      <div>
        <dt>Version</dt>
        <dd>{agent.yuxi.version}</dd>
      </div>
      <div>
        <dt>Visibility</dt>
        <dd>{agent.yuxi.visibility}</dd>
      </div>
      <div>
        <dt>Updated</dt>
        <dd title={exact(agent.yuxi.updated_at)}>{when(agent.yuxi.updated_at)}</dd>
      </div>
      <div>
        <dt>Tools</dt>
        <dd>{tools.length === 0 ? 'none' : tools.map((tool) => tool.name ?? tool.server_label ?? tool.type).join(', ')}</dd>
      </div>
      {agent.description && (
        <div className="wide">
          <dt>Description</dt>
          <dd>{agent.description}</dd>
        </div>
      )}
    </dl>
  );
}
