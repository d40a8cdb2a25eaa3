import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { IdempotencyService, type IdempotentResponse } from '#libs/engine';
import type { AutomationDeletedDto, AutomationDto } from '../dto/automation-view.dto.js';
import { AutomationFirer } from '../firing/automation-firer.js';
import { nextTime } from '../schedule/cron-schedule.js';
import { AutomationsRepository } from '../tables/automations.repository.js';
import { AutomationTimers } from '../timers/automation-timers.js';
import { toAutomationDto } from '../views/automation-view.js';

/** `POST /automations/{id}/pause`: no time fires until resumed; a paused one answers as it is. */
@Injectable()
export class PauseAutomation {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly automations: AutomationsRepository,
  ) {}

  async execute(principal: Principal, id: string): Promise<AutomationDto> {
    const paused = await this.dataSource.transaction(async (manager) => {
      const automation = await this.automations.get(principal.userId, id, manager);
      if (automation.status === 'paused') return automation;
      if (automation.status === 'completed') throw new DomainError('state_conflict', `Automation ${id} has completed: its one time fired`);
      return this.automations.setStatus(manager, automation.id, 'paused', null);
    });
    return toAutomationDto(paused);
  }
}

/**
 * `POST /automations/{id}/resume`: active again from the next time after the database's now
 * (times passed while paused are not fired). A once automation whose time passed, or that
 * completed, is 409: set a future `run_at` first (on a completed one, that update alone makes it
 * active again). An active one answers as it is.
 */
@Injectable()
export class ResumeAutomation {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly automations: AutomationsRepository,
    private readonly timers: AutomationTimers,
  ) {}

  async execute(principal: Principal, id: string): Promise<AutomationDto> {
    const { automation, armed } = await this.dataSource.transaction(async (manager) => {
      const current = await this.automations.get(principal.userId, id, manager);
      if (current.status === 'active') return { automation: current, armed: false };
      if (current.status === 'completed') throw new DomainError('state_conflict', `Automation ${id} has completed: its one time fired; set a future run_at (POST /automations/${id}) to make it active again at that time`);
      const now = await this.automations.now(manager);
      const next =
        current.type === 'periodic' ? nextTime({ expression: current.expression!, timezone: current.timezone! }, now) : current.runAt! > now ? current.runAt : null;
      if (!next) throw new DomainError('state_conflict', current.type === 'once' ? `Automation ${id}'s run_at has passed: set a future run_at, then resume` : `Automation ${id}'s schedule fires no more`);
      return { automation: await this.automations.setStatus(manager, current.id, 'active', next), armed: true };
    });
    if (armed && automation.nextRunAt) await this.timers.arm(automation.id, automation.nextRunAt);
    return toAutomationDto(automation);
  }
}

/** `DELETE /automations/{id}`: the automation and its invocations; the sessions it fed stay. */
@Injectable()
export class DeleteAutomation {
  constructor(private readonly automations: AutomationsRepository) {}

  async execute(principal: Principal, id: string): Promise<AutomationDeletedDto> {
    await this.automations.delete(principal.userId, id);
    return { id, object: 'agent.automation.deleted', deleted: true };
  }
}

/**
 * `POST /automations/{id}/invocations` (Idempotency-Key required): run now, through the one firing
 * path of scheduled times; the same key replays the same invocation and fires nothing more.
 */
@Injectable()
export class RunAutomationNow {
  constructor(private readonly firer: AutomationFirer) {}

  execute(principal: Principal, id: string, rawKey: string | undefined): Promise<IdempotentResponse> {
    // The firer answers another owner's automation 404 before any receipt is looked up under the key.
    return this.firer.fireManual(principal, id, IdempotencyService.requireKey(rawKey));
  }
}
