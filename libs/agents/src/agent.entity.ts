import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { EnvironmentConfig } from '#libs/environments';
import type { ToolDeclaration } from '#libs/tools';
import type { SessionTtl } from './session-ttl.js';

/**
 * `default`: ask before a server tool that declares `requires_approval`; `always_ask`: before every
 * server tool call; `always_trust`: never.
 */
export type ToolApprovalMode = 'default' | 'always_ask' | 'always_trust';
export const TOOL_APPROVAL_MODES: readonly ToolApprovalMode[] = ['default', 'always_ask', 'always_trust'];

export type AgentVisibility = 'public' | 'private';
export const AGENT_VISIBILITIES: readonly AgentVisibility[] = ['public', 'private'];

/** Per-turn limits; a turn that reaches one fails with a clear code. */
export interface AgentLimits {
  max_model_calls: number;
  max_tool_calls: number;
  turn_timeout_s: number;
}

export const DEFAULT_AGENT_LIMITS: AgentLimits = { max_model_calls: 25, max_tool_calls: 50, turn_timeout_s: 900 };

export const COMPACTION_MODES = ['auto', 'manual', 'off'] as const;
export type CompactionMode = (typeof COMPACTION_MODES)[number];

/**
 * How the agent's sessions manage the model context (README "Context and compaction"): only
 * what the definition sets; the runtime fills in defaults (libs/runtime/src/context-policy.ts).
 */
export interface AgentContext {
  /** The model's window in tokens; default by model (scripted: 32,768; unknown openai models: 128,000). */
  window_tokens?: number;
  compaction?: {
    mode?: CompactionMode;
    /** Fraction of the window at which auto compaction starts (default 0.8). */
    threshold?: number;
    keep_recent_tokens?: number;
    /** The summariser, `provider:model` (default the agent's model). */
    model?: string;
    /** Added to the summary prompt. */
    instructions?: string;
  };
}

/**
 * Cooperation (README "Cooperation: subagents and trees"): an agent that enables it is a
 * coordinator, given create / message / wait / interrupt tools for members of its tree.
 */
export interface MultiAgentPolicy {
  enabled: boolean;
  /** At most this many members of one tree run at once; more wait queued (default 6, 1–20). */
  max_concurrent_subagents: number;
  /** How deep a tree grows: 1 (default) = members do not spawn members of their own (1–5). */
  max_depth: number;
  /** The agents members may be created with; absent: the coordinator's own. */
  agents?: string[];
}

export const DEFAULT_MULTI_AGENT = { max_concurrent_subagents: 6, max_depth: 1 } as const;

/** What a session (and each input it receives) keeps of its agent: editing the agent later changes nothing here. */
export interface AgentSnapshot {
  version: number;
  tools: ToolDeclaration[];
  limits: AgentLimits;
  /** Absent on sessions created before agents had it (the defaults apply). */
  context?: AgentContext;
  /** Present when the agent enables cooperation (members inherit their root's). */
  multi_agent?: MultiAgentPolicy;
  /** Who may override what on the session (absent on sessions from before overrides had a policy: only the deployment's allowlist applies). */
  policy?: AgentPolicySnapshot;
  /** The agent's session TTL when it sets one: the bound a session's own `yuxi.ttl` may not pass on a later update. */
  ttl?: SessionTtl;
}

/**
 * What the agent's owner decided about callers who do not manage the agent (libs/agents
 * agent-policy.ts applies it where a model or an approval mode is overridden).
 */
export interface AgentPolicySnapshot {
  /** The agent's owner; null: a public agent (administrators manage it). */
  owner_id: string | null;
  /** The agent's effective model when the session was created: keeping (or going back to) it is no switch. */
  model: string;
  /** Models such callers may switch to; null: none (they keep the agent's model). */
  allowed_models: string[] | null;
  /** The agent's own approval mode: with `tool_approval_pinned`, the floor such callers cannot go below. */
  tool_approval_mode: ToolApprovalMode;
  tool_approval_pinned: boolean;
}

@Entity('agents')
export class AgentEntity {
  @PrimaryColumn('varchar') id!: string;
  /** null: a public agent every caller can see; else the private agent's owner. */
  @Column('uuid', { name: 'owner_id', nullable: true }) ownerId!: string | null;
  @Column('text') name!: string;
  @Column('text') description!: string;
  @Column('text') instructions!: string;
  /** null: the deployment's DEFAULT_MODEL. */
  @Column('varchar', { nullable: true }) model!: string | null;
  @Column('varchar', { name: 'tool_approval_mode' }) toolApprovalMode!: ToolApprovalMode;
  /** Models callers who do not manage the agent may override to; null: none. */
  @Column('text', { name: 'allowed_models', array: true, nullable: true }) allowedModels!: string[] | null;
  /** Callers who do not manage the agent may raise its approval mode, never lower it. */
  @Column('boolean', { name: 'tool_approval_pinned' }) toolApprovalPinned!: boolean;
  @Column('jsonb') tools!: ToolDeclaration[];
  /** Only the limits the definition sets; the rest come from DEFAULT_AGENT_LIMITS. */
  @Column('jsonb') limits!: Partial<AgentLimits>;
  @Column('jsonb') context!: AgentContext;
  @Column('jsonb', { name: 'multi_agent', nullable: true }) multiAgent!: MultiAgentPolicy | null;
  @Column('varchar') visibility!: AgentVisibility;
  /** The environment its sessions get unless they ask for none or tighten it; null: none. Its limits: only those it sets. */
  @Column('jsonb', { nullable: true }) environment!: EnvironmentConfig | null;
  /** How long its sessions may stay idle before they are archived, and deleted; null: no TTL. */
  @Column('jsonb', { nullable: true }) ttl!: SessionTtl | null;
  @Column('integer') version!: number;
  @Column('timestamptz', { name: 'deleted_at', nullable: true }) deletedAt!: Date | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt!: Date;
}
