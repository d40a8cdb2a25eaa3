import type { UsageTotals } from './usage.types.js';
import type { LedgerEntry } from './ledger-sql.js';

/** A model call's tokens as a provider reports them (reasoning where it reports them). */
export interface CallTokens {
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  reasoning_tokens?: number;
}

/**
 * A usage column as the resources show it: every field of UsageTotals, whatever the row holds
 * (rows written before a field existed have none: 0, and no cost). Null stays null (nothing used).
 */
export function usageTotals(stored: Partial<Record<keyof UsageTotals, unknown>> | null | undefined): UsageTotals | null {
  if (!stored) return null;
  const n = (value: unknown): number => (value === null || value === undefined ? 0 : Number(value));
  return {
    input_tokens: n(stored.input_tokens),
    output_tokens: n(stored.output_tokens),
    cached_tokens: n(stored.cached_tokens),
    reasoning_tokens: n(stored.reasoning_tokens),
    total_tokens: n(stored.total_tokens),
    model_calls: n(stored.model_calls),
    tool_calls: n(stored.tool_calls),
    cost_microusd: stored.cost_microusd === null || stored.cost_microusd === undefined ? null : Number(stored.cost_microusd),
  };
}

/** The ledger entry of a model call (no usage reported: a call all the same, with no tokens). */
export function modelCallEntry(kind: 'model_call' | 'compaction' | 'sampling', model: string, usage: CallTokens | null, extra: { stepId?: string | null; wallMs?: number } = {}): LedgerEntry {
  return {
    kind,
    model,
    step_id: extra.stepId ?? null,
    input_tokens: usage?.input_tokens ?? 0,
    output_tokens: usage?.output_tokens ?? 0,
    cached_tokens: usage?.cached_tokens ?? 0,
    reasoning_tokens: usage?.reasoning_tokens ?? 0,
    wall_ms: Math.max(0, Math.round(extra.wallMs ?? 0)),
  };
}

/** The ledger entry of a tool call or a sandbox command. */
export function toolCallEntry(kind: 'tool_call' | 'command', tool: string, wallMs = 0): LedgerEntry {
  return { kind, tool, wall_ms: Math.max(0, Math.round(wallMs)) };
}
