import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource, EntityManager } from 'typeorm';
import { prepared } from '#libs/database';
import type { ModelPrice } from './usage.types.js';

/** A price as stored, with when it was last set. */
export interface StoredModelPrice extends ModelPrice {
  updated_at: Date;
}

const COLUMNS = 'model, input_per_mtok_usd, output_per_mtok_usd, cached_input_per_mtok_usd, reasoning_per_mtok_usd, updated_at';

function fromRow(row: Record<string, unknown>): StoredModelPrice {
  const optional = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));
  return {
    model: String(row.model),
    input_per_mtok_usd: Number(row.input_per_mtok_usd),
    output_per_mtok_usd: Number(row.output_per_mtok_usd),
    cached_input_per_mtok_usd: optional(row.cached_input_per_mtok_usd),
    reasoning_per_mtok_usd: optional(row.reasoning_per_mtok_usd),
    updated_at: row.updated_at as Date,
  };
}

/**
 * The `model_prices` table: a price per model (`provider:model`, as runs name them), in USD per
 * million tokens. The ledger reads it inside each call's insert (the price in force then, copied
 * onto the row), so setting a price changes only the calls made after it commits.
 */
@Injectable()
export class ModelPricesRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async list(): Promise<StoredModelPrice[]> {
    const rows = (await this.dataSource.query(prepared(`SELECT ${COLUMNS} FROM model_prices ORDER BY model`))) as Record<string, unknown>[];
    return rows.map(fromRow);
  }

  async get(model: string): Promise<StoredModelPrice | null> {
    const rows = (await this.dataSource.query(prepared(`SELECT ${COLUMNS} FROM model_prices WHERE model = $1`), [model])) as Record<string, unknown>[];
    return rows[0] ? fromRow(rows[0]) : null;
  }

  /** Sets a model's price (created or replaced whole: an absent cached or reasoning price falls back again). */
  async put(manager: EntityManager, price: ModelPrice): Promise<{ price: StoredModelPrice; created: boolean }> {
    const rows = (await manager.query(
      prepared(`INSERT INTO model_prices AS p (model, input_per_mtok_usd, output_per_mtok_usd, cached_input_per_mtok_usd, reasoning_per_mtok_usd, updated_at)
       VALUES ($1, $2, $3, $4, $5, now())
       ON CONFLICT (model) DO UPDATE SET input_per_mtok_usd = excluded.input_per_mtok_usd, output_per_mtok_usd = excluded.output_per_mtok_usd,
         cached_input_per_mtok_usd = excluded.cached_input_per_mtok_usd, reasoning_per_mtok_usd = excluded.reasoning_per_mtok_usd, updated_at = now()
       RETURNING ${COLUMNS}, (xmax = 0) AS created`),
      [price.model, price.input_per_mtok_usd, price.output_per_mtok_usd, price.cached_input_per_mtok_usd, price.reasoning_per_mtok_usd],
    )) as (Record<string, unknown> & { created: boolean })[];
    return { price: fromRow(rows[0]!), created: rows[0]!.created };
  }

  /** Removes a model's price: its later calls have no cost. False when it had none. */
  async delete(manager: EntityManager, model: string): Promise<boolean> {
    const [rows] = (await manager.query(prepared(`DELETE FROM model_prices WHERE model = $1 RETURNING model`), [model])) as [unknown[], number];
    return rows.length > 0;
  }

  /** Sets every price of a list (MODEL_PRICES_FILE at start-up), in one transaction; returns how many were new. */
  async seed(prices: ModelPrice[]): Promise<number> {
    return this.dataSource.transaction(async (manager) => {
      let created = 0;
      for (const price of prices) if ((await this.put(manager, price)).created) created += 1;
      return created;
    });
  }
}
