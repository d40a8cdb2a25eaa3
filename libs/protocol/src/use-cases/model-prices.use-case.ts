import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { AuditLog } from '#libs/audit';
import { assertAdmin, type Principal } from '#libs/auth';
import { unixSeconds } from '#libs/database';
import { DomainError } from '#libs/errors';
import { type ModelPriceDto, type ModelPriceListDto, ModelPricesRepository, modelKeyProblems, parseModelPrice, type StoredModelPrice } from '#libs/usage';

/** The audit trail's target id column holds 128 characters; the full model is in the entry's details. */
const AUDIT_TARGET_MAX = 128;

/**
 * The deployment's model prices (administrators): read, set and removed. A price set applies to
 * the calls made after it commits (each ledger row keeps the price it was made at); every change is
 * audited in its own transaction.
 */
@Injectable()
export class ModelPrices {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly prices: ModelPricesRepository,
    private readonly audit: AuditLog,
  ) {}

  async list(principal: Principal): Promise<ModelPriceListDto> {
    assertAdmin(principal);
    return { object: 'list', data: (await this.prices.list()).map(toDto) };
  }

  /** Creates or replaces a model's price (validated: 422 naming each bad field). */
  async put(principal: Principal, model: string, body: unknown): Promise<{ price: ModelPriceDto; created: boolean }> {
    assertAdmin(principal);
    const parsed = parseModelPrice(model, body);
    if ('problems' in parsed) throw DomainError.validation(parsed.problems);
    return this.dataSource.transaction(async (manager) => {
      const { price, created } = await this.prices.put(manager, parsed.price);
      await this.audit.record(manager, { actorId: principal.actorId, keyId: principal.keyId, action: 'model_price.set', targetType: 'model_price', targetId: model.slice(0, AUDIT_TARGET_MAX), details: { ...parsed.price, created } });
      return { price: toDto(price), created };
    });
  }

  /** Removes a model's price: its later calls have no cost (404 when it had none). */
  async delete(principal: Principal, model: string): Promise<void> {
    assertAdmin(principal);
    const problems = modelKeyProblems(model);
    if (problems.length > 0) throw DomainError.validation(problems);
    await this.dataSource.transaction(async (manager) => {
      if (!(await this.prices.delete(manager, model))) throw DomainError.notFound(`Price of model ${model}`);
      await this.audit.record(manager, { actorId: principal.actorId, keyId: principal.keyId, action: 'model_price.deleted', targetType: 'model_price', targetId: model.slice(0, AUDIT_TARGET_MAX), details: { model } });
    });
  }
}

function toDto(price: StoredModelPrice): ModelPriceDto {
  return {
    object: 'model_price',
    model: price.model,
    input_per_mtok_usd: price.input_per_mtok_usd,
    output_per_mtok_usd: price.output_per_mtok_usd,
    cached_input_per_mtok_usd: price.cached_input_per_mtok_usd,
    reasoning_per_mtok_usd: price.reasoning_per_mtok_usd,
    updated_at: unixSeconds(price.updated_at),
  };
}
