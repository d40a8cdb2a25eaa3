import type { DataSourceOptions } from 'typeorm';
import { QueryLogger } from './query-logger.js';
import { InitialSchema1764460800000 } from './migrations/1764460800000-initial-schema.js';
import { SessionOverview1764547200000 } from './migrations/1764547200000-session-overview.js';
import { LeanWriteIndexes1764633600000 } from './migrations/1764633600000-lean-write-indexes.js';
import { InputPriority1764720000000 } from './migrations/1764720000000-input-priority.js';
import { RunItemsIndex1764806400000 } from './migrations/1764806400000-run-items-index.js';
import { DurableCore1764892800000 } from './migrations/1764892800000-durable-core.js';
import { AgentRuntime1764979200000 } from './migrations/1764979200000-agent-runtime.js';
import { Identity1765065600000 } from './migrations/1765065600000-identity.js';
import { Files1765152000000 } from './migrations/1765152000000-files.js';
import { InlineImages1765242000000 } from './migrations/1765242000000-inline-images.js';
import { PreparationBackoff1765330120000 } from './migrations/1765330120000-preparation-backoff.js';
import { Compaction1765416000000 } from './migrations/1765416000000-compaction.js';
import { Projects1765502400000 } from './migrations/1765502400000-projects.js';
import { Cooperation1765588800000 } from './migrations/1765588800000-cooperation.js';
import { SessionHygiene1765761600000 } from './migrations/1765761600000-session-hygiene.js';
import { UsersByKind1765848000000 } from './migrations/1765848000000-users-by-kind.js';
import { Roles1765934400000 } from './migrations/1765934400000-roles.js';
import { OperatorReads1766020800000 } from './migrations/1766020800000-operator-reads.js';
import { ModelRequests1766107200000 } from './migrations/1766107200000-model-requests.js';
import { AgentVersions1766193600000 } from './migrations/1766193600000-agent-versions.js';
import { SessionTitleSearch1766280000000 } from './migrations/1766280000000-session-title-search.js';
import { ToolFiles1766366400000 } from './migrations/1766366400000-tool-files.js';
import { Secrets1766368800000 } from './migrations/1766368800000-secrets.js';
import { Webhooks1766455200000 } from './migrations/1766455200000-webhooks.js';
import { Agency1766541600000 } from './migrations/1766541600000-agency.js';
import { AccountRunningTurns1766627900000 } from './migrations/1766627900000-account-running-turns.js';
import { ReceiptExpiryIndex1766714400000 } from './migrations/1766714400000-receipt-expiry-index.js';
import { StatusChecks1766801700000 } from './migrations/1766801700000-status-checks.js';
import { Workspaces1766900000000 } from './migrations/1766900000000-workspaces.js';
import { SessionEnvironment1766900100000 } from './migrations/1766900100000-session-environment.js';
import { ArtifactPerTurnPath1766900200000 } from './migrations/1766900200000-artifact-per-turn-path.js';
import { UsageAndBudgets1767000000000 } from './migrations/1767000000000-usage-and-budgets.js';
import { Automations1767100000000 } from './migrations/1767100000000-automations.js';
import { Fork1767200000000 } from './migrations/1767200000000-fork.js';
import { Traces1767300000000 } from './migrations/1767300000000-traces.js';
import { DataLifecycle1767400000000 } from './migrations/1767400000000-data-lifecycle.js';
import { SessionPurge1767400100000 } from './migrations/1767400100000-session-purge.js';
import { RetentionKinds1767400200000 } from './migrations/1767400200000-retention-kinds.js';
import { SessionTtl1767400300000 } from './migrations/1767400300000-session-ttl.js';
import { StorageUsage1767400400000 } from './migrations/1767400400000-storage-usage.js';
import { StorageTotalsDeltas1767400410000 } from './migrations/1767400410000-storage-totals-deltas.js';

/** Migrations in apply order; the schema is owned by migrations only, never `synchronize`. */
export const MIGRATIONS = [
  InitialSchema1764460800000,
  SessionOverview1764547200000,
  LeanWriteIndexes1764633600000,
  InputPriority1764720000000,
  RunItemsIndex1764806400000,
  DurableCore1764892800000,
  AgentRuntime1764979200000,
  Identity1765065600000,
  Files1765152000000,
  InlineImages1765242000000,
  PreparationBackoff1765330120000,
  Compaction1765416000000,
  Projects1765502400000,
  Cooperation1765588800000,
  SessionHygiene1765761600000,
  UsersByKind1765848000000,
  Roles1765934400000,
  OperatorReads1766020800000,
  ModelRequests1766107200000,
  AgentVersions1766193600000,
  SessionTitleSearch1766280000000,
  ToolFiles1766366400000,
  Secrets1766368800000,
  Webhooks1766455200000,
  Agency1766541600000,
  AccountRunningTurns1766627900000,
  ReceiptExpiryIndex1766714400000,
  StatusChecks1766801700000,
  Workspaces1766900000000,
  SessionEnvironment1766900100000,
  ArtifactPerTurnPath1766900200000,
  UsageAndBudgets1767000000000,
  Automations1767100000000,
  Fork1767200000000,
  Traces1767300000000,
  DataLifecycle1767400000000,
  SessionPurge1767400100000,
  RetentionKinds1767400200000,
  SessionTtl1767400300000,
  StorageUsage1767400400000,
  StorageTotalsDeltas1767400410000,
];

/** The names TypeORM records for MIGRATIONS in the migrations table, in apply order. */
export function knownMigrationNames(): string[] {
  return MIGRATIONS.map((Migration) => new Migration().name ?? Migration.name);
}

/**
 * `queryTimeoutMs` bounds every query on the client side: a frozen or partitioned database fails
 * requests (503, retryable) instead of hanging them. 0 disables it (migrations).
 */
export function dataSourceOptions(url: string, poolSize: number, queryTimeoutMs = 0): DataSourceOptions {
  return {
    type: 'postgres',
    url,
    synchronize: false,
    migrationsRun: false,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    poolSize,
    extra: { max: poolSize, connectionTimeoutMillis: 5_000, ...(queryTimeoutMs > 0 ? { query_timeout: queryTimeoutMs } : {}) },
    logging: ['error', 'warn', 'migration'],
    logger: new QueryLogger(),
  };
}
