import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { dataSourceOptions, knownMigrationNames } from './data-source-options.js';
import { readSchemaVerdict, SchemaVersionError } from './schema-guard.js';

/**
 * `node dist/libs/database/src/migrate.js`: applies pending migrations; run before api and worker
 * start (they refuse a schema that is not exactly this build's). Idempotent: a second run applies
 * nothing. It refuses, before applying anything, a database migrated by a newer build or one this
 * application did not create: only an empty database or one behind this build is migrated.
 */
async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is required');
  const dataSource = new DataSource({ ...dataSourceOptions(url, 1), logging: ['error'] });
  await dataSource.initialize();
  try {
    const verdict = await readSchemaVerdict(dataSource, knownMigrationNames());
    if (!verdict.ok && (verdict.reason === 'newer' || verdict.reason === 'unknown_baseline')) throw new SchemaVersionError(verdict.message);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    for (const migration of applied) console.log(`migration applied: ${migration.name}`);
    if (applied.length === 0) console.log('migrations: none pending, the schema is current');
  } finally {
    await dataSource.destroy();
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof SchemaVersionError ? `refusing to migrate: ${error.message}` : error);
  process.exit(1);
});
