import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { isUuid, listEnvelope, type PageQuery, prepared, toPage, unixSeconds } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { Role } from './principal.js';
import { type UserDto, type UserKind, type UserKindFilter, type UserListDto, USER_KINDS } from './user.dto.js';

/** The columns toUserDto reads. */
export const USER_COLUMNS = 'id, kind, subject, external_id, app_id, parent_id, role, created_at, suspended_at';

export interface UserRow {
  id: string;
  kind: UserKind;
  subject: string | null;
  external_id: string | null;
  app_id: string | null;
  parent_id: string | null;
  role: Role | null;
  created_at: Date;
  suspended_at: Date | null;
}

/** The users list of administrators: one kind or all, newest first by default, paged by id like every list. */
@Injectable()
export class Users {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async list(kind: UserKindFilter, page: PageQuery): Promise<UserListDto> {
    const kinds: readonly UserKind[] = kind === 'all' ? USER_KINDS : [kind];
    const params: unknown[] = [page.limit + 1, kinds];
    let after = '';
    if (page.after !== undefined) {
      // The cursor must be a user of this very list (its kind included), or the page would jump.
      const anchor = isUuid(page.after) ? ((await this.dataSource.query(prepared(`SELECT 1 FROM users WHERE id = $1 AND kind = ANY ($2::varchar[])`), [page.after, kinds])) as unknown[])[0] : undefined;
      if (!anchor) throw new DomainError('invalid_cursor', 'The `after` cursor is not a user of this list');
      params.push(page.after);
      // Compared in SQL: the anchor's microseconds would not survive a round trip through a JS Date.
      after = `AND (created_at, id) ${page.order === 'desc' ? '<' : '>'} (SELECT created_at, id FROM users WHERE id = $3)`;
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const rows = (await this.dataSource.query(
      `SELECT ${USER_COLUMNS} FROM users
       WHERE kind = ANY ($2::varchar[]) ${after} ORDER BY created_at ${direction}, id ${direction} LIMIT $1`,
      params,
    )) as UserRow[];
    const { rows: data, hasMore } = toPage(rows.map(toUserDto), page.limit);
    return listEnvelope(data, hasMore);
  }
}

/** A user's row (and name), locked until commit, for an administrator's change of it; 404 when there is none. */
export async function lockUser(manager: EntityManager, userId: string): Promise<UserRow & { name: string }> {
  const [current] = isUuid(userId) ? ((await manager.query(prepared(`SELECT ${USER_COLUMNS}, name FROM users WHERE id = $1 FOR UPDATE`), [userId])) as (UserRow & { name: string })[]) : [];
  if (!current) throw DomainError.notFound(`User ${userId}`);
  return current;
}

export function toUserDto(row: UserRow): UserDto {
  return {
    id: row.id,
    object: 'user',
    kind: row.kind,
    // One field for who the user is outside: a token's subject, or an end user's id within the app.
    subject: row.kind === 'end_user' ? row.external_id : row.subject,
    app_id: row.app_id,
    parent_id: row.parent_id,
    role: row.role,
    is_admin: row.role === 'admin',
    suspended_at: unixSeconds(row.suspended_at),
    created_at: unixSeconds(row.created_at),
  };
}
