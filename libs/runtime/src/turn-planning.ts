import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { DEFAULT_AGENT_LIMITS } from '#libs/agents';
import { cooperationRules, type HeldTurn } from '#libs/lifecycle';
import { type ResolvedTool, ToolCatalog, type ToolDeclaration } from '#libs/tools';
import { StepsRepository } from '#libs/turns';
import type { ToolPolicy, TurnBudget, TurnKind } from './step-plan.js';
import { toolPolicy } from './tool-policy.js';

/** What the planner needs of a held turn besides its committed steps. */
export interface TurnPlan {
  declarations: ToolDeclaration[];
  tools: ResolvedTool[];
  policy: ToolPolicy;
  /** The limits and what earlier runs of the turn spent; the executor adds what this run spends. */
  budget: TurnBudget;
  kind: TurnKind;
}

/** Resolves the agent's tools for a held turn and reads what the turn has spent (a takeover or a resumed run counts earlier runs). */
@Injectable()
export class TurnPlanning {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly tools: ToolCatalog,
    private readonly steps: StepsRepository,
  ) {}

  async prepare(held: HeldTurn, signal: AbortSignal): Promise<TurnPlan> {
    const agent = held.config.agent;
    const limits = { ...DEFAULT_AGENT_LIMITS, ...agent?.limits };
    const declarations = agent?.tools ?? [];
    // A coordinator (its tree not at max_depth) gets the coordination tools.
    const coordination = cooperationRules.maySpawn(agent?.multi_agent, held.config.cooperation_depth ?? 0);
    const tools = declarations.length > 0 || coordination ? await this.tools.resolve(declarations, signal, { coordination }) : [];
    const spent = held.fresh ? { modelCalls: 0, toolCalls: 0 } : await this.steps.callCounts(this.dataSource.manager, held.turn.id);
    return {
      declarations,
      tools,
      policy: toolPolicy(tools, held.config.tool_approval_mode, held.trustedTools),
      budget: { maxModelCalls: limits.max_model_calls, maxToolCalls: limits.max_tool_calls, ...spent },
      kind: held.config.compact ? 'compaction' : 'message',
    };
  }
}
