import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { AppConfig } from '#libs/config';
import { type FrozenInputConfig } from '../tables/input.entity.js';
import { InputsRepository } from '../tables/inputs.repository.js';
import { type TurnEntity } from '../tables/turn.entities.js';
import { ItemsRepository } from '../tables/items.repository.js';
import { RunsRepository } from '../tables/runs.repository.js';
import { StepsRepository } from '../tables/steps.repository.js';
import type { HeldTurn } from './held-turn.js';

/** Leases the active turn's run that nobody holds (after a crash or a release): a claim's other way to a run. */
@Injectable()
export class TurnTakeovers {
  constructor(
    private readonly inputs: InputsRepository,
    private readonly runs: RunsRepository,
    private readonly steps: StepsRepository,
    private readonly items: ItemsRepository,
    private readonly config: AppConfig,
  ) {}

  /** Leases the active turn's unleased run, if it has one (`budgeted`: the claim's read of the session). */
  async takeOver(manager: EntityManager, turn: TurnEntity, owner: string, trustedTools: string[], budgeted: boolean): Promise<HeldTurn | null> {
    const run = await this.runs.takeOver(manager, turn.sessionId, owner, this.config.runLeaseMs);
    if (!run) return null;
    return {
      turn,
      run,
      lease: { runId: run.id, owner, epoch: run.epoch },
      config: run.config as FrozenInputConfig,
      lastInputSeq: await this.inputs.lastConsumedSeq(manager, turn.id),
      outputIndex: await this.items.countItems(manager, turn.id),
      steps: await this.steps.stepsSinceLastInput(manager, turn.id),
      trustedTools,
      fresh: false,
      filelessMessageIds: [],
      budgeted,
      batch: { sessionId: turn.sessionId, rows: [] },
    };
  }
}
