import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencyService } from './idempotency.service.js';
import { InputEntity } from './input.entity.js';
import { InputsRepository } from './inputs.repository.js';
import { IdempotencyReceiptEntity } from './receipt.entity.js';

@Module({
  imports: [TypeOrmModule.forFeature([InputEntity, IdempotencyReceiptEntity])],
  providers: [InputsRepository, IdempotencyService],
  exports: [InputsRepository, IdempotencyService],
})
export class InputsModule {}
