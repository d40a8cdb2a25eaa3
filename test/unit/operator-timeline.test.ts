import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toTimelineTurns } from '#libs/operations';
import type { TimelineRunRow, TimelineStepRow, TurnEntity } from '#libs/engine';

// The operator timeline's projection, pure: rows as the repositories read them, DTOs as the api answers.
const at = (s: number): Date => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

const turn = { id: 't1', sessionId: 's1', seq: 1, status: 'completed', agentId: 'a', model: 'm', currentRunId: null, resultRunId: 'r2', waitpoint: null, cancellationPending: false, error: null, usage: null, context: null, createdAt: at(0), startedAt: at(0), completedAt: at(9) } as TurnEntity;

function run(id: string, seq: number, extra: Partial<TimelineRunRow> = {}): TimelineRunRow {
  return { id, turnId: 't1', seq, status: 'completed', model: 'm', inputIds: [], resumeFromRunId: null, leaseOwner: null, leaseExpiresAt: null, epoch: seq, usage: null, error: null, createdAt: at(0), startedAt: at(0), completedAt: at(4), ...extra };
}

function step(id: string, runId: string, seq: number, extra: Partial<TimelineStepRow>): TimelineStepRow {
  return { id, runId, turnId: 't1', seq, kind: 'model_call', status: 'completed', ref: null, input: {}, output: {}, truncated: false, createdAt: at(seq), completedAt: at(seq), previousAt: null, compaction: null, ...extra };
}

describe('operator timeline projection', () => {
  it('nests runs and steps under their turn, with durations and the approval that let a tool call run', () => {
    const runs = [run('r1', 1, { status: 'requires_action' }), run('r2', 2, { resumeFromRunId: 'r1', leaseOwner: 'worker-1', leaseExpiresAt: at(30), status: 'in_progress', completedAt: null })];
    const steps = [
      step('s1', 'r1', 1, { input: { model: 'm' }, output: { text: '', tool_calls: [{ call_id: 'c1', name: 'rm', arguments: '{}' }], usage: { input_tokens: 1, output_tokens: 2, cached_tokens: 0, total_tokens: 3 }, finish_reason: 'tool_calls' }, previousAt: at(0), createdAt: at(1) }),
      step('s2', 'r2', 2, { kind: 'waitpoint', ref: 'w1', input: { kind: 'approval' }, output: { kind: 'approval', response: { type: 'approval', decisions: [{ call_id: 'c1', decision: 'approve' }] } } }),
      step('s3', 'r2', 3, { kind: 'tool_call', status: 'started', ref: 'c1', input: { name: 'rm', arguments: '{}' }, createdAt: at(3), completedAt: null }),
    ];
    const [dto] = toTimelineTurns([turn], runs, steps);
    assert.deepEqual(dto!.runs.map((r) => [r.id, r.steps.map((s) => s.id)]), [['r1', ['s1']], ['r2', ['s2', 's3']]]);
    const [first, second] = dto!.runs;
    assert.equal(first!.duration_ms, 4000);
    assert.equal(second!.duration_ms, null, 'still running');
    assert.deepEqual(second!.lease, { owner: 'worker-1', epoch: 2, expires_at: Math.floor(at(30).getTime() / 1000) });
    assert.equal(first!.lease, null);
    const model = first!.steps[0]!;
    assert.equal(model.duration_ms, 1000);
    assert.deepEqual(model.model_call, { model: 'm', usage: { input_tokens: 1, output_tokens: 2, cached_tokens: 0, total_tokens: 3 }, text: '', tool_call_count: 1, finish_reason: 'tool_calls' });
    const tool = second!.steps[1]!;
    assert.equal(tool.duration_ms, null, 'no result yet');
    assert.deepEqual(tool.tool_call, { call_id: 'c1', name: 'rm', arguments: '{}', success: null, output: null, approval: 'approve' });
    assert.deepEqual(second!.steps[0]!.waitpoint, { waitpoint_id: 'w1', kind: 'approval', response: { type: 'approval', decisions: [{ call_id: 'c1', decision: 'approve' }] } });
  });

  it('shows a compaction with its token counts, and a turn without runs', () => {
    const compaction = step('s1', 'r1', 1, { kind: 'compaction', ref: 'i1', input: { trigger: 'manual', model: 'm' }, output: { item_id: 'i1' }, compaction: { tokens_before: 900, tokens_after: 120 }, previousAt: at(0), createdAt: at(2) });
    const [dto] = toTimelineTurns([turn], [run('r1', 1)], [compaction]);
    assert.deepEqual(dto!.runs[0]!.steps[0]!.compaction, { item_id: 'i1', trigger: 'manual', model: 'm', tokens_before: 900, tokens_after: 120, usage: null });
    assert.equal(dto!.runs[0]!.steps[0]!.duration_ms, 2000);
    assert.deepEqual(toTimelineTurns([turn], [], [])[0]!.runs, []);
  });
});
