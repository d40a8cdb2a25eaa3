import { article, shortId, statusText } from '../format.js';
import type { CooperationState, TimelineMember } from '#libs/sdk';
import { navigate } from '../router.js';

/** One session of a cooperation tree, as the tree view shows it. */
export interface TreeNode {
  id: string;
  name: string | null;
  status: string;
  agentId: string;
  parentId: string | null;
  waitpointKind?: string | null;
}

function SessionLink({ id, children, current }: { id: string; children: string; current: boolean }) {
  return (
    <a
      href={`/console/sessions/${id}`}
      aria-current={current ? 'page' : undefined}
      onClick={(event) => {
        if (event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
        event.preventDefault();
        navigate(`/sessions/${id}`);
      }}
    >
      {children}
    </a>
  );
}

/** The whole tree from `/state`'s `agent_state.cooperation` (the owner's view). */
export function treeFromState(cooperation: CooperationState): TreeNode[] {
  return cooperation.members.map((member) => ({
    id: member.session_id,
    name: member.name,
    status: member.status,
    agentId: member.agent_id,
    parentId: member.parent_session_id,
    waitpointKind: member.waitpoint_kind,
  }));
}

/** The members this session spawned, from the admin timeline (another owner's session). */
export function treeFromMembers(sessionId: string, members: TimelineMember[]): TreeNode[] {
  return members.map((member) => ({ id: member.id, name: member.name, status: member.status, agentId: member.agent_id, parentId: sessionId }));
}

/**
 * A cooperation tree as nested lists of links: the root, its members under it, and so on; the
 * session shown now is marked. `rootId` is the tree's root, `parentId` this session's coordinator.
 */
export function MemberTree({ sessionId, rootId, parentId, nodes, note }: { sessionId: string; rootId: string; parentId: string | null; nodes: TreeNode[]; note?: string }) {
  const children = (id: string) => nodes.filter((node) => node.parentId === id);
  const render = (id: string, label: string, depth: number) => {
    const below = depth < 8 ? children(id) : [];
    return (
      <li key={id}>
        <SessionLink id={id} current={id === sessionId}>
          {label}
        </SessionLink>
        {below.length > 0 && <ul>{below.map((node) => render(node.id, describe(node), depth + 1))}</ul>}
      </li>
    );
  };
  // The root's own members when the tree is known from the root down; else this session's.
  const top = nodes.some((node) => node.parentId === rootId) || rootId === sessionId ? rootId : sessionId;
  return (
    <nav aria-label="Cooperation tree" className="tree">
      <h2>Cooperation tree</h2>
      {note && <p className="muted">{note}</p>}
      {parentId && parentId !== rootId && (
        <p>
          Coordinator: <SessionLink id={parentId} current={false}>{`session ${shortId(parentId)}`}</SessionLink>
        </p>
      )}
      <ul>
        {top === rootId
          ? render(rootId, rootId === sessionId ? 'This session (root)' : `Root session ${shortId(rootId)}`, 0)
          : [
              <li key={rootId}>
                <SessionLink id={rootId} current={false}>{`Root session ${shortId(rootId)}`}</SessionLink>
                <ul>{render(sessionId, 'This session', 1)}</ul>
              </li>,
            ]}
      </ul>
    </nav>
  );
}

function describe(node: TreeNode): string {
  const waiting = node.waitpointKind ? `, waiting at ${article(node.waitpointKind)} ${statusText(node.waitpointKind)}` : '';
  return `${node.name || shortId(node.id)} (${node.agentId}) · ${statusText(node.status)}${waiting}`;
}
