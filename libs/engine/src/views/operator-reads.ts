import type { PublicError, StepOutput, Usage, Waitpoint, WaitpointKind } from '../tables/turn.entities.js';
import type { RunStatus, StepKind, StepStatus, TurnStatus } from '../machines/turn-states.js';

/**
 * What the operator API reads of turns, runs and steps: row shapes of the repositories'
 * timeline, inbox and fleet statements. Times are Date; text fields are cut at `TIMELINE_TEXT_MAX`
 * characters in SQL, so a page of a long history never carries megabytes of tool output.
 */
export const TIMELINE_TEXT_MAX = 4_000;

export interface TimelineRunRow {
  id: string;
  turnId: string;
  seq: number;
  status: RunStatus;
  model: string;
  inputIds: string[];
  resumeFromRunId: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  epoch: number;
  usage: Usage | null;
  error: PublicError | null;
  createdAt: Date;
  startedAt: Date | null;
  completedAt: Date | null;
}

export interface TimelineStepRow {
  id: string;
  runId: string;
  turnId: string;
  seq: number;
  kind: StepKind;
  status: StepStatus;
  ref: string | null;
  /** model_call: `{model}`; tool_call: `{name, arguments}` (arguments cut); waitpoint: `{kind}` at most; compaction: `{trigger, model}`. */
  input: { model?: string | null; name?: string; arguments?: string; trigger?: string; kind?: WaitpointKind };
  /** output with `text` and `output` cut; tool_calls' arguments kept as recorded. */
  output: StepOutput;
  /** Whether `text`, `output` or `arguments` were cut. */
  truncated: boolean;
  createdAt: Date;
  completedAt: Date | null;
  /** When the step before it in the same run ended (or the run started): a model call ran from there to its `createdAt`. */
  previousAt: Date | null;
  /** compaction: what its item records (tokens before and after). */
  compaction: { tokens_before?: number; tokens_after?: number } | null;
}

export interface OpenWaitpointRow {
  turnId: string;
  turnStatus: TurnStatus;
  sessionId: string;
  ownerId: string;
  /** The owner's row as stored (users): who the session belongs to, for people to read. */
  owner: { kind: 'user' | 'end_user'; name: string; subject: string | null; externalId: string | null; appId: string | null };
  agentId: string;
  waitpoint: Waitpoint;
}

export interface OpenWaitpointFilter {
  /** Only this kind; undefined: the kinds that wait for a person or the client (question, approval, client_tool). */
  kind?: WaitpointKind;
}

/** Fleet-wide counts of runs (the queues page). */
export interface RunFleetCounts {
  /** Runs executing under a live lease. */
  held: number;
  /** Runs executing that no worker holds: waiting to be taken over (after a crash or a release). */
  awaitingTakeover: number;
  /** Runs interrupted (a lease lost, a worker released it) in the last hour: each was taken over by a successor run. */
  takeoversLastHour: number;
}
