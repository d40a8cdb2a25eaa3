import type { AgentSnapshot, CompactionMode, EffectiveTtl } from '#libs/agents';
import type { SessionEntity } from './session.entity.js';

/** What SessionsRepository.create and update take. */
export interface NewSession {
  ownerId: string;
  agentId: string;
  model: string;
  toolApprovalMode: string;
  instructions: string;
  agentSnapshot: AgentSnapshot;
  title: string;
  projectId: string | null;
  /** A root whose agent enables multi_agent: its tree's cap on running members. */
  treeMaxConcurrent?: number | null;
  /** The workdir the session shares (its project's id); omitted: a workdir of its own (the session's id). */
  workdirId?: string;
  /** The caller's labels (validated by the API); omitted: none. */
  metadata?: Record<string, string>;
  environment?: SessionEntity['environment']; // normalised by the API; omitted: none
  /** The effective session TTL (resolveSessionTtl); omitted: none. */
  ttl?: EffectiveTtl;
}

/** Presentation and default-configuration changes; each field optional. */
export interface SessionPatch {
  title?: string;
  isPinned?: boolean;
  unread?: boolean;
  model?: string;
  toolApprovalMode?: string;
  compactionMode?: CompactionMode;
  /** Replaces the whole map (as OpenAI's metadata updates do). */
  metadata?: Record<string, string>;
  /** The session's TTL, resolved again from its new own `yuxi.ttl` (or none) and its project's and agent's. */
  ttl?: EffectiveTtl;
  /** An update though no column above changes (the session's budget, in its own table, did): the revision moves. */ touched?: boolean;
}
