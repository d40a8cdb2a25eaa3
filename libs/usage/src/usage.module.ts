import { Module } from '@nestjs/common';
import { ModelPricesRepository } from './model-prices.repository.js';
import { UsageLedgerRepository } from './usage-ledger.repository.js';

/**
 * The usage ledger's reads and the model prices (the ledger's writes are SQL fragments of each
 * step's statement). ModelPricesFile is provided by the api alone (it seeds prices at start).
 */
@Module({ providers: [ModelPricesRepository, UsageLedgerRepository], exports: [ModelPricesRepository, UsageLedgerRepository] })
export class UsageModule {}
