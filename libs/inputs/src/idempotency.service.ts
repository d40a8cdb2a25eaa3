import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import type { DataSource, EntityManager, Repository } from 'typeorm';
import { AppConfig } from '#libs/config';
import { canonicalJson, newId, prepared } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { RidingWrite } from './inputs.repository.js';
import { type AcceptedReceipt, IdempotencyReceiptEntity } from './receipt.entity.js';

export interface IdempotencyScope {
  ownerId: string;
  /** e.g. `sessions.create` or `session:<id>:events`. */
  scope: string;
  key: string;
  /** Hash of the intent: operation, target and canonical payload. */
  requestHash: string;
}

export interface WorkResult {
  status: number;
  body: unknown;
  sessionId: string | null;
  receipt: AcceptedReceipt | null;
  /** Writes of the work that run with the receipt insert, in its statement (the accepted input's row). */
  riding?: RidingWrite[];
}

export interface IdempotentResponse {
  status: number;
  body: string;
  replayed: boolean;
  receipt: AcceptedReceipt | null;
  sessionId: string | null;
}

const KEY_MAX = 128;
/** Parameters of the receipt insert itself; riding writes number theirs after these. */
const RECEIPT_PARAMS = 12;

class DuplicateKey extends Error {}

/**
 * Runs a write at most once per idempotency scope. A committed receipt answers a retry with one
 * read. Otherwise the work and the receipt (holding the exact response bytes) commit in one
 * transaction; the receipt insert is last, so a concurrent duplicate blocks on the unique index
 * until the first commits, then rolls its own work back and replays the first response.
 */
@Injectable()
export class IdempotencyService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(IdempotencyReceiptEntity) private readonly receipts: Repository<IdempotencyReceiptEntity>,
    private readonly config: AppConfig,
  ) {}

  static requireKey(raw: string | undefined): string {
    if (raw === undefined || raw.length === 0 || raw.length > KEY_MAX) {
      throw new DomainError('idempotency_key_required', `An Idempotency-Key header of 1–${KEY_MAX} characters is required`);
    }
    return raw;
  }

  static hashIntent(intent: unknown): string {
    return createHash('sha256').update(canonicalJson(intent)).digest('hex');
  }

  /**
   * `prepare` runs only when no receipt answers the key, before the transaction: work that cannot
   * be part of it (blobs in file storage) and that a replay must not repeat.
   */
  async execute(scope: IdempotencyScope, work: (manager: EntityManager) => Promise<WorkResult>, prepare?: () => Promise<void>): Promise<IdempotentResponse> {
    const earlier = await this.replay(scope);
    if (earlier) return earlier;
    await prepare?.();
    try {
      return await this.dataSource.transaction(async (manager) => {
        const result = await work(manager);
        const body = JSON.stringify(result.body);
        const now = new Date();
        // The work's riding writes are CTEs of this statement: Postgres runs each exactly once,
        // whether or not the receipt is inserted, and a conflict rolls them back with the rest.
        const riding = result.riding ?? [];
        let next = RECEIPT_PARAMS + 1;
        const ctes = riding.map((write, i) => {
          const cte = `w${i} AS (${write.sql(next)})`;
          next += write.values.length;
          return cte;
        });
        const inserted = (await manager.query(
          prepared(`${ctes.length > 0 ? `WITH ${ctes.join(', ')} ` : ''}INSERT INTO idempotency_receipts
             (id, owner_id, scope, idempotency_key, request_hash, session_id, input_id, receipt, response_status, response_body, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
           ON CONFLICT (owner_id, scope, idempotency_key) DO UPDATE SET id = EXCLUDED.id, request_hash = EXCLUDED.request_hash,
             session_id = EXCLUDED.session_id, input_id = EXCLUDED.input_id, receipt = EXCLUDED.receipt, response_status = EXCLUDED.response_status,
             response_body = EXCLUDED.response_body, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
           WHERE idempotency_receipts.expires_at <= now() RETURNING id`),
          [
            newId(),
            scope.ownerId,
            scope.scope,
            scope.key,
            scope.requestHash,
            result.sessionId,
            result.receipt?.input_id ?? null,
            result.receipt === null ? null : JSON.stringify(result.receipt),
            result.status,
            body,
            now,
            new Date(now.getTime() + this.config.idempotencyTtlHours * 3_600_000),
            ...riding.flatMap((write) => write.values),
          ],
        )) as unknown[];
        if (inserted.length === 0) throw new DuplicateKey();
        return { status: result.status, body, replayed: false, receipt: result.receipt, sessionId: result.sessionId };
      });
    } catch (error) {
      // A retry that raced the first request (both found no receipt, the first committed while the
      // retry waited for the session lock) fails on the state the first one left (e.g. a waitpoint
      // already resumed): the first response is the answer, not that refusal.
      if (!(error instanceof DuplicateKey) && !(error instanceof DomainError)) throw error;
      const first = await this.replay(scope);
      if (!first) throw error;
      return first;
    }
  }

  /**
   * The stored response for this scope and key, or null; a different intent is a conflict. A
   * receipt past its `expires_at` (the TTL of the replica that wrote it) answers nothing, whether or
   * not the sweep has deleted it yet: the key is free again, and the insert takes the row over.
   */
  private async replay(scope: IdempotencyScope): Promise<IdempotentResponse | null> {
    const rows = (await this.receipts.query(
      prepared(`SELECT r.request_hash, r.response_status, r.response_body, r.receipt, r.session_id, s.deleted_at IS NOT NULL AS session_deleted
       FROM idempotency_receipts r LEFT JOIN sessions s ON s.id = r.session_id
       WHERE r.owner_id = $1 AND r.scope = $2 AND r.idempotency_key = $3 AND r.expires_at > now()`),
      [scope.ownerId, scope.scope, scope.key],
    )) as { request_hash: string; response_status: number; response_body: string; receipt: AcceptedReceipt | null; session_id: string | null; session_deleted: boolean }[];
    const existing = rows[0];
    if (!existing) return null;
    if (existing.request_hash !== scope.requestHash) {
      throw new DomainError('idempotency_conflict', 'This Idempotency-Key was already used with a different request; use a new key for a new intent', {
        idempotency_key: scope.key,
      });
    }
    // Everything under a deleted session is 404, its first answer too (a replayed create must not stream it).
    if (existing.session_deleted) throw DomainError.notFound(`Session ${existing.session_id}`);
    return { status: existing.response_status, body: existing.response_body, replayed: true, receipt: existing.receipt, sessionId: existing.session_id };
  }

  /** The receipt of an earlier event submission to this session, for clients whose response was lost. */
  async findEventReceipt(ownerId: string, sessionId: string, key: string): Promise<AcceptedReceipt | null> {
    // The key that created the session (with its first input) finds that receipt here too: a client
    // that lost the create's answer recovers its input's receipt the same way.
    const rows = (await this.receipts.query(
      prepared(`SELECT receipt FROM idempotency_receipts
       WHERE owner_id = $1 AND idempotency_key = $3 AND (scope = $2 OR (scope = 'sessions.create' AND session_id = $4::uuid)) AND expires_at > now()
       ORDER BY scope = $2 DESC LIMIT 1`),
      [ownerId, IdempotencyService.eventScope(sessionId), key, sessionId],
    )) as { receipt: AcceptedReceipt | null }[];
    return rows[0]?.receipt ?? null;
  }

  static eventScope(sessionId: string): string {
    return `session:${sessionId}:events`;
  }

  /**
   * Deletes up to `limit` receipts past their own `expires_at`, soonest expired first, through its
   * index. Never this process's TTL: each receipt keeps the TTL of the replica that wrote it, and a
   * sweeping worker configured shorter than an api must not free keys that api still remembers.
   */
  async deleteExpired(limit: number): Promise<number> {
    const result = (await this.dataSource.query(
      prepared(`DELETE FROM idempotency_receipts WHERE id IN (SELECT id FROM idempotency_receipts WHERE expires_at <= now() ORDER BY expires_at LIMIT $1)`),
      [limit],
    )) as [unknown[], number];
    return result[1] ?? 0;
  }
}
