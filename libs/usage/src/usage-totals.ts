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

/**
 * A token count as the ledger stores it (bigint): a provider's count made a non-negative safe
 * integer (truncated; 0 when it is no finite number), so an odd value from an OpenAI-compatible
 * server (12.5, -3, "12", null) never fails the statement that records the call.
 */
export function tokenCount(value: unknown): number {
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : Number.NaN;
  return Number.isFinite(n) ? Math.min(Number.MAX_SAFE_INTEGER, Math.max(0, Math.trunc(n))) : 0;
}

/**
 * The ledger entry of a model call (no usage reported: a call all the same, with no tokens). Counts
 * are sanitised (tokenCount), cached within input and reasoning within output, as the cost needs.
 */
export function modelCallEntry(kind: 'model_call' | 'compaction' | 'sampling', model: string, usage: CallTokens | null, extra: { stepId?: string | null; wallMs?: number } = {}): LedgerEntry {
  const input = tokenCount(usage?.input_tokens);
  const output = tokenCount(usage?.output_tokens);
  return {
    kind,
    model,
    step_id: extra.stepId ?? null,
    input_tokens: input,
    output_tokens: output,
    cached_tokens: Math.min(input, tokenCount(usage?.cached_tokens)),
    reasoning_tokens: Math.min(output, tokenCount(usage?.reasoning_tokens)),
    wall_ms: tokenCount(Math.round(extra.wallMs ?? 0)),
  };
}

/** The ledger entry of a tool call or a sandbox command. */
export function toolCallEntry(kind: 'tool_call' | 'command', tool: string, wallMs = 0): LedgerEntry {
  return { kind, tool, wall_ms: Math.max(0, Math.round(wallMs)) };
}
