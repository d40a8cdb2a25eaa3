import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ItemEntity, RunEntity, TurnEntity } from './entities.js';
import { TurnsService } from './turns.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([TurnEntity, RunEntity, ItemEntity])],
  providers: [TurnsService],
  exports: [TurnsService],
})
export class TurnsModule {}
