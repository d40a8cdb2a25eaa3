import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ItemEntity, RunEntity, TurnEntity } from './entities.js';
import { ItemsRepository } from './items.repository.js';
import { ModelRequestsRepository } from './model-requests.repository.js';
import { RunsRepository } from './runs.repository.js';
import { StepsRepository } from './steps.repository.js';
import { TurnsRepository } from './turns.repository.js';

const REPOSITORIES = [TurnsRepository, RunsRepository, StepsRepository, ItemsRepository, ModelRequestsRepository];

/** One repository per table: turns, runs, run_steps, items, model_requests. */
@Module({
  imports: [TypeOrmModule.forFeature([TurnEntity, RunEntity, ItemEntity])],
  providers: REPOSITORIES,
  exports: REPOSITORIES,
})
export class TurnsModule {}
