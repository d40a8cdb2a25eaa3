import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { newId, prepared } from '#libs/database';
import type { Role } from './principal.js';

const CACHE_MAX = 50_000;

/**
 * The principals behind subjects: a JWT subject's product user, and each (product user, app,
 * external id) end user — created on first use, safely under concurrency (a unique index decides;
 * the loser reads the winner's row). The mapping never changes, so it is cached.
 */
@Injectable()
export class Principals {
  private readonly cache = new Map<string, string>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /**
   * The end user's id, created on first use. `beforeCreate` runs only when the end user does not
   * exist yet (the new-end-users rate limit goes there): it may throw, and then nothing is created.
   */
  async endUser(parentId: string, appId: string, externalId: string, beforeCreate: () => Promise<void> = async () => undefined): Promise<string> {
    const cacheKey = `${parentId}\u0000${appId}\u0000${externalId}`;
    const cached = this.cache.get(cacheKey);
    if (cached) return cached;
    let id = await this.findEndUser(parentId, appId, externalId);
    if (!id) {
      await beforeCreate();
      const rows = (await this.dataSource.query(
        prepared(`WITH ins AS (
           INSERT INTO users (id, name, kind, parent_id, app_id, external_id, created_at)
           VALUES ($1::uuid, 'end-user:' || $1::text, 'end_user', $2, $3, $4, now())
           ON CONFLICT (parent_id, app_id, external_id) WHERE kind = 'end_user' DO NOTHING RETURNING id
         )
         SELECT id FROM ins UNION ALL
         SELECT id FROM users WHERE kind = 'end_user' AND parent_id = $2 AND app_id = $3 AND external_id = $4
         LIMIT 1`),
        [newId(), parentId, appId, externalId],
      )) as { id: string }[];
      // Under READ COMMITTED a racing insert that committed after our snapshot is visible to a new statement.
      id = rows[0]?.id ?? (await this.findEndUser(parentId, appId, externalId));
    }
    if (!id) throw new Error('end user could not be resolved');
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(cacheKey, id);
    return id;
  }

  private async findEndUser(parentId: string, appId: string, externalId: string): Promise<string | undefined> {
    const rows = (await this.dataSource.query(prepared(`SELECT id FROM users WHERE kind = 'end_user' AND parent_id = $1 AND app_id = $2 AND external_id = $3`), [
      parentId,
      appId,
      externalId,
    ])) as { id: string }[];
    return rows[0]?.id;
  }

  /** The product user of a JWT subject, if one exists yet (looking creates nothing). */
  async findSubjectUser(subject: string): Promise<string | null> {
    const rows = (await this.dataSource.query(prepared(`SELECT id FROM users WHERE subject = $1`), [subject])) as { id: string }[];
    return rows[0]?.id ?? null;
  }

  /** The product user of a JWT subject, read on every request (a role change or a suspension applies to the next one). */
  async subjectUser(subject: string): Promise<{ id: string; role: Role | null; suspended: boolean }> {
    const rows = (await this.dataSource.query(
      prepared(`WITH ins AS (
         INSERT INTO users (id, name, kind, subject, created_at) VALUES ($1::uuid, 'jwt:' || $1::text, 'user', $2::text, now())
         ON CONFLICT (subject) DO NOTHING RETURNING id, role, suspended_at
       )
       SELECT id, role, suspended_at FROM ins UNION ALL SELECT id, role, suspended_at FROM users WHERE subject = $2 LIMIT 1`),
      [newId(), subject],
    )) as SubjectRow[];
    let row = rows[0];
    if (!row) {
      const again = (await this.dataSource.query(prepared(`SELECT id, role, suspended_at FROM users WHERE subject = $1`), [subject])) as SubjectRow[];
      row = again[0];
    }
    if (!row) throw new Error('user could not be resolved');
    return { id: row.id, role: row.role, suspended: row.suspended_at !== null };
  }
}

interface SubjectRow {
  id: string;
  role: Role | null;
  suspended_at: Date | null;
}
