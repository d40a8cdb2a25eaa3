// The durable core's invariants (docs/durable-core.md) as read-only SQL over one snapshot.
// Used by `npm run check:invariants` and by every fault scenario (test/faults) at its end.
//
// Each check is a query whose rows are violations. All checks run in one REPEATABLE READ, READ
// ONLY transaction, so they see one consistent snapshot of a live database; each runs under its
// own savepoint, so one failing query does not hide the others. A check whose table or column
// does not exist (a database migrated before the durable-core schema) is reported as skipped,
// and as a violation when `strict` is set.
import pg from 'pg';
import { INVARIANTS } from './invariant-checks.mjs';

const EXAMPLES = 5;

// The checks themselves, each a query whose rows are violations.
export { INVARIANTS };

// Postgres error codes of a schema that lacks what a check reads.
const MISSING_SCHEMA = new Set(['42P01', '42703', '42883']); // undefined_table, undefined_column, undefined_function

/**
 * Runs every invariant check against `databaseUrl`.
 * @param {string} databaseUrl
 * @param {object} [options]
 * @param {string[]} [options.sessionIds] only these sessions (default: the whole database)
 * @param {boolean} [options.strict] a check that cannot run on this schema counts as violated
 * @param {string[]} [options.only] run only the checks with these names
 * @returns {Promise<{checked: number, violations: {name: string, description: string, count: number, rows: object[]}[],
 *   skipped: {name: string, reason: string}[]}>}
 */
export async function checkInvariants(databaseUrl, { sessionIds, strict = false, only } = {}) {
  const client = new pg.Client({ connectionString: databaseUrl, statement_timeout: 60_000, connectionTimeoutMillis: 10_000 });
  await client.connect();
  const violations = [];
  const skipped = [];
  let checked = 0;
  try {
    const version = Number((await client.query('SHOW server_version_num')).rows[0].server_version_num);
    const canValidateJson = version >= 160000;
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    for (const check of INVARIANTS) {
      if (only && !only.includes(check.name)) continue;
      if (check.requires === 'pg_input_is_valid' && !canValidateJson) {
        skipped.push({ name: check.name, reason: `needs Postgres 16+ (server_version_num ${version})` });
        continue;
      }
      const sql = render(check.sql, { canValidateJson });
      await client.query('SAVEPOINT invariant');
      try {
        const { rows } = await client.query(`SELECT * FROM (${sql}) v LIMIT ${EXAMPLES + 1}`, [sessionIds?.length ? sessionIds : null]);
        checked += 1;
        if (rows.length > 0) {
          const count = rows.length > EXAMPLES ? Number((await client.query(`SELECT count(*) AS n FROM (${sql}) v`, [sessionIds?.length ? sessionIds : null])).rows[0].n) : rows.length;
          violations.push({ name: check.name, description: check.description, count, rows: rows.slice(0, EXAMPLES) });
        }
        await client.query('RELEASE SAVEPOINT invariant');
      } catch (error) {
        await client.query('ROLLBACK TO SAVEPOINT invariant');
        const reason = `${error.code ?? ''} ${error.message}`.trim();
        if (MISSING_SCHEMA.has(error.code) && !strict) {
          skipped.push({ name: check.name, reason });
        } else {
          checked += 1;
          violations.push({ name: check.name, description: check.description, count: 1, rows: [{ check_failed: reason }] });
        }
      }
    }
    await client.query('ROLLBACK');
  } finally {
    await client.end().catch(() => undefined);
  }
  return { checked, violations, skipped };
}

/** The outbox retention (the replay window): only a session older than it may have pruned rows. */
const RETENTION_SECONDS = Number(process.env.EVENTS_REPLAY_TTL_SECONDS || 7 * 24 * 3600);
/** COOPERATION_SIGNAL_RETENTION_S as the app reads it (at least 60 s): a delivered signal older than it may be gone. */
const SIGNAL_RETENTION_SECONDS = Math.max(60, Number(process.env.COOPERATION_SIGNAL_RETENTION_S || 7 * 24 * 3600));

function render(sql, { canValidateJson }) {
  return sql
    .replace(/\{\{RETENTION_SECONDS\}\}/g, String(Math.floor(RETENTION_SECONDS)))
    .replace(/\{\{SIGNAL_RETENTION_SECONDS\}\}/g, String(Math.floor(SIGNAL_RETENTION_SECONDS)))
    .replace(/\{\{S:([^}]+)\}\}/g, (_, expr) => `($1::uuid[] IS NULL OR ${expr} = ANY($1::uuid[]))`)
    .replace(/\{\{JSON_OK:([^}]+)\}\}/g, (_, expr) => (canValidateJson ? `pg_input_is_valid(${expr}, 'jsonb')` : 'true'));
}

/** Human-readable report lines of a checkInvariants result. */
export function formatInvariantReport({ checked, violations, skipped }) {
  const lines = [];
  for (const v of violations) {
    lines.push(`VIOLATED ${v.name} (${v.count}${v.count > v.rows.length ? `, first ${v.rows.length}` : ''}): ${v.description}`);
    for (const row of v.rows) lines.push(`  ${JSON.stringify(row)}`);
  }
  for (const s of skipped) lines.push(`skipped ${s.name}: ${s.reason}`);
  lines.push(`invariants: ${checked} checked, ${violations.length} violated${skipped.length ? `, ${skipped.length} skipped` : ''}`);
  return lines;
}
