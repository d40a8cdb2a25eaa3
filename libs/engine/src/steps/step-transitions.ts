import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid, newId, unixSeconds } from '#libs/database';
import { EventOutbox, type OutboxBatch, type OutgoingEvent } from '#libs/events';
import { ToolImagesRepository } from '#libs/files';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { type CommittedStep, type CompactionRecord, type CompactionTrigger, type ItemEntity, assistantContent, type ToolCallSpec, type Usage, type WaitpointElicitation, type WaitpointQuestion, type Waitpoint, type WaitpointKind } from '../tables/turn.entities.js';
import { ItemsRepository, type NewItem } from '../tables/items.repository.js';
import { itemTokensIfLoaded } from '../views/item-tokens.js';
import { ModelRequestsRepository } from '../tables/model-requests.repository.js';
import { type Lease } from '../claims/lease.js';
import { RunsRepository } from '../tables/runs.repository.js';
import { StepsRepository } from '../tables/steps.repository.js';
import { toCurrentTurn } from '../views/projections.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import { coordinationItemType, isCoordinationTool } from '#libs/tools';
import { memberSessionId, namedMember } from '../cooperation/cooperation-rules.js';
import { turnEvents } from './turn-events.js';
import type { HeldTurn, RunOutput } from '../claims/held-turn.js';
import { closingEvents } from '../endings/run-output.js';

export interface ModelStep {
  text: string;
  toolCalls: ToolCallSpec[];
  usage: Usage | null;
  /** The provider's finish reason, kept on the step for the operators' timeline. */
  finishReason?: string | null;
  model: string;
  /** The exact request of the call as JSON (MODEL_REQUEST_AUDIT=on), recorded with the step; absent or null: nothing is recorded. */
  requestJson?: string | null;
}

export interface Recorded {
  batch: OutboxBatch;
  /** The output index the turn's next item gets. */
  outputIndex: number;
  /** The step as committed: what the planner reads next (the executor keeps no copy of its own). */
  step: CommittedStep;
}

/**
 * A server call's result as recorded: what the model reads, and the images the tool returned,
 * staged as session files (StoreToolImages) and bound to the session's workdir with the result.
 */
export interface RecordedToolResult {
  success: boolean;
  output: string;
  fileIds?: string[];
  /** Model tokens the call spent (an MCP server's sampling requests). */
  usage?: Usage;
}

/** A model step as recorded: its calls carry the ids the turn will know them by. */
/**
 * What a tool call recorded with its step may have done (ResolvedTool's flags): a failure of the
 * turn derives `side_effects` and `retryable` from them (libs/engine/src/endings/failure-side-effects.ts).
 */
export interface ToolEffects {
  sideEffects: boolean;
  idempotent: boolean;
}

export interface RecordedModelStep extends Recorded {
  toolCalls: ToolCallSpec[];
}

/** A compaction to commit: its summary and record, or none when there was nothing to compact. */
export type CompactionCommit = { itemId: string; trigger: CompactionTrigger } & ({ summary: string; record: CompactionRecord } | { summary: null; record: null });

const MAX_CALL_ID = 128;

/**
 * The worker's durable steps inside a held run: a model call that asked for tools, a tool call
 * started and its result, and stopping at a waitpoint. Each is one transaction under the session
 * lock, written only through the run's lease, with the items it produced and the events announcing
 * them (published by the caller after commit): a takeover plans from exactly what is recorded here.
 */
@Injectable()
export class StepTransitions {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly runs: RunsRepository,
    private readonly steps: StepsRepository,
    private readonly items: ItemsRepository,
    private readonly outbox: EventOutbox,
    private readonly modelRequests: ModelRequestsRepository,
    private readonly toolImages: ToolImagesRepository,
  ) {}

  /**
   * A model call that asked for tools: the step, the text it showed (commentary) and one
   * function_call item per call. A call id is the key of its result for the whole turn, so one a
   * provider reuses (some number calls per response), repeats or makes too long is replaced.
   * With the call's exact request when the deployment audits them (one more statement, only then).
   * Null when the lease is gone.
   */
  async recordModelStep(held: HeldTurn, lease: Lease, output: RunOutput, step: ModelStep): Promise<RecordedModelStep | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      const now = new Date();
      const used = await this.steps.usedCallIds(manager, held.turn.id);
      step = { ...step, toolCalls: step.toolCalls.map((call) => {
        const id = call.call_id.length === 0 || call.call_id.length > MAX_CALL_ID || used.has(call.call_id) ? `call_${randomBytes(12).toString('hex')}` : call.call_id;
        used.add(id);
        return { ...call, call_id: id };
      }) };
      const committed: CommittedStep = {
        runId: lease.runId,
        kind: 'model_call',
        status: 'completed',
        ref: null,
        output: { text: step.text, tool_calls: step.toolCalls, ...(step.usage ? { usage: step.usage } : {}), ...(step.finishReason ? { finish_reason: step.finishReason } : {}) },
      };
      // A fresh id on every attempt: a retried transaction is a new step, and its request is keyed by it.
      const stepId = newId();
      const recorded = await this.steps.recordStep(manager, lease, { ...committed, id: stepId, turnId: held.turn.id, sessionId, input: { model: step.model }, at: now });
      if (!recorded) return null;
      if (step.requestJson) await this.modelRequests.record(manager, stepId, step.requestJson);
      if (step.usage) await this.runs.addUsage(manager, lease.runId, held.turn.id, step.usage);
      const count = (output.item ? 1 : 0) + step.toolCalls.length;
      let seq = await this.sessions.reserveItemSeqs(manager, sessionId, count);
      let index = output.outputIndex;
      const events: OutgoingEvent[] = output.lostDeltas ? [turnEvents.resync('events_lost')] : [];
      if (output.item) {
        const [item] = await this.items.insertItems(manager, seq, [
          { ...output.item, status: 'completed', content: assistantContent(output.text, output.reasoning), phase: 'commentary', createdAt: now },
        ]);
        events.push(...closingEvents(item!, index, output.text));
        seq += 1;
        index += 1;
      }
      const calls = await this.items.insertItems(
        manager,
        seq,
        step.toolCalls.map((call) => toolItem(held, lease.runId, callItemType(call.name), { type: 'function_call', ...call, ...memberOf(held, call) }, now)),
      );
      for (const item of calls) {
        events.push(turnEvents.item('added', item, index), turnEvents.item('done', item, index));
        index += 1;
      }
      return { batch: await this.outbox.append(manager, sessionId, events, { epoch: lease.epoch }), outputIndex: index, toolCalls: step.toolCalls, step: committed };
    });
  }

  /**
   * A compaction of the turn's context: the step (its ref is the item's id) with the summariser's
   * usage, counted in the run's and turn's, and the `compaction` item announced by
   * `context_compression` completed; with no summary (nothing to compact) the step alone, announced
   * as failed. Null when the lease is gone: a takeover then compacts again, and only one commits.
   */
  async recordCompaction(held: HeldTurn, lease: Lease, outputIndex: number, compaction: CompactionCommit): Promise<Recorded | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      const now = new Date();
      // Chosen before the write is retried: a retry after a lost acknowledgement meets its own step (one per ref).
      const { itemId, trigger, record } = compaction;
      const committed: CommittedStep = {
        runId: lease.runId,
        kind: 'compaction',
        status: 'completed',
        ref: itemId,
        output: { ...(record ? { item_id: itemId } : {}), ...(record?.usage ? { usage: record.usage } : {}) },
      };
      const recorded = await this.steps.recordStep(manager, lease, { ...committed, turnId: held.turn.id, sessionId, input: { trigger, model: record?.model ?? null }, at: now });
      if (!recorded) return null;
      const scope = { turnId: held.turn.id, runId: lease.runId, trigger };
      if (!record) {
        const event = turnEvents.contextCompression('failed', scope, { error: { code: 'nothing_to_compact', message: 'There is no history since the last compaction to summarise' } });
        return { batch: await this.outbox.append(manager, sessionId, [event], { epoch: lease.epoch }), outputIndex, step: committed };
      }
      if (record.usage) await this.runs.addUsage(manager, lease.runId, held.turn.id, record.usage);
      const seq = await this.sessions.reserveItemSeqs(manager, sessionId, 1);
      const [item] = await this.items.insertItems(manager, seq, [
        {
          id: itemId,
          sessionId,
          turnId: held.turn.id,
          runId: lease.runId,
          inputId: null,
          type: 'compaction',
          role: null,
          status: 'completed',
          content: [{ type: 'compaction', text: compaction.summary, compaction: record }],
          phase: null,
          createdAt: now,
        },
      ]);
      const event = turnEvents.contextCompression('completed', scope, { item: item!, outputIndex });
      return { batch: await this.outbox.append(manager, sessionId, [event], { epoch: lease.epoch }), outputIndex: outputIndex + 1, step: committed };
    });
  }

  /**
   * Marks a server call as started before it runs: a takeover that finds it without a result knows
   * it may have taken effect. 'cancelled' when a cancel was accepted first: the call never starts.
   * Recorded with what a failure of the turn reports (libs/engine
   * failure-side-effects): `sideEffects`, running it may change something outside the turn;
   * `idempotent`, repeating that is harmless.
   */
  async recordToolStarted(held: HeldTurn, lease: Lease, call: ToolCallSpec, effects: ToolEffects): Promise<boolean | 'cancelled'> {
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, held.turn.sessionId);
      if (await this.turns.cancellationPending(manager, held.turn.id)) return 'cancelled' as const;
      return this.steps.recordStep(manager, lease, {
        runId: lease.runId,
        turnId: held.turn.id,
        sessionId: held.turn.sessionId,
        kind: 'tool_call',
        status: 'started',
        ref: call.call_id,
        input: { name: call.name, arguments: call.arguments, side_effects: effects.sideEffects, idempotent: effects.idempotent },
        output: {},
        at: new Date(),
      });
    });
  }

  /**
   * A call's result: the step and its function_call_output item, after a resync when live events of
   * the call (its progress) were lost. Null when the lease is gone (or the call already has one).
   */
  async recordToolResult(held: HeldTurn, lease: Lease, outputIndex: number, call: ToolCallSpec, result: RecordedToolResult, lostLive = false): Promise<Recorded | null> {
    const { sessionId } = held.turn;
    const outcome = { success: result.success, output: result.output };
    const staged = result.fileIds ?? [];
    // A tool's output can be large: it is counted before the session lock is taken, not under it.
    const tokens = itemTokensIfLoaded([outputPart(call.call_id, outcome, staged)]);
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      const now = new Date();
      const committed: CommittedStep = { runId: lease.runId, kind: 'tool_call', status: 'completed', ref: call.call_id, output: outcome };
      const recorded = await this.steps.recordStep(manager, lease, { ...committed, turnId: held.turn.id, sessionId, input: { name: call.name, arguments: call.arguments }, at: now });
      if (!recorded) return null;
      // Tokens the call spent on the session's model (MCP sampling) are the turn's, like a model call's.
      if (result.usage) await this.runs.addUsage(manager, lease.runId, held.turn.id, result.usage);
      // The tool's images join the workdir with the result that names them, never without it.
      const fileIds = staged.length > 0 ? await this.toolImages.bind(manager, sessionId, staged) : [];
      const lost = staged.length - fileIds.length;
      const shown = lost > 0 ? { ...outcome, output: `${outcome.output}\n[${lost} image(s) not shown: they were not stored in time]` } : outcome;
      const events: OutgoingEvent[] = lostLive ? [turnEvents.resync('events_lost')] : [];
      events.push(...(await this.writeOutputItem(manager, held, lease.runId, outputIndex, call.call_id, shown, now, tokens, fileIds)));
      return { batch: await this.outbox.append(manager, sessionId, events, { epoch: lease.epoch }), outputIndex: outputIndex + 1, step: committed };
    });
  }

  /**
   * Stops the run at a waitpoint: run requires_action, turn (and session) requires_action with the
   * waitpoint. Null when the lease is gone; 'cancelled' when a cancel was accepted first (the turn
   * never waits: the caller settles it cancelled).
   */
  async suspend(held: HeldTurn, lease: Lease, kind: WaitpointKind, calls: ToolCallSpec[]): Promise<OutboxBatch | 'cancelled' | null> {
    return this.suspendAt(held, lease, (waitpoint) => {
      if (kind === 'question') waitpoint.questions = calls.map(questionOf);
      else waitpoint.tool_calls = calls.map(({ call_id, name, arguments: args }) => ({ call_id, name, arguments: args }));
      return { ...waitpoint, kind };
    });
  }

  /**
   * Stops the run at a question an MCP server asked in the middle of a call (elicitation): the
   * call's `started` step stays as it is, and the answer goes back to the server when the turn
   * resumes. As suspend otherwise.
   */
  async suspendForElicitation(held: HeldTurn, lease: Lease, elicitation: WaitpointElicitation, questions: WaitpointQuestion[]): Promise<OutboxBatch | 'cancelled' | null> {
    return this.suspendAt(held, lease, (waitpoint) => ({ ...waitpoint, kind: 'question', questions, elicitation }));
  }

  private async suspendAt(held: HeldTurn, lease: Lease, build: (base: Omit<Waitpoint, 'kind'>) => Waitpoint): Promise<OutboxBatch | 'cancelled' | null> {
    const { sessionId } = held.turn;
    return this.dataSource.transaction(async (manager) => {
      await this.sessions.lock(manager, sessionId);
      if (await this.turns.cancellationPending(manager, held.turn.id)) return 'cancelled' as const;
      const now = new Date();
      const waitpoint = build({ id: newId(), run_id: lease.runId, created_at: unixSeconds(now) });
      if (!(await this.runs.suspendRun(manager, lease, held.turn.id, waitpoint, now))) return null;
      const usage = await this.runs.addUsage(manager, lease.runId, held.turn.id, null);
      const turn = { ...held.turn, status: 'requires_action' as const, waitpoint, currentRunId: lease.runId, usage: usage.turn };
      await this.sessions.recordTurnUpdated(manager, sessionId, toCurrentTurn(turn), 0, now);
      const run = { ...held.run, id: lease.runId, status: 'requires_action' as const, completedAt: now, leaseOwner: null, leaseExpiresAt: null, usage: usage.run };
      const events: OutgoingEvent[] = [turnEvents.run('requires_action', run), turnEvents.waiting(turn, waitpoint)];
      return this.outbox.append(manager, sessionId, events, { epoch: lease.epoch });
    });
  }

  /** The function_call_output item of a call (also written by the api for a client's tool_result). */
  async writeOutputItem(
    manager: EntityManager,
    held: Pick<HeldTurn, 'turn'>,
    runId: string,
    outputIndex: number,
    callId: string,
    outcome: { success: boolean; output: string },
    at: Date,
    tokens: number | null = null,
    fileIds: string[] = [],
  ): Promise<OutgoingEvent[]> {
    const seq = await this.sessions.reserveItemSeqs(manager, held.turn.sessionId, 1);
    const [item] = await this.items.insertItems(manager, seq, [{ ...toolItem(held, runId, 'function_call_output', outputPart(callId, outcome, fileIds), at), tokens }]);
    return [turnEvents.item('added', item!, outputIndex), turnEvents.item('done', item!, outputIndex)];
  }
}

/** A coordination call is an item of its own type; every other call a function_call. */
function callItemType(name: string): string {
  return isCoordinationTool(name) ? coordinationItemType(name) : 'function_call';
}

/** The member a coordination call concerns, when the call names it: a create's is derived from the call itself. */
function memberOf(held: Pick<HeldTurn, 'turn'>, call: ToolCallSpec): { subagent_session_id?: string | null } {
  if (!isCoordinationTool(call.name)) return {};
  if (call.name === 'create_subagent') return { subagent_session_id: memberSessionId(held.turn.id, call.call_id) };
  const target = namedMember(call.arguments);
  return { subagent_session_id: target && isUuid(target) ? target : null };
}

function outputPart(callId: string, outcome: { success: boolean; output: string }, fileIds: string[] = []): ItemEntity['content'][number] {
  const part: ItemEntity['content'][number] = { type: 'function_call_output', call_id: callId, output: outcome.output, success: outcome.success };
  if (fileIds.length > 0) part.file_ids = fileIds;
  return part;
}

function toolItem(held: Pick<HeldTurn, 'turn'>, runId: string, type: string, part: ItemEntity['content'][number], at: Date): NewItem {
  return { sessionId: held.turn.sessionId, turnId: held.turn.id, runId, inputId: null, type, role: null, status: 'completed', content: [part], phase: null, createdAt: at };
}

/** An ask_user call as a question of the waitpoint; the question id is the call id. */
function questionOf(call: ToolCallSpec): NonNullable<Waitpoint['questions']>[number] {
  let args: { question?: unknown; options?: unknown; multi_select?: unknown; allow_other?: unknown } = {};
  try {
    args = JSON.parse(call.arguments) as typeof args;
  } catch {
    // The planner validates arguments before a question is asked; an unparsable one cannot get here.
  }
  const options = Array.isArray(args.options) ? args.options.filter((o): o is string => typeof o === 'string') : [];
  return {
    question_id: call.call_id,
    question: typeof args.question === 'string' ? args.question : '',
    options,
    multi_select: args.multi_select === true,
    allow_other: typeof args.allow_other === 'boolean' ? args.allow_other : options.length === 0,
  };
}
