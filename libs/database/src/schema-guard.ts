import type { DataSource } from 'typeorm';

/** The table TypeORM records applied migrations in (dataSourceOptions' migrationsTableName). */
export const MIGRATIONS_TABLE = 'schema_migrations';

/** How to bring a database to this build's schema (README, Operations). */
const MIGRATE_HINT = 'run the migrations of this build first (node dist/libs/database/src/migrate.js)';

/**
 * A process started against a database whose schema this build does not know. Thrown before the
 * process wrote anything, so the database is left exactly as it was found.
 */
export class SchemaVersionError extends Error {
  override readonly name = 'SchemaVersionError';
}

/** Where a database stands against the migrations this build knows (pure: unit-tested). */
export type SchemaVerdict =
  | { ok: true }
  | { ok: false; reason: 'empty' | 'unknown_baseline' | 'newer' | 'behind'; message: string };

/**
 * Compares the migrations recorded in the database (`applied`, in apply order; null when there is
 * no migrations table) with the ones this build knows (`known`, in apply order). The schema is
 * accepted only when it is exactly this build's: every known migration applied, nothing else.
 * - no migrations table: an empty database (nothing migrated yet), or a database this build did not
 *   create (tables but no record of migrations): neither is a known baseline;
 * - a migration this build does not know: the database was migrated by a newer build (or another
 *   application); writing to it could corrupt what that build relies on;
 * - known migrations missing: the migrations of this build have not run yet.
 */
export function schemaVerdict(applied: string[] | null, known: string[], hasOtherTables: boolean): SchemaVerdict {
  const latestKnown = known.at(-1) ?? '(none)';
  if (applied === null || applied.length === 0) {
    if (hasOtherTables) {
      return {
        ok: false,
        reason: 'unknown_baseline',
        message: `database schema is not a known baseline: it has tables but no record of this application's migrations (table ${MIGRATIONS_TABLE}); this build knows migrations up to ${latestKnown}. Point DATABASE_URL at this deployment's database, or at an empty one and ${MIGRATE_HINT}`,
      };
    }
    return { ok: false, reason: 'empty', message: `database schema is empty (no migration applied), this build knows up to ${latestKnown}: ${MIGRATE_HINT}` };
  }
  const knownSet = new Set(known);
  const unknown = applied.filter((name) => !knownSet.has(name));
  if (unknown.length > 0) {
    return {
      ok: false,
      reason: 'newer',
      message: `database schema is at migration ${applied.at(-1)}, this build knows up to ${latestKnown} (unknown to it: ${unknown.join(', ')}): start a build that includes these migrations; this one will not write to a newer schema`,
    };
  }
  const appliedSet = new Set(applied);
  const missing = known.filter((name) => !appliedSet.has(name));
  if (missing.length > 0) {
    return {
      ok: false,
      reason: 'behind',
      message: `database schema is at migration ${applied.at(-1)}, this build needs ${latestKnown} (not applied: ${missing.join(', ')}): ${MIGRATE_HINT}`,
    };
  }
  return { ok: true };
}

/**
 * Refuses a database whose schema is not this build's (schemaVerdict), reading only: one query
 * for the recorded migrations, one to tell an empty database from a foreign one.
 */
export async function assertSchemaCurrent(dataSource: DataSource, known: string[]): Promise<void> {
  const verdict = await readSchemaVerdict(dataSource, known);
  if (!verdict.ok) throw new SchemaVersionError(verdict.message);
}

/**
 * The database's schemaVerdict, read without writing anything. Both reads are of the schema this
 * connection creates tables in (current_schema(): the first existing schema of its search_path),
 * where the migrations put them; a deployment may point search_path at a schema other than
 * `public`. Tables an extension owns (PostGIS's spatial_ref_sys) are the extension's, not another
 * application's: a database holding only those is still empty to this application.
 */
export async function readSchemaVerdict(dataSource: DataSource, known: string[]): Promise<SchemaVerdict> {
  const [{ present }] = (await dataSource.query(
    `SELECT to_regclass(format('%I.%I', current_schema(), $1::text)) IS NOT NULL AS present`,
    [MIGRATIONS_TABLE],
  )) as [{ present: boolean }];
  let applied: string[] | null = null;
  if (present) {
    const rows = (await dataSource.query(`SELECT name FROM ${MIGRATIONS_TABLE} ORDER BY timestamp, id`)) as { name: string }[];
    applied = rows.map((row) => row.name);
  }
  let hasOtherTables = false;
  if (applied === null || applied.length === 0) {
    const [{ n }] = (await dataSource.query(
      `SELECT count(*)::int AS n FROM pg_catalog.pg_class c
       WHERE c.relnamespace = (SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema())
         AND c.relkind IN ('r', 'p') AND c.relname <> $1
         AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')`,
      [MIGRATIONS_TABLE],
    )) as [{ n: number }];
    hasOtherTables = n > 0;
  }
  return schemaVerdict(applied, known, hasOtherTables);
}
