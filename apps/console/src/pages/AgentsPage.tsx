import { useQuery } from '@tanstack/react-query';
import type { AgentsClient } from '#libs/sdk';

/** The agents this caller may run (editing them lands with the operator API). */
export function AgentsPage({ client }: { client: AgentsClient }) {
  const agents = useQuery({ queryKey: ['agents'], queryFn: () => client.agents.list() });
  return (
    <section aria-labelledby="agents-title">
      <h1 id="agents-title">Agents</h1>
      {agents.isError && (
        <p role="alert" className="error">
          Could not load agents: {String(agents.error)}.
        </p>
      )}
      {agents.isSuccess && agents.data.data.length === 0 && <p className="empty">No agents are visible to this key.</p>}
      {agents.isSuccess && agents.data.data.length > 0 && (
        <ul className="cards">
          {agents.data.data.map((agent) => (
            <li key={agent.id}>
              <h2>{agent.name}</h2>
              <p className="muted">{agent.id}</p>
              {agent.description && <p>{agent.description}</p>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
