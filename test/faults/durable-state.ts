// The durable state a scenario ends on: its sessions quiet, and every invariant of the durable core
// (scripts/lib/invariants.mjs) holding for them.
import { loadFromRoot as load } from '../support/stack-scripts.js';
import type { FaultInfra } from './harness.js';
import { waitUntil } from './waiting.js';

export interface InvariantResult {
  checked: number;
  violations: { name: string; description: string; count: number; rows: object[] }[];
  skipped: { name: string; reason: string }[];
}

interface InvariantsModule {
  checkInvariants(databaseUrl: string, options?: { sessionIds?: string[]; strict?: boolean; only?: string[] }): Promise<InvariantResult>;
  formatInvariantReport(result: InvariantResult): string[];
}

export const invariantsModule = () => load<InvariantsModule>('scripts/lib/invariants.mjs');

/**
 * Waits until the sessions are quiet: no pending input, no queued/in_progress turn, no
 * in_progress run. Paused queues are not quiet (a test that pauses one continues it first).
 */
export async function waitQuiescent(infra: FaultInfra, sessionIds: string[], timeoutMs = 30_000): Promise<void> {
  await waitUntil(
    `quiescence of ${sessionIds.length} session(s)`,
    async () => {
      const { rows } = await infra.db.query(
        `SELECT (SELECT count(*) FROM inputs WHERE session_id = ANY($1::uuid[]) AND status = 'pending')::int AS pending,
                (SELECT count(*) FROM turns WHERE session_id = ANY($1::uuid[]) AND status IN ('queued', 'in_progress'))::int AS turns,
                (SELECT count(*) FROM runs WHERE session_id = ANY($1::uuid[]) AND status IN ('queued', 'in_progress'))::int AS runs`,
        [sessionIds],
      );
      const { pending, turns, runs } = rows[0];
      return pending === 0 && turns === 0 && runs === 0;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

/**
 * Runs every invariant check on `sessionIds` and fails on any violation. Strict: a check the
 * schema cannot answer fails too, unless INVARIANTS_LENIENT=1 (then it is only reported).
 */
export async function assertInvariants(infra: FaultInfra, sessionIds: string[], diagnostic: (message: string) => void): Promise<InvariantResult> {
  const { checkInvariants, formatInvariantReport } = await invariantsModule();
  const strict = process.env.INVARIANTS_LENIENT !== '1';
  const result = await checkInvariants(infra.databaseUrl, { sessionIds, strict });
  const report = formatInvariantReport(result);
  for (const s of result.skipped) diagnostic(`invariant skipped: ${s.name}: ${s.reason}`);
  if (result.violations.length > 0) throw new Error(`invariants violated:\n${report.join('\n')}`);
  diagnostic(report[report.length - 1] ?? '');
  return result;
}
