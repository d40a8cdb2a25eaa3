import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { EventOutbox, type OutgoingEvent } from '#libs/events';
import { ToolImagesRepository } from '#libs/files';
import { modelCallEntry, toolCallEntry } from '#libs/usage';
import { SessionsRepository } from '../tables/sessions.repository.js';
import { type CommittedStep, type ToolCallSpec, type Usage } from '../tables/turn.entities.js';
import { StepsRepository } from '../tables/steps.repository.js';
import { TurnsRepository } from '../tables/turns.repository.js';
import { itemTokensIfLoaded } from '../views/item-tokens.js';
import { type Lease } from '../claims/lease.js';
import type { HeldTurn } from '../claims/held-turn.js';
import type { CommandEnding } from './command-items.js';
import type { Recorded } from './recorded.js';
import { recordUsage } from './usage-writes.js';
import { outputPart, ToolOutputItems } from './tool-output-items.js';
import { turnEvents } from './turn-events.js';

/**
 * A server call's result as recorded: what the model reads, and the images the tool returned,
 * staged as session files (StoreToolImages) and bound to the session's workdir with the result.
 */
export interface RecordedToolResult {
  success: boolean;
  output: string;
  fileIds?: string[];
  /** The model calls the call made on the session's model (an MCP server's sampling requests), each a ledger row. */
  sampling?: SamplingCall[];
  /** How long the call ran, in ms (a command's own duration wins). */
  wallMs?: number;
  /** A command in the session's workspace: how it ended, which ends its command_execution item. */
  command?: CommandEnding;
}

/** One sampling request an MCP server made during a call: a model call of the turn. */
export interface SamplingCall {
  model: string;
  usage: Usage | null;
  wallMs?: number;
}

/**
 * What a tool call recorded with its step may have done (ResolvedTool's flags): a failure of the
 * turn derives `side_effects` and `retryable` from them (libs/engine/src/endings/failure-side-effects.ts).
 */
export interface ToolEffects {
  sideEffects: boolean;
  idempotent: boolean;
}

/**
 * The worker's durable steps of a server call inside a held run: the call started before it runs,
 * and its result. Each is one transaction under the session lock, written only through the run's
 * lease, with the output item and the events announcing it (published by the caller after commit):
 * a takeover that finds a call started without a result knows it may have taken effect.
 */
@Injectable()
export class ToolCallSteps {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly sessions: SessionsRepository,
    private readonly turns: TurnsRepository,
    private readonly steps: StepsRepository,
    private readonly outbox: EventOutbox,
    private readonly toolImages: ToolImagesRepository,
    private readonly outputItems: ToolOutputItems,
  ) {}

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
      // The call is in the ledger with its result (once: a call has one result), a harness command
      // as a command; model calls it made on the session's model (MCP sampling) are the turn's too.
      const { rows: spent } = await recordUsage(manager, { sessionId, runId: lease.runId, turnId: held.turn.id }, [
        toolCallEntry(result.command ? 'command' : 'tool_call', call.name, result.command?.duration_ms ?? result.wallMs ?? 0),
        ...(result.sampling ?? []).map((sample) => modelCallEntry('sampling', sample.model, sample.usage, { wallMs: sample.wallMs })),
      ]);
      // The tool's images join the workdir with the result that names them, never without it.
      const fileIds = staged.length > 0 ? await this.toolImages.bind(manager, sessionId, staged) : [];
      const lost = staged.length - fileIds.length;
      const shown = lost > 0 ? { ...outcome, output: `${outcome.output}\n[${lost} image(s) not shown: they were not stored in time]` } : outcome;
      const events: OutgoingEvent[] = lostLive ? [turnEvents.resync('events_lost')] : [];
      if (result.command) events.push(...(await this.outputItems.endCommand(manager, held, call.call_id, result.command)));
      events.push(...(await this.outputItems.write(manager, held, lease.runId, outputIndex, call.call_id, shown, now, tokens, fileIds)));
      return { batch: await this.outbox.append(manager, sessionId, events, { epoch: lease.epoch }), outputIndex: outputIndex + 1, step: committed, spent };
    });
  }
}
