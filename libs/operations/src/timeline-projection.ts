import { unixSeconds } from '#libs/database';
import { type SessionEntity, sessionStatus, type TimelineRunRow, type TimelineStepRow, type TurnEntity, type WaitpointResponse } from '#libs/engine';
import { usageTotals } from '#libs/usage';
import type { TimelineMemberDto, TimelineRunDto, TimelineSessionDto, TimelineStepDto, TimelineToolCallDto, TimelineTurnDto } from './dto/timeline.dto.js';

/** Pure mapping of the rows the repositories read to the timeline's DTOs (no I/O here). */

const ms = (from: Date | null, to: Date | null): number | null => (from && to ? Math.max(0, to.getTime() - from.getTime()) : null);

export function toTimelineSession(session: SessionEntity): TimelineSessionDto {
  return {
    id: session.id,
    owner_id: session.ownerId,
    agent_id: session.agentId,
    model: session.model,
    title: session.title,
    status: sessionStatus(session),
    parent_session_id: session.parentSessionId,
    root_session_id: session.rootSessionId,
    created_at: unixSeconds(session.createdAt),
  };
}

export function toTimelineMember(member: SessionEntity): TimelineMemberDto {
  return { id: member.id, name: member.subagent?.name ?? null, status: sessionStatus(member), agent_id: member.agentId, created_at: unixSeconds(member.createdAt) };
}

/** Each page turn with its runs, each run with its steps; a tool call shows the decision of the approval that asked for it. */
export function toTimelineTurns(turns: TurnEntity[], runs: TimelineRunRow[], steps: TimelineStepRow[]): TimelineTurnDto[] {
  const decisions = approvalDecisions(steps);
  const stepsByRun = groupBy(steps, (step) => step.runId);
  const runsByTurn = groupBy(runs, (run) => run.turnId);
  return turns.map((turn) => ({
    id: turn.id,
    object: 'admin.timeline.turn',
    seq: turn.seq,
    status: turn.status,
    agent_id: turn.agentId,
    model: turn.model,
    cancellation_pending: turn.cancellationPending,
    waitpoint: turn.waitpoint,
    usage: usageTotals(turn.usage),
    error: turn.error,
    created_at: unixSeconds(turn.createdAt),
    started_at: unixSeconds(turn.startedAt),
    completed_at: unixSeconds(turn.completedAt),
    runs: (runsByTurn.get(turn.id) ?? []).map((run) => toTimelineRun(run, (stepsByRun.get(run.id) ?? []).map((step) => toTimelineStep(step, decisions)))),
  }));
}

function toTimelineRun(run: TimelineRunRow, steps: TimelineStepDto[]): TimelineRunDto {
  return {
    id: run.id,
    seq: run.seq,
    status: run.status,
    model: run.model,
    input_ids: run.inputIds,
    resume_from_run_id: run.resumeFromRunId,
    interrupted: run.status === 'interrupted',
    lease: run.leaseOwner === null ? null : { owner: run.leaseOwner, epoch: run.epoch, expires_at: unixSeconds(run.leaseExpiresAt) },
    epoch: run.epoch,
    usage: usageTotals(run.usage),
    error: run.error,
    created_at: unixSeconds(run.createdAt),
    started_at: unixSeconds(run.startedAt),
    completed_at: unixSeconds(run.completedAt),
    duration_ms: ms(run.startedAt, run.completedAt),
    steps,
  };
}

function toTimelineStep(step: TimelineStepRow, decisions: Map<string, TimelineToolCallDto['approval']>): TimelineStepDto {
  const base = {
    id: step.id,
    seq: step.seq,
    kind: step.kind,
    status: step.status,
    created_at: unixSeconds(step.createdAt),
    completed_at: unixSeconds(step.completedAt),
    truncated: step.truncated,
  };
  const { input, output } = step;
  switch (step.kind) {
    case 'model_call':
      return {
        ...base,
        // Recorded when the answer came: the call ran since the run's previous step ended.
        duration_ms: ms(step.previousAt, step.createdAt),
        model_call: { model: input.model ?? null, usage: output.usage ?? null, text: output.text ?? '', tool_call_count: output.tool_calls?.length ?? 0, finish_reason: output.finish_reason ?? null },
      };
    case 'tool_call':
      return {
        ...base,
        duration_ms: ms(step.createdAt, step.completedAt),
        tool_call: {
          call_id: step.ref ?? '',
          name: input.name ?? '',
          arguments: input.arguments ?? '',
          success: output.success ?? null,
          output: output.output ?? null,
          approval: decisions.get(step.ref ?? '') ?? null,
        },
      };
    case 'waitpoint':
      return {
        ...base,
        duration_ms: null,
        waitpoint: { waitpoint_id: step.ref ?? '', kind: output.kind ?? input.kind ?? null, response: (output.response as WaitpointResponse | undefined) ?? null },
      };
    case 'compaction':
      return {
        ...base,
        duration_ms: ms(step.previousAt, step.createdAt),
        compaction: {
          item_id: output.item_id ?? null,
          trigger: input.trigger ?? null,
          model: input.model ?? null,
          tokens_before: step.compaction?.tokens_before ?? null,
          tokens_after: step.compaction?.tokens_after ?? null,
          usage: output.usage ?? null,
        },
      };
  }
}

/** The approval decisions recorded in the page's waitpoint steps, by call id. */
function approvalDecisions(steps: TimelineStepRow[]): Map<string, TimelineToolCallDto['approval']> {
  const decisions = new Map<string, TimelineToolCallDto['approval']>();
  for (const step of steps) {
    const response = step.output.response;
    if (step.kind !== 'waitpoint' || response?.type !== 'approval') continue;
    for (const decision of response.decisions) decisions.set(decision.call_id, decision.decision);
  }
  return decisions;
}

function groupBy<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const list = groups.get(key(row));
    if (list) list.push(row);
    else groups.set(key(row), [row]);
  }
  return groups;
}
