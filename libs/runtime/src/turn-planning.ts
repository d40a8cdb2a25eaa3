import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DEFAULT_AGENT_LIMITS } from '#libs/agents';
import { CapabilityLimits, cooperationRules, StepsRepository } from '#libs/engine';
import { type AvailableTools, type ResolvedTool, ToolCatalog, type ToolDeclaration } from '#libs/tools';
import { DurableWrites, RUN_LOG_CONTEXT } from './durable-writes.js';
import { LeaseLostError } from './run-errors.js';
import type { RunState } from './run-scope.js';
import type { RunHistory } from './run-history.js';
import { toolPolicy } from './tool-policy.js';

/**
 * What the model reads when a tool source is unavailable: as generic as the client's event (it
 * names no source, tool or address), and enough for it to answer without the missing tools.
 */
export const UNAVAILABLE_TOOLS_NOTE =
  'Note: some of the tools you would normally have are unavailable for this turn. Work with the tools you have, and tell the user if that keeps you from doing what they asked.';

/** A held turn's tools, and the history the decider starts from (its steps, its limits, what earlier runs spent). */
export interface TurnPlan {
  declarations: ToolDeclaration[];
  tools: ResolvedTool[];
  history: RunHistory;
}

/**
 * Resolves the agent's tools for a held turn and reads what the turn has spent (a takeover or a
 * resumed run counts earlier runs). A tool source that cannot be reached does not fail the turn:
 * it goes on without that source's tools, the model is told so, and clients get one generic
 * `capability_limited` event per turn.
 */
@Injectable()
export class TurnPlanning {
  private readonly logger = new Logger(RUN_LOG_CONTEXT);

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly tools: ToolCatalog,
    private readonly steps: StepsRepository,
    private readonly limits: CapabilityLimits,
    private readonly writes: DurableWrites,
  ) {}

  /** The plan of the run. */
  async prepare(state: RunState, signal: AbortSignal): Promise<TurnPlan> {
    const { held } = state;
    const agent = held.config.agent;
    const limits = { ...DEFAULT_AGENT_LIMITS, ...agent?.limits };
    const declarations = agent?.tools ?? [];
    // A coordinator (its tree not at max_depth) gets the coordination tools.
    const coordination = cooperationRules.maySpawn(agent?.multi_agent, held.config.cooperation_depth ?? 0);
    // A session with an environment gets the harness's tools (its frozen config says so: no read).
    const environment = held.config.environment !== undefined;
    let tools: ResolvedTool[] = [];
    if (declarations.length > 0 || coordination || environment) {
      const available = await this.tools.resolveAvailable(declarations, signal, { coordination, environment });
      // A compaction turn offers its tools to no model (the summariser reads the history): nothing to say.
      if (available.unavailable.length > 0 && !held.config.compact) await this.limited(state, available);
      tools = available.tools;
    }
    const spent = held.fresh ? { modelCalls: 0, toolCalls: 0 } : await this.steps.callCounts(this.dataSource.manager, held.turn.id);
    return {
      declarations,
      tools,
      history: {
        kind: held.config.compact ? 'compaction' : 'message',
        policy: toolPolicy(tools, held.config.tool_approval_mode, held.trustedTools),
        limits: { maxModelCalls: limits.max_model_calls, maxToolCalls: limits.max_tool_calls },
        budgeted: held.budgeted,
        spentBefore: spent,
        claimed: held.steps,
        facts: [],
      },
    };
  }

  /**
   * Some tool source is unavailable: the operator's log names it, the client's event and the
   * model's note do not. The note joins the instructions of the run's model calls (and their
   * token count): the run's copy of its frozen config, never the stored one. A lease lost meanwhile
   * stops the run as a lost lease does anywhere (RunClosing writes nothing more).
   */
  private async limited(state: RunState, available: AvailableTools): Promise<void> {
    const { held } = state;
    for (const error of available.unavailable) this.logger.warn(`turn ${held.turn.id} goes on without a tool source: ${error.message}`);
    held.config = { ...held.config, instructions: held.config.instructions ? `${held.config.instructions}\n\n${UNAVAILABLE_TOOLS_NOTE}` : UNAVAILABLE_TOOLS_NOTE };
    const batch = await this.writes.retrying(state.lease, () => this.limits.announce(held, state.lease, 'tool_source_unavailable'), true);
    // Undefined: the database stayed unreachable past the lease; null: the lease is gone.
    if (!batch) throw new LeaseLostError();
    await state.publish(batch);
  }
}
