export { DatabaseModule } from './database.module.js';
export { dataSourceOptions, knownMigrationNames, MIGRATIONS } from './data-source-options.js';
export { assertSchemaCurrent, SchemaVersionError, schemaVerdict, type SchemaVerdict } from './schema-guard.js';
export { derivedId, idAt, isUuid, newId, unixSeconds } from './ids.js';
export { type Page, type PageQuery, toPage } from './pagination.js';
export { prepared, preparedUpTo } from './prepared.js';
export { sqlList, statusGuard, type Transition } from './status-guards.js';
export { canonicalJson } from './canonical-json.js';
export { QueryLogger } from './query-logger.js';
