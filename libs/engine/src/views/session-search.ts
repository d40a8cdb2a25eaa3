import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { isUuid, type Page, type PageQuery, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import { SESSION_COLUMNS, type SessionEntity, sessionFromRow } from '../tables/session.entity.js';
import { type SessionStatus, sessionStatusSql } from '../machines/session-states.js';

/** The public statuses a search can ask for: the session's derived status. */
export type SearchStatus = SessionStatus;

/** The operators' search over every owner's sessions; every field narrows, none given: all live sessions. */
export interface SessionSearchFilter {
  status?: SearchStatus;
  agentId?: string;
  ownerId?: string;
  /** Sessions of this app's end users. */
  appId?: string;
  /** Sessions of the end user known to its app by this id (`X-End-User-Id`), of any app unless `appId` is given too. */
  endUserId?: string;
  /** true: the latest turn waits for a person (a question, an approval or client tool results); false: it does not. */
  waiting?: boolean;
  /** The latest turn's error code. */
  errorCode?: string;
  /** Unix seconds: created at or after. */
  createdAfter?: number;
  /** Unix seconds: created before. */
  createdBefore?: number;
  /** A title fragment (case-insensitive), or the beginning of a session id. */
  q?: string;
}

/** Who owns a found session, as the operators' console shows it. */
export interface SessionOwner {
  id: string;
  kind: 'user' | 'end_user';
  /** A product user's token subject, or an end user's id within the app. */
  subject: string | null;
  appId: string | null;
  /** A product user's name given on this server (`bootstrap`, a `create-key` name); null when generated from an id. */
  name: string | null;
}

export interface FoundSession {
  session: SessionEntity;
  owner: SessionOwner;
}

// The session's public status (SESSION_STATUS_MACHINE, sessionStatusOf) as SQL over the current-turn overview.
const TURN_STATUS = `s.current_turn->>'status'`;
const STATUS_SQL = sessionStatusSql(TURN_STATUS);
/** The page's columns and its owner's, named (a prepared statement may not select `*`). */
const FOUND_COLUMNS = `${SESSION_COLUMNS.split(',')
  .map((column) => `p.${column.trim()}`)
  .join(', ')}, u.kind AS owner_kind, u.name AS owner_name, u.subject AS owner_subject, u.external_id AS owner_external_id, u.app_id AS owner_app_id`;
/** Waiting for a person or the client: a question, an approval, a client tool's result, or a budget to raise and approve (as the waitpoint inbox's default). */
const WAITING_SQL = `(${TURN_STATUS} = 'requires_action' AND s.current_turn->'waitpoint'->>'kind' IN ('question', 'approval', 'client_tool', 'budget'))`;

/**
 * Cross-owner session search for operators, newest first by default, in the (created_at, id) pages
 * of every list. The page walks sessions_page_idx (or the agent's or owner's index) and tests the
 * other filters on each row: status, waiting and error code read the current-turn overview, which
 * is deliberately not indexed (it changes on every turn; an index would cost the turn path).
 */
@Injectable()
export class SessionSearch {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async search(filter: SessionSearchFilter, page: PageQuery): Promise<Page<FoundSession>> {
    const params: unknown[] = [];
    const param = (value: unknown): string => {
      params.push(value);
      return `$${params.length}`;
    };
    const where = ['s.deleted_at IS NULL'];
    if (filter.status !== undefined) where.push(STATUS_SQL[filter.status]);
    if (filter.agentId !== undefined) where.push(`s.agent_id = ${param(filter.agentId)}`);
    if (filter.ownerId !== undefined) where.push(`s.owner_id = ${param(filter.ownerId)}::uuid`);
    if (filter.appId !== undefined || filter.endUserId !== undefined) {
      const endUser = ["kind = 'end_user'"];
      if (filter.appId !== undefined) endUser.push(`app_id = ${param(filter.appId)}`);
      if (filter.endUserId !== undefined) endUser.push(`external_id = ${param(filter.endUserId)}`);
      where.push(`s.owner_id IN (SELECT id FROM users WHERE ${endUser.join(' AND ')})`);
    }
    if (filter.waiting !== undefined) where.push(filter.waiting ? WAITING_SQL : `NOT COALESCE(${WAITING_SQL}, false)`);
    if (filter.errorCode !== undefined) {
      where.push(`EXISTS (SELECT 1 FROM turns t WHERE t.id = (s.current_turn->>'id')::uuid AND t.error->>'code' = ${param(filter.errorCode)})`);
    }
    if (filter.createdAfter !== undefined) where.push(`s.created_at >= to_timestamp(${param(filter.createdAfter)}::double precision)`);
    if (filter.createdBefore !== undefined) where.push(`s.created_at < to_timestamp(${param(filter.createdBefore)}::double precision)`);
    if (filter.q !== undefined) where.push(this.textMatch(filter.q, param));
    if (page.after !== undefined) {
      const anchor = isUuid(page.after) ? ((await this.dataSource.query(prepared(`SELECT 1 FROM sessions WHERE id = $1 AND deleted_at IS NULL`), [page.after])) as unknown[])[0] : undefined;
      if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not a session of this list');
      // Compared in SQL: the anchor's microseconds would not survive a round trip through a JS Date.
      where.push(`(s.created_at, s.id) ${page.order === 'desc' ? '<' : '>'} (SELECT created_at, id FROM sessions WHERE id = ${param(page.after)}::uuid)`);
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const limit = param(page.limit + 1);
    // The page first, then its owners (one primary-key read per row of the page, not of the walk).
    const rows = (await this.dataSource.query(
      `SELECT ${FOUND_COLUMNS}
       FROM (SELECT ${SESSION_COLUMNS} FROM sessions s WHERE ${where.join(' AND ')} ORDER BY s.created_at ${direction}, s.id ${direction} LIMIT ${limit}) p
       JOIN users u ON u.id = p.owner_id
       ORDER BY p.created_at ${direction}, p.id ${direction}`,
      params,
    )) as Record<string, unknown>[];
    return toPage(rows.map(found), page.limit);
  }

  /** One live session of any owner, with its owner; null when there is none. */
  async find(sessionId: string): Promise<FoundSession | null> {
    if (!isUuid(sessionId)) return null;
    const rows = (await this.dataSource.query(
      prepared(`SELECT ${FOUND_COLUMNS}
       FROM (SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = $1 AND deleted_at IS NULL) p JOIN users u ON u.id = p.owner_id`),
      [sessionId],
    )) as Record<string, unknown>[];
    return rows[0] ? found(rows[0]) : null;
  }

  /**
   * `q`: the title contains it (ILIKE, its wildcards escaped), or — when it reads as the start of
   * a session id — the id begins with it, as a range of the primary key.
   */
  private textMatch(q: string, param: (value: unknown) => string): string {
    const title = `s.title ILIKE ${param(`%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`)} ESCAPE '\\'`;
    const range = idPrefixRange(q);
    return range ? `(${title} OR s.id BETWEEN ${param(range[0])}::uuid AND ${param(range[1])}::uuid)` : title;
  }
}

/** The smallest and largest UUIDs starting with `prefix` (as written: lowercase or not, with its dashes), or null when it cannot start one. */
export function idPrefixRange(prefix: string): [string, string] | null {
  const text = prefix.toLowerCase();
  if (!/^[0-9a-f-]{1,36}$/.test(text)) return null;
  const hex = text.replace(/-/g, '');
  const shape = (digits: string): string => `${digits.slice(0, 8)}-${digits.slice(8, 12)}-${digits.slice(12, 16)}-${digits.slice(16, 20)}-${digits.slice(20)}`;
  const low = shape(hex.padEnd(32, '0'));
  // Dashes only where a UUID has them: "0193a5b0-0a" is a prefix, "01-93" is not.
  return low.startsWith(text) ? [low, shape(hex.padEnd(32, 'f'))] : null;
}

/** The names the server makes up for users it first sees by id (a key's `user_id`, a token's `sub`): nobody chose them. */
const GENERATED_NAME = /^(user|jwt):/;

/** A session's owner from the users row's fields: an end user's subject is its id within the app; a made-up name is none. */
export function sessionOwnerOf(user: { id: string; kind: 'user' | 'end_user'; name: string; subject: string | null; externalId: string | null; appId: string | null }): SessionOwner {
  return {
    id: user.id,
    kind: user.kind,
    subject: (user.kind === 'end_user' ? user.externalId : user.subject) ?? null,
    appId: user.appId ?? null,
    name: user.kind === 'user' && !GENERATED_NAME.test(user.name) ? user.name : null,
  };
}

function found(row: Record<string, unknown>): FoundSession {
  return {
    session: sessionFromRow(row),
    owner: sessionOwnerOf({
      id: row.owner_id as string,
      kind: row.owner_kind as 'user' | 'end_user',
      name: row.owner_name as string,
      subject: row.owner_subject as string | null,
      externalId: row.owner_external_id as string | null,
      appId: row.owner_app_id as string | null,
    }),
  };
}
