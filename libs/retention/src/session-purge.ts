import { Injectable } from '@nestjs/common';
import { AppConfig } from '#libs/config';
import type { RetentionBatch, RetentionTask } from '#libs/database';
import { SessionPurgeRepository } from '#libs/engine';
import { WorkspacesRepository } from '#libs/environments';
import { EventOutbox } from '#libs/events';
import { FilesRepository } from '#libs/files';
import { StorageUsageRepository } from '#libs/protocol';
import { SpanRetention } from '#libs/traces';
import { PURGE_SESSIONS_PER_BATCH, purgeBatchOutcome, SESSION_PURGE_STEPS, type SessionPurgeStep } from './session-purge-plan.js';

/**
 * Retention kind `deleted_sessions`: every row a deleted session owns goes once SESSION_PURGE_AFTER_S
 * has passed since its delete, by the lifecycle clock; a session that a fork's lineage names stays
 * until that fork is purged (its history is the fork's too).
 *
 * Here, in libs/retention, and not in the engine: each lib deletes its own tables (the outbox,
 * spans, the environment's rows, the files, the aggregate), and only this application layer may
 * depend on all of them; the engine, which owns `sessions`, decides what is due and removes the
 * `sessions` row last. SESSION_PURGE_STEPS (session-purge-plan.ts) is the order.
 *
 * Kept, by design: usage_ledger (accounting; session_id is a plain value, no key), webhook
 * deliveries (WEBHOOK_RETENTION_S ages them), automations and their invocations naming the session
 * (plain values: a target that is gone answers as a deleted one did), budget reservations (released
 * at each run's end; the expired ones the budgets sweep removes), workspace blobs (shared by content).
 */
@Injectable()
export class SessionPurge implements RetentionTask {
  readonly kind = 'deleted_sessions' as const;

  constructor(
    private readonly config: AppConfig,
    private readonly sessions: SessionPurgeRepository,
    private readonly outbox: EventOutbox,
    private readonly spans: SpanRetention,
    private readonly workspaces: WorkspacesRepository,
    private readonly files: FilesRepository,
    private readonly storageUsage: StorageUsageRepository,
  ) {}

  async runBatch(limit: number): Promise<RetentionBatch> {
    const graceS = this.config.sessionPurgeAfterS;
    const ids = await this.sessions.due(graceS, PURGE_SESSIONS_PER_BATCH);
    if (ids.length === 0) return { rows: 0, bytes: 0, more: false };
    const steps: Record<SessionPurgeStep, () => Promise<{ rows: number; bytes: number }>> = {
      events: () => this.outbox.purgeSessions(ids, limit),
      spans: () => this.spans.purgeSessions(ids, limit),
      environment: () => this.workspaces.purgeSessions(ids, limit),
      // Tombstones, not removals: the files sweep removes them (and counts them); progress all the same.
      files: async () => ({ rows: 0, bytes: 0, moved: (await this.files.purgeSessions(ids, limit)).rows }),
      aggregate: () => this.sessions.purgeRows(ids, limit),
    };
    let rows = 0;
    let bytes = 0;
    let moved = 0;
    for (const { step } of SESSION_PURGE_STEPS) {
      const removed: { rows: number; bytes: number; moved?: number } = await steps[step]();
      rows += removed.rows;
      bytes += removed.bytes;
      moved += removed.moved ?? removed.rows;
    }
    // Their storage_usage rows, and what those still count in the owners' totals (a purge that came before the accounting's pass), go first, in one transaction.
    await this.storageUsage.removeSessions(ids);
    const gone = await this.sessions.removeSessions(ids, graceS);
    const outcome = purgeBatchOutcome(ids.length, moved, gone.ids.length);
    if (outcome.hold) await this.sessions.hold(ids);
    return { rows: rows + gone.ids.length, bytes: bytes + gone.bytes, more: outcome.more };
  }

  lagSeconds(): Promise<number> {
    return this.sessions.lagSeconds(this.config.sessionPurgeAfterS);
  }
}
