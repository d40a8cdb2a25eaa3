import pg from 'pg';
import { env } from './env.js';

/** Read-only checks of durable facts straight from Postgres. */
export async function query<T = any>(sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: env.databaseUrl });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows as T[];
  } finally {
    await client.end();
  }
}
