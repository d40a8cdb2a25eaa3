import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Users by kind: administrators page through the product users, the apps' end users or
 * both, newest first. One index serves each kind's pages (kind, then the page order); the list of
 * every kind walks the same index per kind.
 */
export class UsersByKind1765848000000 implements MigrationInterface {
  name = 'UsersByKind1765848000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX users_kind_page_idx ON users (kind, created_at, id)`);
    await q.query(`CREATE INDEX users_page_idx ON users (created_at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX users_page_idx`);
    await q.query(`DROP INDEX users_kind_page_idx`);
  }
}
