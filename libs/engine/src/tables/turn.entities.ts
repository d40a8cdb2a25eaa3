import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { FailureSideEffects } from '#libs/errors';
import type { StoredTraceContext } from '#libs/telemetry';
import type { WaitpointElicitation } from '#libs/tools';

export type { WaitpointElicitation };
import type { ItemStatus, RunStatus, StepKind, StepStatus, TurnStatus } from '../machines/turn-states.js';

export type { ItemStatus, RunStatus, StepKind, StepStatus, TurnStatus } from '../machines/turn-states.js';

/** A tool call as the model produced it (`arguments`: the JSON string, possibly invalid). */
export interface ToolCallSpec {
  call_id: string;
  name: string;
  arguments: string;
}

export interface WaitpointQuestion {
  question_id: string;
  question: string;
  options: string[];
  multi_select: boolean;
  allow_other: boolean;
}

/**
 * `cooperation`: a coordinator waits for its members (the turn stays in_progress; no person is
 * asked). `budget`: a budget in the session's scope has no room (`on_exceeded: pause`); a person
 * approves once there is room again.
 */
export type WaitpointKind = 'question' | 'approval' | 'client_tool' | 'cooperation' | 'budget';

/** What a turn in requires_action waits for (`yuxi.waitpoint`); `created_at` in Unix seconds. */
export interface Waitpoint {
  id: string;
  kind: WaitpointKind;
  run_id: string;
  created_at: number;
  questions?: WaitpointQuestion[];
  tool_calls?: ToolCallSpec[];
  /** A question an MCP server asked in the middle of a call (`elicitation/create`): the questions are derived from it. */
  elicitation?: WaitpointElicitation;
  /** kind=budget: the budget without room, the limit key it reached and what was spent of it (committed plus in flight). */
  budget_id?: string;
  limit?: string;
  spent?: number;
}

/**
 * Tokens of a model call as its provider reports them (reasoning where it reports them), and the
 * sums of a run's or turn's calls (its ledger rows: model and tool calls, cost), kept as running
 * sums in the same statement as each ledger row. Rows written before a field existed lack it
 * (read them through usageTotals).
 */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  total_tokens: number;
  reasoning_tokens?: number;
  model_calls?: number;
  tool_calls?: number;
  /** Integer micro-dollars; null when none of the calls summed had a price. */
  cost_microusd?: number | null;
}

/** A content part as stored and shown: input_text / input_image for users, output_text for assistants. */
export interface StoredContentPart {
  type: string;
  text?: string;
  image_url?: string;
  /** input_image: the session file holding the image (absent on items stored with a data URL). */
  file_id?: string;
  /** function_call / function_call_output items keep their one part here. */
  call_id?: string;
  name?: string;
  arguments?: string;
  output?: string;
  success?: boolean;
  /** function_call_output: the session files (origin `tool`) holding the images the tool returned, in order. */
  file_ids?: string[];
  /**
   * function_call_output, in a model context only (never stored): the `data:` URL of each of
   * `file_ids`, in order, or '' for one whose file is gone (image-references resolves them).
   */
  image_urls?: string[];
  /** A coordination call: the member it concerns, when known (a create's member id is derived from the call). */
  subagent_session_id?: string | null;
  /** compaction items keep their one part here: the summary is `text`. */
  compaction?: CompactionRecord;
  /** A command_execution item (a `shell` call in a workspace): what ran and how it ended; never part of a model context. */
  command_execution?: CommandExecutionRecord;
}

/**
 * What a command_execution item shows besides its call: written with the call (in progress, the
 * outcome null) and completed with its result. `output_index`: the item's index in its turn, for
 * the events of its completion and its live output.
 */
export interface CommandExecutionRecord {
  command: string;
  cwd: string | null;
  exit_code: number | null;
  output: string | null;
  duration_ms: number | null;
  output_index: number;
}

/**
 * The part that keeps an assistant message's reasoning, after its text part (which stays part 0).
 * Shown as the item's `yuxi.reasoning`; never part of a model context or of the item's size.
 */
export const REASONING_PART = 'reasoning_text';

export function isReasoningPart(part: Pick<StoredContentPart, 'type'>): boolean {
  return part.type === REASONING_PART;
}

/** An assistant message's stored parts: its text, then its reasoning when the model call had any. */
export function assistantContent(text: string, reasoning: string): StoredContentPart[] {
  return reasoning ? [{ type: 'output_text', text }, { type: REASONING_PART, text: reasoning }] : [{ type: 'output_text', text }];
}

/**
 * Item types of a tool call: a function call, a coordinator's call on its members, or a `shell`
 * call in a session's workspace (`command_execution`, in progress until its result); each has a
 * `function_call_output` with its call_id. The model sees all of them as tool calls.
 */
export const CALL_ITEM_TYPES = ['function_call', 'create_subagent_call', 'message_subagent_call', 'wait_subagents_call', 'interrupt_subagent_call', 'command_execution'] as const;
export type CallItemType = (typeof CALL_ITEM_TYPES)[number];

export function isCallItem(type: string): type is CallItemType {
  return (CALL_ITEM_TYPES as readonly string[]).includes(type);
}

/** What a compaction item records besides its summary (`yuxi` of the item on the wire). */
export interface CompactionRecord {
  trigger: CompactionTrigger;
  /** The last item the summary covers. */
  through_item_id: string | null;
  /** The first item kept verbatim after the summary; null when none is. */
  first_kept_item_id: string | null;
  tokens_before: number;
  tokens_after: number;
  model: string;
  usage: Usage | null;
}

export const COMPACTION_TRIGGERS = ['auto', 'manual', 'overflow'] as const;
export type CompactionTrigger = (typeof COMPACTION_TRIGGERS)[number];

/** The size of a turn's context when its last model call was sent (`yuxi.context` of the turn). */
export interface TurnContext {
  tokens: number;
  window_tokens: number;
  /** The compaction whose summary the context started with; null when none. */
  compaction_item_id: string | null;
}

export interface PublicError {
  code: string;
  message: string;
  /** A failed turn's or run's: whether submitting the input again is advised (set when it settles). */
  retryable?: boolean;
  /** A failed turn's or run's: what it may have done before it failed (FailureSideEffects; set when it settles). */
  side_effects?: FailureSideEffects;
}

@Entity('turns')
export class TurnEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('integer') seq!: number;
  @Column('varchar') status!: TurnStatus;
  @Column('varchar', { name: 'agent_id' }) agentId!: string;
  @Column('varchar') model!: string;
  @Column('uuid', { name: 'current_run_id', nullable: true }) currentRunId!: string | null;
  @Column('uuid', { name: 'result_run_id', nullable: true }) resultRunId!: string | null;
  @Column('jsonb', { nullable: true }) waitpoint!: Waitpoint | null;
  @Column('boolean', { name: 'cancellation_pending' }) cancellationPending!: boolean;
  @Column('jsonb', { nullable: true }) error!: PublicError | null;
  @Column('jsonb', { nullable: true }) usage!: Usage | null;
  /** The W3C trace id of the input that started the turn (tracing on), else null: `yuxi.trace_id`. */
  @Column('varchar', { name: 'trace_id', nullable: true }) traceId!: string | null;
  @Column('jsonb', { nullable: true }) context!: TurnContext | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'started_at', nullable: true }) startedAt!: Date | null;
  @Column('timestamptz', { name: 'completed_at', nullable: true }) completedAt!: Date | null;
}

@Entity('runs')
export class RunEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'turn_id' }) turnId!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('integer') seq!: number;
  @Column('varchar') status!: RunStatus;
  @Column('uuid', { name: 'input_ids', array: true }) inputIds!: string[];
  @Column('varchar') model!: string;
  @Column('jsonb') config!: object;
  @Column('uuid', { name: 'resume_from_run_id', nullable: true }) resumeFromRunId!: string | null;
  @Column('varchar', { name: 'lease_owner', nullable: true }) leaseOwner!: string | null;
  @Column('timestamptz', { name: 'lease_expires_at', nullable: true }) leaseExpiresAt!: Date | null;
  /** The fencing token of the lease: per session, higher for every lease granted. */
  @Column('bigint', { transformer: { to: (v: number) => v, from: (v: string | null) => Number(v ?? 0) } }) epoch!: number;
  /** The text the run has shown, as of its last heartbeat (see RunCheckpoint). */
  @Column('jsonb', { nullable: true }) checkpoint!: RunCheckpoint | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
  @Column('timestamptz', { name: 'started_at', nullable: true }) startedAt!: Date | null;
  @Column('timestamptz', { name: 'completed_at', nullable: true }) completedAt!: Date | null;
  @Column('jsonb', { nullable: true }) error!: PublicError | null;
  @Column('jsonb', { nullable: true }) usage!: Usage | null;
}

/** The assistant message a run is streaming: announced live, written when the run settles, yields or is interrupted. */
export interface RunCheckpoint {
  item_id: string;
  output_index: number;
  text: string;
  /** The message's reasoning once complete (saved before reasoning.done is sent); absent while none is. */
  reasoning?: string;
}

@Entity('items')
export class ItemEntity {
  @PrimaryColumn('uuid') id!: string;
  @Column('uuid', { name: 'session_id' }) sessionId!: string;
  @Column('uuid', { name: 'turn_id' }) turnId!: string;
  @Column('uuid', { name: 'run_id', nullable: true }) runId!: string | null;
  @Column('uuid', { name: 'input_id', nullable: true }) inputId!: string | null;
  @Column('bigint') seq!: string;
  @Column('varchar') type!: string;
  @Column('varchar', { nullable: true }) role!: string | null;
  @Column('varchar') status!: ItemStatus;
  @Column('jsonb') content!: StoredContentPart[];
  @Column('varchar', { nullable: true }) phase!: string | null;
  /** The item's size in a model context; null when it was written where no tokenizer is loaded (the api). */
  @Column('integer', { nullable: true }) tokens!: number | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt!: Date;
}

/**
 * A committed step of a turn (`run_steps`) as the step executor plans from it. `ref` is the call
 * id of a tool call, the waitpoint id of a waitpoint response. A tool call is `started` before a
 * server tool runs and `completed` with its result.
 */
export interface CommittedStep {
  runId: string;
  kind: StepKind;
  status: StepStatus;
  ref: string | null;
  output: StepOutput;
}

/** model_call: text and tool calls; tool_call: the outcome; waitpoint: the response that resolved it; compaction: its item and usage. */
export interface StepOutput {
  text?: string;
  tool_calls?: ToolCallSpec[];
  usage?: Usage;
  /** model_call: the provider's finish reason. */
  finish_reason?: string;
  success?: boolean;
  output?: string;
  kind?: WaitpointKind;
  response?: WaitpointResponse;
  /**
   * waitpoint: the trace context of what resolved it (the answer's or last result's request, a
   * member's run), tracing on only: the resumed run's span links to it. Not shown on the timeline.
   */
  trace?: StoredTraceContext;
  item_id?: string;
}

/** A resolved waitpoint as stored: the answers (question_id = call_id of the ask) or the approval decisions. */
export type WaitpointResponse =
  | { type: 'answer'; answers: { question_id: string; answer: string | string[] }[] }
  | { type: 'approval'; decisions: { call_id: string; decision: 'approve' | 'reject' | 'approve_session'; message?: string }[] }
  | { type: 'tool_results' }
  /** An MCP elicitation answered: what goes back to the server for the call. */
  | { type: 'elicitation'; call_id: string; action: 'accept' | 'decline' | 'cancel'; content?: Record<string, string | number | boolean | string[]> }
  /** A cooperation wait resolved: each wait call's output, frozen when the members settled. */
  | { type: 'cooperation'; results: Record<string, { success: boolean; output: string }> };
