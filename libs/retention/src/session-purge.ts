import { Injectable, Logger } from '@nestjs/common';
import { BudgetsRepository } from '#libs/budgets';
import { AppConfig, ThrottledLog } from '#libs/config';
import type { RetentionBatch, RetentionTask } from '#libs/database';
import { SessionPurgeRepository } from '#libs/engine';
import { WorkspacesRepository } from '#libs/environments';
import { EventOutbox } from '#libs/events';
import { FilesRepository } from '#libs/files';
import { metrics } from '#libs/metrics';
import { StorageUsageRepository } from '#libs/protocol';
import { SpanRetention } from '#libs/traces';
import { PURGE_FAILED_RETRY_S, PURGE_PIN_RECHECK_S, PURGE_SESSIONS_PER_BATCH, purgeBatchOutcome, SESSION_PURGE_STEPS, type SessionPurgeStep } from './session-purge-plan.js';

/** What one pass of the steps over some sessions did. */
interface PurgePass {
  rows: number;
  bytes: number;
  /** Rows removed, and files made tombstones: progress. */
  moved: number;
  gone: number;
}

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
 * One session must not stall the queue: a batch's steps cover all its sessions, so when one fails
 * (a statement timeout, a row no condition foresaw) each session is retried alone; one that fails
 * alone too is held for PURGE_FAILED_RETRY_S (`purge_held_at`), logged and counted
 * (yuxi_session_purge_quarantined_total), and the sessions behind it go on.
 *
 * Kept, by design: usage_ledger (accounting; session_id is a plain value, no key), webhook
 * deliveries (WEBHOOK_RETENTION_S ages them), automations and their invocations naming the session
 * (plain values: a target that is gone answers as a deleted one did), budget reservations (released
 * at each run's end; the expired ones the budgets sweep removes), workspace blobs (shared by content).
 * The session's own budget (`budgets`, scope_kind 'session') goes with it (step `budgets`).
 */
@Injectable()
export class SessionPurge implements RetentionTask {
  readonly kind = 'deleted_sessions' as const;

  private readonly failures = new ThrottledLog(new Logger('SessionPurge'));

  constructor(
    private readonly config: AppConfig,
    private readonly sessions: SessionPurgeRepository,
    private readonly outbox: EventOutbox,
    private readonly spans: SpanRetention,
    private readonly workspaces: WorkspacesRepository,
    private readonly files: FilesRepository,
    private readonly storageUsage: StorageUsageRepository,
    private readonly budgets: BudgetsRepository,
  ) {}

  async runBatch(limit: number): Promise<RetentionBatch> {
    const { ids, pinned } = await this.sessions.due(this.config.sessionPurgeAfterS, PURGE_SESSIONS_PER_BATCH, PURGE_PIN_RECHECK_S);
    // Only pinned sources found: they left the due index, so the next batch reads the sessions behind them.
    if (ids.length === 0) return { rows: 0, bytes: 0, more: pinned > 0 };
    let pass: PurgePass;
    try {
      pass = await this.purge(ids, limit);
    } catch (error) {
      this.failures.warn(`session purge: a batch of ${ids.length} sessions failed (${messageOf(error)}); each is retried alone`, 'batch');
      return this.oneByOne(ids, limit, pinned);
    }
    const outcome = purgeBatchOutcome(ids.length, pass.moved, pass.gone);
    if (outcome.hold) await this.sessions.hold(ids, this.stuckRetryS());
    return { rows: pass.rows, bytes: pass.bytes, more: outcome.more || pinned > 0 };
  }

  /**
   * Sessions a pass moved nothing of wait for the files sweep (their files are tombstones it
   * removes), or for a project to drop an attachment they hold: looked at again after one files
   * sweep interval, not every tick (a full pass of the steps each time, on every worker).
   */
  private stuckRetryS(): number {
    return Math.max(1, Math.ceil((this.config.fileSweepMs ?? 60_000) / 1000));
  }

  /** Each session of a failed batch alone: one that fails again is held for PURGE_FAILED_RETRY_S and counted; the others go on. */
  private async oneByOne(ids: string[], limit: number, pinned: number): Promise<RetentionBatch> {
    let rows = 0;
    let bytes = 0;
    let more = pinned > 0;
    for (const id of ids) {
      try {
        const pass = await this.purge([id], limit);
        rows += pass.rows;
        bytes += pass.bytes;
        const outcome = purgeBatchOutcome(1, pass.moved, pass.gone);
        if (outcome.hold) await this.sessions.hold([id], this.stuckRetryS());
        more ||= outcome.more;
      } catch (error) {
        metrics.sessionPurgeFailed();
        this.failures.warn(`session purge of ${id} failed (${messageOf(error)}): held, retried in ${PURGE_FAILED_RETRY_S} s`, 'session');
        await this.sessions.hold([id], PURGE_FAILED_RETRY_S);
        // Another session of the batch may still have rows: the sweep runs another batch, which no longer picks this one.
        more = true;
      }
    }
    return { rows, bytes, more };
  }

  /** Every step over these sessions, in the plan's order, then their `sessions` rows where nothing references them. */
  private async purge(ids: string[], limit: number): Promise<PurgePass> {
    const steps: Record<SessionPurgeStep, () => Promise<{ rows: number; bytes: number; moved?: number }>> = {
      events: () => this.outbox.purgeSessions(ids, limit),
      spans: () => this.spans.purgeSessions(ids, limit),
      environment: () => this.workspaces.purgeSessions(ids, limit),
      // Tombstones, not removals: the files sweep removes them (and counts them); progress all the same.
      files: async () => ({ rows: 0, bytes: 0, moved: (await this.files.purgeSessions(ids, limit)).rows }),
      budgets: () => this.budgets.purgeSessions(ids, limit),
      aggregate: () => this.sessions.purgeRows(ids, limit),
    };
    const pass: PurgePass = { rows: 0, bytes: 0, moved: 0, gone: 0 };
    for (const { step } of SESSION_PURGE_STEPS) {
      const removed = await steps[step]();
      pass.rows += removed.rows;
      pass.bytes += removed.bytes;
      pass.moved += removed.moved ?? removed.rows;
    }
    // Their storage_usage rows, and what those still count in the owners' totals (a purge that came before the accounting's pass), go first.
    await this.storageUsage.removeSessions(ids);
    const gone = await this.sessions.removeSessions(ids, this.config.sessionPurgeAfterS);
    // Their Redis streams go with them (else they stay until EVENTS_REPLAY_TTL_SECONDS); a failure leaves them to that TTL.
    await this.outbox.dropStreams(gone.ids).catch((error: unknown) => this.failures.warn(`session purge: dropping ${gone.ids.length} Redis streams failed (${messageOf(error)}); they expire at their TTL`, 'streams'));
    pass.rows += gone.ids.length;
    pass.bytes += gone.bytes;
    pass.gone = gone.ids.length;
    return pass;
  }

  lagSeconds(): Promise<number> {
    return this.sessions.lagSeconds(this.config.sessionPurgeAfterS);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
