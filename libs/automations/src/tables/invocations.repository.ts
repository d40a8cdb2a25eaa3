import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { isUuid, type Page, type PageQuery, prepared, toPage } from '#libs/database';
import { DomainError } from '#libs/errors';
import type { InvocationRecord } from '../automation.types.js';
import { INVOCATION_COLUMNS, invocationFromRow } from './automation-rows.js';

const FROM = 'automation_invocations v LEFT JOIN inputs i ON i.id = v.input_id';

/** The invocations of an automation, read owner-scoped: another owner's are not found. */
@Injectable()
export class InvocationsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async get(ownerId: string, automationId: string, id: string): Promise<InvocationRecord> {
    const rows =
      isUuid(id) && isUuid(automationId)
        ? ((await this.dataSource.query(prepared(`SELECT ${INVOCATION_COLUMNS} FROM ${FROM} WHERE v.id = $1 AND v.automation_id = $2 AND v.owner_id = $3`), [id, automationId, ownerId])) as Record<
            string,
            unknown
          >[])
        : [];
    if (!rows[0]) throw DomainError.notFound(`Invocation ${id}`);
    return invocationFromRow(rows[0]);
  }

  /** One page by (created_at, id); the caller has checked the automation is the owner's. */
  async list(ownerId: string, automationId: string, page: PageQuery): Promise<Page<InvocationRecord>> {
    const values: unknown[] = [page.limit + 1, automationId, ownerId];
    let where = 'v.automation_id = $2 AND v.owner_id = $3';
    if (page.after !== undefined) {
      const anchor = isUuid(page.after)
        ? ((await this.dataSource.query(prepared('SELECT 1 FROM automation_invocations WHERE id = $1 AND automation_id = $2 AND owner_id = $3'), [page.after, automationId, ownerId])) as unknown[])
        : [];
      if (anchor.length === 0) throw new DomainError('invalid_cursor', 'The `after` cursor is not an invocation of this automation');
      values.push(page.after);
      where += ` AND (v.created_at, v.id) ${page.order === 'desc' ? '<' : '>'} (SELECT created_at, id FROM automation_invocations WHERE id = $${values.length})`;
    }
    const direction = page.order === 'desc' ? 'DESC' : 'ASC';
    const rows = (await this.dataSource.query(`SELECT ${INVOCATION_COLUMNS} FROM ${FROM} WHERE ${where} ORDER BY v.created_at ${direction}, v.id ${direction} LIMIT $1`, values)) as Record<string, unknown>[];
    return toPage(rows.map(invocationFromRow), page.limit);
  }
}
