import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { isUuid, newId } from '#libs/database';
import { EventOutbox, type OutgoingEvent } from '#libs/events';
import { modelCallEntry } from '#libs/usage';
import { coordinationItemType, isCoordinationTool } from '#libs/tools';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { type CommittedStep, type CompactionRecord, type CompactionTrigger, assistantContent, type ToolCallSpec, type Usage } from '../tables/turn.entities.js';
import { ItemsRepository, type NewItem } from '../tables/items.repository.js';
import { ModelRequestsRepository } from '../tables/model-requests.repository.js';
import { StepsRepository } from '../tables/steps.repository.js';
import { type Lease } from '../claims/lease.js';
import type { HeldTurn, RunOutput } from '../claims/held-turn.js';
import { memberSessionId, namedMember } from '../cooperation/cooperation-rules.js';
import { closingEvents } from '../endings/run-output.js';
import { COMMAND_ITEM_TYPE, commandCallPart, commandItemId, isCommandCall } from './command-items.js';
import type { Recorded } from './recorded.js';
import { recordUsage } from './usage-writes.js';
import { toolItem } from './tool-output-items.js';
import { turnEvents } from './turn-events.js';

export interface ModelStep {
  text: string;
  toolCalls: ToolCallSpec[];
  usage: Usage | null;
  /** The provider's finish reason, kept on the step for the operators' timeline. */
  finishReason?: string | null;
  model: string;
  /** The exact request of the call as JSON (MODEL_REQUEST_AUDIT=on), recorded with the step; absent or null: nothing is recorded. */
  requestJson?: string | null;
  /** How long the call took (its ledger row's wall time), in ms. */
  wallMs?: number;
}

/** A model step as recorded: its calls carry the ids the turn will know them by. */
export interface RecordedModelStep extends Recorded {
  toolCalls: ToolCallSpec[];
}

/** A compaction to commit: its summary and record, or none when there was nothing to compact. */
export type CompactionCommit = { itemId: string; trigger: CompactionTrigger; wallMs?: number } & ({ summary: string; record: CompactionRecord } | { summary: null; record: null });

const MAX_CALL_ID = 128;

/**
 * The worker's durable steps of the model inside a held run: a model call that asked for tools, and
 * a compaction of the turn's context by the summariser. Each is one transaction under the session
 * lock, written only through the run's lease, with the items it produced and the events announcing
 * them (published by the caller after commit): a takeover plans from exactly what is recorded here.
 */
@Injectable()
export class ModelCallSteps {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly steps: StepsRepository,
    private readonly items: ItemsRepository,
    private readonly outbox: EventOutbox,
    private readonly modelRequests: ModelRequestsRepository,
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
      // The call is in the ledger with its step (a takeover never counts it again), reported usage or not.
      const { rows: spent } = await recordUsage(manager, { sessionId, runId: lease.runId, turnId: held.turn.id }, [modelCallEntry('model_call', step.model, step.usage, { stepId, wallMs: step.wallMs })]);
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
        step.toolCalls.map((call, i) => callItem(held, lease.runId, call, index + i, now)),
      );
      for (const item of calls) {
        // A command's item is done with its result (ToolCallSteps), every other call's now.
        events.push(turnEvents.item('added', item, index));
        if (item.status !== 'in_progress') events.push(turnEvents.item('done', item, index));
        index += 1;
      }
      return { batch: await this.outbox.append(manager, sessionId, events, { epoch: lease.epoch }), outputIndex: index, toolCalls: step.toolCalls, step: committed, spent };
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
      const stepId = newId();
      const recorded = await this.steps.recordStep(manager, lease, { ...committed, id: stepId, turnId: held.turn.id, sessionId, input: { trigger, model: record?.model ?? null }, at: now });
      if (!recorded) return null;
      const scope = { turnId: held.turn.id, runId: lease.runId, trigger };
      if (!record) {
        const event = turnEvents.contextCompression('failed', scope, { error: { code: 'nothing_to_compact', message: 'There is no history since the last compaction to summarise' } });
        return { batch: await this.outbox.append(manager, sessionId, [event], { epoch: lease.epoch }), outputIndex, step: committed };
      }
      // The summariser's call is one of the turn's model calls, in the ledger with its step.
      const { rows: spent } = await recordUsage(manager, { sessionId, runId: lease.runId, turnId: held.turn.id }, [
        modelCallEntry('compaction', record.model, record.usage, { stepId, wallMs: compaction.wallMs }),
      ]);
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
      return { batch: await this.outbox.append(manager, sessionId, [event], { epoch: lease.epoch }), outputIndex: outputIndex + 1, step: committed, spent };
    });
  }
}

/**
 * The item of a call: a coordination call is an item of its own type, a command in the session's
 * workspace a command_execution in progress (ended with its result); every other call a function_call.
 */
function callItem(held: HeldTurn, runId: string, call: ToolCallSpec, outputIndex: number, at: Date): NewItem {
  if (isCommandCall(held.config, call.name)) {
    return { ...toolItem(held, runId, COMMAND_ITEM_TYPE, commandCallPart(call, outputIndex), at), id: commandItemId(held.turn.id, call.call_id), status: 'in_progress' };
  }
  const type = isCoordinationTool(call.name) ? coordinationItemType(call.name) : 'function_call';
  return toolItem(held, runId, type, { type: 'function_call', ...call, ...memberOf(held, call) }, at);
}

/** The member a coordination call concerns, when the call names it: a create's is derived from the call itself. */
function memberOf(held: Pick<HeldTurn, 'turn'>, call: ToolCallSpec): { subagent_session_id?: string | null } {
  if (!isCoordinationTool(call.name)) return {};
  if (call.name === 'create_subagent') return { subagent_session_id: memberSessionId(held.turn.id, call.call_id) };
  const target = namedMember(call.arguments);
  return { subagent_session_id: target && isUuid(target) ? target : null };
}
