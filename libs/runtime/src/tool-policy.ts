import { type ResolvedTool, validateToolArguments } from '#libs/tools';
import type { ToolPolicy } from './step-plan.js';

/**
 * How the planner treats the agent's tools in this turn: who runs each, and whether a server call
 * needs approval — never under `always_trust`, always under `always_ask`, else when the tool
 * declares it; a tool the user trusted for the session (`approve_session`) needs none.
 */
export function toolPolicy(tools: readonly ResolvedTool[], approvalMode: string, trustedTools: readonly string[]): ToolPolicy {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const trusted = new Set(trustedTools);
  return {
    executorOf: (name) => byName.get(name)?.executor ?? null,
    needsApproval: (name) => {
      const tool = byName.get(name);
      if (!tool || tool.executor !== 'server' || approvalMode === 'always_trust' || trusted.has(name)) return false;
      return approvalMode === 'always_ask' || tool.requiresApproval;
    },
    idempotent: (name) => byName.get(name)?.idempotent ?? false,
    checkArguments: (call) => {
      const tool = byName.get(call.name);
      // The planner asks only about tools the agent has (executorOf first).
      return tool ? validateToolArguments(tool, call.arguments) : { ok: false, error: `Unknown tool ${call.name}` };
    },
  };
}
