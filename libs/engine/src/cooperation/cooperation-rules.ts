import type { AgentSnapshot, MultiAgentPolicy } from '#libs/agents';
import { derivedId } from '#libs/database';
import type { MemberState } from './tree.repository.js';

/**
 * The rules of cooperation trees that need no database (README "Cooperation: subagents and
 * trees"): a member's id, its snapshot, when a member has settled, and when a coordinator's wait
 * resolves with which output. Unit-tested in test/unit/cooperation.test.ts.
 */

/** A member's id, derived from the call that spawned it: a retried or taken-over create meets the member it made. */
export function memberSessionId(turnId: string, callId: string): string {
  return derivedId(`subagent:${turnId}:${callId}`);
}

/** The member a message or interrupt call names (`subagent_id`: an id or a name); null when its arguments name none. */
export function namedMember(argumentsJson: string): string | null {
  try {
    const args = JSON.parse(argumentsJson) as { subagent_id?: unknown };
    return typeof args.subagent_id === 'string' ? args.subagent_id : null;
  } catch {
    return null;
  }
}

/**
 * What a member keeps of its agent: its tools without `function` ones (no client answers a
 * member's calls), and the root's cooperation policy, so the whole tree shares one cap and depth.
 */
export function memberSnapshot(agent: AgentSnapshot, rootPolicy: MultiAgentPolicy): AgentSnapshot {
  return { ...agent, tools: agent.tools.filter((tool) => tool.type !== 'function'), multi_agent: rootPolicy };
}

/** Whether a coordinator may spawn a member below itself: cooperation on, and the tree not at its depth. */
export function maySpawn(policy: MultiAgentPolicy | undefined, depth: number): policy is MultiAgentPolicy {
  return policy?.enabled === true && depth + 1 <= policy.max_depth;
}

/** The deployment's bounds on a tree's growth (MAX_SUBAGENTS_PER_TREE, MAX_SUBAGENT_CREATES_PER_TURN; 0: none). */
export interface TreeCaps {
  maxMembers: number;
  maxCreatesPerTurn: number;
}

/**
 * Why one more member may not be created (the tool output says so; the turn goes on), or null:
 * a tree holds at most `maxMembers` members, and one coordinator turn creates at most
 * `maxCreatesPerTurn`, so one tenant's fan-out stays bounded however its model loops.
 */
export function createCapRefusal(counts: { members: number; byTurn: number }, caps: TreeCaps): string | null {
  if (caps.maxCreatesPerTurn > 0 && counts.byTurn >= caps.maxCreatesPerTurn) {
    return `create_subagent refused: this turn already created ${counts.byTurn} subagents, the most one turn may create (${caps.maxCreatesPerTurn}); wait for them or message them instead`;
  }
  if (caps.maxMembers > 0 && counts.members >= caps.maxMembers) {
    return `create_subagent refused: this cooperation tree already has ${counts.members} subagents, the most a tree may have (${caps.maxMembers}); message the ones you have instead`;
  }
  return null;
}

/** A member has settled when nothing of it runs and nothing will run by itself: no active turn, and an empty or paused queue. */
export function isSettled(member: MemberState): boolean {
  return member.activeTurnId === null && (member.pendingInputCount === 0 || member.queuePaused);
}

/** The member's status as a wait reports it. */
export function memberStatus(member: MemberState): string {
  if (member.activeTurnId !== null) return 'running';
  if (member.pendingInputCount > 0 && !member.queuePaused) return 'queued';
  if (member.pendingInputCount > 0) return 'paused';
  return member.lastStatus ?? 'idle';
}

/** A member's status as `/state.agent_state.cooperation` lists it (the session's own status vocabulary). */
export function memberSessionStatus(member: MemberState): string {
  if (member.activeTurnId !== null) return member.activeStatus === 'requires_action' ? 'requires_action' : 'in_progress';
  if (member.pendingInputCount > 0 && !member.queuePaused) return 'queued';
  return member.lastStatus ?? 'idle';
}

/** The name of a member created without one: the first `subagent-N` no sibling has. */
export function freeMemberName(siblings: readonly Pick<MemberState, 'name'>[]): string {
  const taken = new Set(siblings.map((m) => m.name));
  for (let n = siblings.length + 1; ; n += 1) if (!taken.has(`subagent-${n}`)) return `subagent-${n}`;
}

/** Finds a member by id, or by the name its coordinator gave it. */
export function findMember(members: readonly MemberState[], idOrName: string): MemberState | undefined {
  return members.find((m) => m.id === idOrName) ?? members.find((m) => m.name === idOrName);
}

export interface WaitCall {
  call_id: string;
  arguments: string;
}

export type CallOutcome = { success: boolean; output: string };

/**
 * The outcome of each wait call once it resolves: `all` (default) when every member it names has
 * settled, `any` when one has; a wait that names no member, or one that is not the coordinator's,
 * resolves at once with an error output. Null while some call still waits.
 */
export function resolveWaits(calls: readonly WaitCall[], members: readonly MemberState[]): Record<string, CallOutcome> | null {
  const results: Record<string, CallOutcome> = {};
  for (const call of calls) {
    const outcome = resolveWait(call, members);
    if (!outcome) return null;
    results[call.call_id] = outcome;
  }
  return results;
}

function resolveWait(call: WaitCall, members: readonly MemberState[]): CallOutcome | null {
  let args: { subagent_ids?: unknown; mode?: unknown } = {};
  try {
    args = JSON.parse(call.arguments || '{}') as typeof args;
  } catch {
    // Arguments were validated against the tool's schema before the wait; unparsable means none.
  }
  const mode = args.mode === 'any' ? 'any' : 'all';
  const ids = Array.isArray(args.subagent_ids) ? args.subagent_ids.filter((id): id is string => typeof id === 'string') : null;
  const targets: MemberState[] = [];
  for (const id of ids ?? members.map((m) => m.id)) {
    const member = findMember(members, id);
    if (!member) return { success: false, output: `Unknown subagent ${id}: not one of yours` };
    if (!targets.includes(member)) targets.push(member);
  }
  if (targets.length === 0) return { success: false, output: 'You have no subagents to wait for' };
  const settled = targets.filter(isSettled);
  if (mode === 'all' ? settled.length < targets.length : settled.length === 0) return null;
  return { success: true, output: JSON.stringify({ mode, subagents: targets.map(memberReport) }) };
}

/** What a wait's output says of a member: the model reads its status and final answer. */
export function memberReport(member: MemberState): Record<string, unknown> {
  return {
    subagent_id: member.id,
    name: member.name,
    status: memberStatus(member),
    turn_id: member.lastTurnId,
    answer: isSettled(member) ? member.answer : null,
    error_code: isSettled(member) ? member.errorCode : null,
  };
}
