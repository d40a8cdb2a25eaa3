import type { EntityManager } from 'typeorm';
import { prepared } from '#libs/database';
import { addUsageSql, type LedgerEntry, ledgerDeltaSql, ledgerInsertSql, type LedgerRow } from '#libs/usage';
import type { Usage } from '../tables/turn.entities.js';

/** What a step's calls added to the ledger, and the run's and turn's totals after. */
export interface RecordedUsage {
  rows: LedgerRow[];
  run: Usage | null;
  turn: Usage | null;
}

/**
 * Writes the ledger rows of the calls a step recorded and adds their sums to the run's and turn's
 * usage, in one statement. Call it in that step's transaction, after its fenced write (a step that
 * did not commit wrote no row; one that did wrote its rows once: a takeover never counts again).
 * Returns the rows written (for the token and cost counters, once the step commits) and both totals.
 */
export async function recordUsage(manager: EntityManager, ids: { sessionId: string; runId: string; turnId: string }, entries: LedgerEntry[]): Promise<RecordedUsage> {
  if (entries.length === 0) return { rows: [], run: null, turn: null };
  const rows = (await manager.query(
    prepared(`WITH l AS (${ledgerInsertSql({ entries: '$4', session: '$1', turn: '$3', run: '$2' })}),
     d AS (${ledgerDeltaSql('l')}),
     r AS (UPDATE runs SET usage = ${addUsageSql('runs.usage', 'd.delta')} FROM d WHERE runs.id = $2 RETURNING runs.usage),
     t AS (UPDATE turns SET usage = ${addUsageSql('turns.usage', 'd.delta')} FROM d WHERE turns.id = $3 RETURNING turns.usage)
     SELECT (SELECT usage FROM r) AS run, (SELECT usage FROM t) AS turn, (SELECT coalesce(jsonb_agg(l), '[]'::jsonb) FROM l) AS rows`),
    [ids.sessionId, ids.runId, ids.turnId, JSON.stringify(entries)],
  )) as { run: Usage | null; turn: Usage | null; rows: LedgerRow[] }[];
  return { rows: rows[0]?.rows ?? [], run: rows[0]?.run ?? null, turn: rows[0]?.turn ?? null };
}
