import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import type { DataSource, Repository } from 'typeorm';
import { AppConfig } from '#libs/config';
import { canonicalJson, newId, prepared } from '#libs/database';
import { DomainError } from '#libs/errors';
import { type AcceptedReceipt, IdempotencyReceiptEntity } from '../tables/receipt.entity.js';

export interface IdempotencyScope {
  ownerId: string;
  /** e.g. `sessions.create` or `session:<id>:events`. */
  scope: string;
  key: string;
  /** Hash of the intent: operation, target and canonical payload. */
  requestHash: string;
}

/** What a write answered: stored with its receipt, replayed byte for byte. */
export interface WorkResult {
  status: number;
  body: unknown;
  sessionId: string | null;
  receipt: AcceptedReceipt | null;
}

export interface IdempotentResponse {
  status: number;
  body: string;
  replayed: boolean;
  receipt: AcceptedReceipt | null;
  sessionId: string | null;
}

/** A receipt row as the lookup reads it (`RECEIPT_LOOKUP`), expired ones included. */
export interface ReceiptRow {
  request_hash: string;
  response_status: number;
  response_body: string;
  receipt: AcceptedReceipt | null;
  session_id: string | null;
  session_deleted: boolean;
  /** Past its own `expires_at`: it answers nothing, and a new write may take its key over. */
  expired: boolean;
}

/** A statement (or a CTE of one) with its parameters numbered from the `first` it was built for. */
export interface SqlFragment {
  sql: string;
  values: unknown[];
}

const KEY_MAX = 128;
/** The unique (owner, scope, key) constraint: what turns a concurrent duplicate into an error of its whole statement. */
const RECEIPT_KEY_CONSTRAINT = 'idempotency_receipts_owner_id_scope_idempotency_key_key';

/**
 * The receipt of a scope and key, expired or not, with whether its session is deleted. `$owner`,
 * `$scope` and `$key` are the parameter references of the statement it is part of.
 */
export function receiptLookup(owner: string, scope: string, key: string): string {
  return `SELECT r.request_hash, r.response_status, r.response_body, r.receipt, r.session_id, s.deleted_at IS NOT NULL AS session_deleted, r.expires_at <= now() AS expired
       FROM idempotency_receipts r LEFT JOIN sessions s ON s.id = r.session_id
       WHERE r.owner_id = ${owner} AND r.scope = ${scope} AND r.idempotency_key = ${key}`;
}

/**
 * The idempotency receipts of this lib's table: what a write's key already answered (`decide`), and
 * the insert that stores a new answer (`receiptInsert`), for the orchestrator that owns the write's
 * statement or transaction. Nothing here opens a transaction or runs the work: a committed receipt
 * answers a retry with one read; otherwise the work and its receipt commit together, and the
 * unique (owner, scope, key) constraint turns a concurrent duplicate into a failed write that the
 * orchestrator answers with the first response.
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

  static eventScope(sessionId: string): string {
    return `session:${sessionId}:events`;
  }

  /**
   * What an earlier write under this key answers: its stored response, or null (no receipt, or an
   * expired one: a receipt past its `expires_at`, the TTL of the replica that wrote it, answers
   * nothing whether or not the sweep has deleted it yet). A different intent is a conflict, and
   * everything under a deleted session is 404, its first answer too.
   */
  static decide(row: ReceiptRow | null | undefined, scope: IdempotencyScope): IdempotentResponse | null {
    if (!row || row.expired) return null;
    if (row.request_hash !== scope.requestHash) {
      throw new DomainError('idempotency_conflict', 'This Idempotency-Key was already used with a different request; use a new key for a new intent', {
        idempotency_key: scope.key,
      });
    }
    if (row.session_deleted) throw DomainError.notFound(`Session ${row.session_id}`);
    return { status: row.response_status, body: row.response_body, replayed: true, receipt: row.receipt, sessionId: row.session_id };
  }

  /** The receipt of this scope and key, expired or not (one read). */
  async lookup(scope: IdempotencyScope): Promise<ReceiptRow | null> {
    const rows = (await this.receipts.query(prepared(receiptLookup('$1', '$2', '$3')), [scope.ownerId, scope.scope, scope.key])) as ReceiptRow[];
    return rows[0] ?? null;
  }

  /**
   * The insert storing `result` under the key, its parameters numbered from `first`. `takeover`
   * (for a write in a transaction of its own): an expired receipt of the key is taken over, and a
   * live one inserts nothing (RETURNING no row: the caller rolls back and replays). Without it (a
   * CTE of a write's one statement): a plain insert, gated on the rows of the CTE `gate`, so that
   * any receipt of the key fails the whole statement (`isDuplicate`) rather than leave its other
   * writes done; a caller that saw an expired receipt must take the `takeover` path.
   */
  receiptInsert(scope: IdempotencyScope, result: WorkResult, first: number, options: { takeover: true } | { takeover: false; gate: string }): SqlFragment & { body: string } {
    const body = JSON.stringify(result.body);
    const now = new Date();
    const values = [
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
    ];
    const params = values.map((_, i) => `$${first + i}`).join(', ');
    const columns = '(id, owner_id, scope, idempotency_key, request_hash, session_id, input_id, receipt, response_status, response_body, created_at, expires_at)';
    const sql = options.takeover
      ? `INSERT INTO idempotency_receipts ${columns} VALUES (${params})
           ON CONFLICT (owner_id, scope, idempotency_key) DO UPDATE SET id = EXCLUDED.id, request_hash = EXCLUDED.request_hash,
             session_id = EXCLUDED.session_id, input_id = EXCLUDED.input_id, receipt = EXCLUDED.receipt, response_status = EXCLUDED.response_status,
             response_body = EXCLUDED.response_body, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
           WHERE idempotency_receipts.expires_at <= now() RETURNING id`
      : `INSERT INTO idempotency_receipts ${columns} SELECT ${params} FROM ${options.gate} RETURNING id`;
    return { sql, values, body };
  }

  /** Whether a write failed because a receipt of its key exists (a duplicate that committed first). */
  static isDuplicate(error: unknown): boolean {
    const driverError = (error as { driverError?: { code?: string; constraint?: string } } | null)?.driverError;
    return driverError?.code === '23505' && driverError.constraint === RECEIPT_KEY_CONSTRAINT;
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
