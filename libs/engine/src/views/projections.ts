import { unixSeconds } from '#libs/database';
import { traceIdOf } from '#libs/telemetry';
import { usageTotals } from '#libs/usage';
import type { FrozenInputConfig } from '../tables/input.entity.js';
import { assistantContent, isCallItem, isReasoningPart, type ItemEntity, REASONING_PART, type RunCheckpoint, type RunEntity, type TurnEntity, type Waitpoint } from '../tables/turn.entities.js';
import type { ItemDto, RunDto, RunSummaryDto, TurnDetailDto, TurnDto } from './turn.dto.js';

/**
 * `receipts`: when the inputs of the page's messages were received (input id → received_at), read
 * by the caller from the inputs; a message item shows its input's (null without an input: the
 * assistant's, or where the caller has none).
 */
export function toItemDto(item: ItemEntity, receipts?: ReadonlyMap<string, Date>): ItemDto {
  const yuxi = { turn_id: item.turnId, run_id: item.runId, input_id: item.inputId, created_at: unixSeconds(item.createdAt) };
  const call = item.content[0];
  // A tool call and its output are items of their own, linked by call_id (no role, no content parts).
  if (isCallItem(item.type) && call) {
    const dto: ItemDto = { id: item.id, type: item.type, status: item.status, call_id: call.call_id ?? '', name: call.name ?? '', arguments: call.arguments ?? '', yuxi };
    // A command shows what ran and how it ended (the upstream command_execution fields).
    if (call.command_execution) {
      const { command, cwd, exit_code, output, duration_ms } = call.command_execution;
      return { ...dto, turn_id: item.turnId, command, cwd, exit_code, output, duration_ms };
    }
    // A coordination call also shows its arguments as fields and the member it concerns.
    if (item.type !== 'function_call') return { ...dto, ...coordinationFields(call.arguments ?? ''), yuxi: { ...yuxi, subagent_session_id: call.subagent_session_id ?? null } };
    return dto;
  }
  if (item.type === 'compaction' && call?.compaction) {
    return { id: item.id, type: item.type, status: item.status, summary: call.text ?? '', yuxi: { ...yuxi, ...call.compaction } };
  }
  if (item.type === 'function_call_output' && call) {
    const files = call.file_ids?.length ? { file_ids: call.file_ids } : {};
    return { id: item.id, type: item.type, status: item.status, call_id: call.call_id ?? '', output: call.output ?? '', yuxi: { ...yuxi, success: call.success ?? true, ...files } };
  }
  const reasoning = item.content.filter(isReasoningPart).map((part) => ({ type: REASONING_PART, text: part.text ?? '' }));
  const dto: ItemDto = {
    id: item.id,
    type: item.type,
    role: item.role ?? 'assistant',
    status: item.status,
    content: item.content.filter((part) => !isReasoningPart(part)).map((part) => (part.type === 'output_text' ? { ...part, annotations: [] } : part)),
    yuxi: { ...yuxi, received_at: item.inputId !== null ? unixSeconds(receipts?.get(item.inputId) ?? null) : null, ...(reasoning.length > 0 ? { reasoning } : {}) },
  };
  if (item.role === 'assistant') dto.phase = item.phase ?? 'commentary';
  return dto;
}

/**
 * The assistant message a run is streaming, as its heartbeat checkpoint has it:
 * in progress, with the blocks already persisted named by index. Its reasoning, when present, is
 * complete (it is saved before reasoning.done is sent); its text is not until the item is written.
 */
export function toActiveMessageDto(run: Pick<RunEntity, 'id' | 'turnId' | 'startedAt' | 'createdAt'>, checkpoint: RunCheckpoint): ItemDto {
  const item = toItemDto({
    id: checkpoint.item_id,
    sessionId: '',
    turnId: run.turnId,
    runId: run.id,
    inputId: null,
    seq: '0',
    type: 'message',
    role: 'assistant',
    status: 'in_progress',
    content: assistantContent(checkpoint.text, checkpoint.reasoning ?? ''),
    phase: null,
    tokens: null,
    createdAt: run.startedAt ?? run.createdAt,
  });
  return { ...item, yuxi: { ...item.yuxi, completed_content_indices: [], completed_reasoning_indices: checkpoint.reasoning ? [0] : [] } };
}

// Not `name`: a call item's name is the tool's.
const COORDINATION_FIELDS = ['agent_id', 'task', 'subagent_id', 'message', 'subagent_ids', 'mode'] as const;

/** The arguments of a coordination call that its item shows as fields (what the model sent; unparsable: none). */
function coordinationFields(json: string): Partial<Pick<ItemDto, (typeof COORDINATION_FIELDS)[number]>> {
  let args: unknown;
  try {
    args = JSON.parse(json);
  } catch {
    return {};
  }
  if (typeof args !== 'object' || args === null) return {};
  const fields: Record<string, unknown> = {};
  for (const key of COORDINATION_FIELDS) if (key in args) fields[key] = (args as Record<string, unknown>)[key];
  // Shown as the model sent them (the tool's schema checked them before the call ran).
  return fields as Partial<Pick<ItemDto, (typeof COORDINATION_FIELDS)[number]>>;
}

export function toRunDto(run: RunEntity): RunDto {
  // `yuxi` only on a traced run: every run event (outbox row, Redis stream entry) carries this view,
  // and a run accepted with tracing off pays no bytes for it.
  const traceId = traceIdOf((run.config as FrozenInputConfig | undefined)?.trace);
  const dto: RunDto = {
    id: run.id,
    object: 'yuxi.session.run',
    session_id: run.sessionId,
    turn_id: run.turnId,
    status: run.status,
    input_ids: run.inputIds,
    model: run.model,
    resume_from_run_id: run.resumeFromRunId,
    created_at: unixSeconds(run.createdAt),
    started_at: unixSeconds(run.startedAt),
    completed_at: unixSeconds(run.completedAt),
    error: run.error,
    usage: usageTotals(run.usage),
  };
  if (traceId !== null) dto.yuxi = { trace_id: traceId };
  return dto;
}

export function toRunSummary(run: RunEntity): RunSummaryDto {
  return { id: run.id, status: run.status, input_ids: run.inputIds, created_at: unixSeconds(run.createdAt), completed_at: unixSeconds(run.completedAt), error: run.error };
}

/** The turn projection shared by the turn endpoints, the session's current_turn and SSE turn events. */
export function toTurnDto(turn: TurnEntity): TurnDto {
  const dto: TurnDto = {
    id: turn.id,
    object: 'agent.session.turn',
    session_id: turn.sessionId,
    agent: { id: turn.agentId, model: turn.model },
    status: turn.status,
    created_at: unixSeconds(turn.createdAt),
    started_at: unixSeconds(turn.startedAt),
    completed_at: unixSeconds(turn.completedAt),
    error: turn.error,
    usage: null,
    yuxi: { current_run_id: turn.currentRunId, result_run_id: turn.resultRunId, waitpoint: turn.waitpoint, usage: usageTotals(turn.usage), context: turn.context ?? null },
  };
  // `trace_id` only on a traced turn (as the run's `yuxi`): a turn accepted with tracing off has
  // views and events byte for byte as before tracing existed.
  if (turn.traceId) dto.yuxi.trace_id = turn.traceId;
  return dto;
}

export function toTurnDetailDto(turn: TurnEntity, runs: RunEntity[], output: ItemEntity[]): TurnDetailDto {
  const base = toTurnDto(turn);
  return {
    ...base,
    yuxi: {
      ...base.yuxi,
      cancellation_pending: turn.cancellationPending,
      runs: runs.map(toRunDto),
      output: output.map((item) => toItemDto(item)),
    },
  };
}

/** The turn overview a session resource shows as `yuxi.current_turn`. */
export function toCurrentTurn(turn: TurnEntity): { id: string; status: string; current_run_id: string | null; result_run_id: string | null; waitpoint: Waitpoint | null } {
  return { id: turn.id, status: turn.status, current_run_id: turn.currentRunId, result_run_id: turn.resultRunId, waitpoint: turn.waitpoint };
}
