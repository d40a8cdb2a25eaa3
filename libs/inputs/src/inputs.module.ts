import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencyService } from './idempotency.service.js';
import { InputEntity } from './input.entity.js';
import { InputsService } from './inputs.service.js';
import { IdempotencyReceiptEntity } from './receipt.entity.js';

@Module({
  imports: [TypeOrmModule.forFeature([InputEntity, IdempotencyReceiptEntity])],
  providers: [InputsService, IdempotencyService],
  exports: [InputsService, IdempotencyService],
})
export class InputsModule {}
