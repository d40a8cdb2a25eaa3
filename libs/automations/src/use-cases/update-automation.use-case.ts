import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { Principal } from '#libs/auth';
import { AppConfig } from '#libs/config';
import type { AutomationRecord } from '../automation.types.js';
import type { UpdateAutomationDto } from '../dto/automation-params.dto.js';
import type { AutomationDto } from '../dto/automation-view.dto.js';
import { nextTime } from '../schedule/cron-schedule.js';
import { type AutomationPatch, AutomationsRepository } from '../tables/automations.repository.js';
import { AutomationTimers } from '../timers/automation-timers.js';
import { toAutomationDto } from '../views/automation-view.js';
import { AutomationTargetChecks, checkMetadata, checkSchedule, fieldError } from './automation-checks.js';

/**
 * `POST /automations/{id}`: changes the fields given (`target` and `metadata` replaced whole, the
 * target's type kept). A schedule change counts the next time from the database's now while the
 * automation is active (a paused one gets it when resumed) and arms its timer after commit. A
 * completed once automation given a future `run_at` is active again, at that time.
 */
@Injectable()
export class UpdateAutomation {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly automations: AutomationsRepository,
    private readonly targets: AutomationTargetChecks,
    private readonly timers: AutomationTimers,
    private readonly config: AppConfig,
  ) {}

  async execute(principal: Principal, id: string, dto: UpdateAutomationDto): Promise<AutomationDto> {
    const current = await this.automations.get(principal.userId, id);
    const patch: AutomationPatch = { name: dto.name, overlap: dto.yuxi?.overlap, catchUp: dto.yuxi?.catch_up };
    if (dto.metadata !== undefined) patch.metadata = checkMetadata(dto.metadata, 'metadata');
    if (dto.target !== undefined) {
      if (dto.target.type !== current.target.type) throw fieldError('target.type', `must stay ${current.target.type} (an update replaces the target, its type kept)`);
      patch.target = await this.targets.check(principal, dto.target);
    }
    const schedule = this.scheduleChange(current, dto);
    const updated = await this.dataSource.transaction(async (manager) => {
      const locked = await this.automations.get(principal.userId, id, manager);
      if (schedule) {
        const now = await this.automations.now(manager);
        let nextRunAt: Date | null = null;
        if (schedule.runAt) {
          if (schedule.runAt <= now) throw fieldError('run_at', 'must be in the future');
          // A completed once automation runs again at its new time (a paused one waits for its resume).
          if (locked.status === 'completed') patch.status = 'active';
          if (locked.status !== 'paused') nextRunAt = schedule.runAt;
        } else if (locked.status === 'active') {
          nextRunAt = nextTime(schedule.cron!, now);
          if (!nextRunAt) throw fieldError('expression', 'never fires after now');
        }
        patch.schedule = { expression: schedule.cron?.expression ?? null, timezone: schedule.cron?.timezone ?? null, runAt: schedule.runAt, nextRunAt };
      }
      return this.automations.update(manager, locked.id, patch);
    });
    if (patch.schedule?.nextRunAt) await this.timers.arm(updated.id, patch.schedule.nextRunAt);
    return toAutomationDto(updated);
  }

  /** The new schedule when the update changes it (null: unchanged); fields of the other type are 422. */
  private scheduleChange(current: AutomationRecord, dto: UpdateAutomationDto) {
    if (current.type === 'periodic') {
      if (dto.run_at !== undefined) throw fieldError('run_at', 'is a field of a once automation');
      if (dto.expression === undefined && dto.timezone === undefined) return null;
      return { cron: checkSchedule(dto.expression ?? current.expression!, dto.timezone ?? current.timezone!, this.config.automationMinIntervalS), runAt: null };
    }
    for (const field of ['expression', 'timezone'] as const) if (dto[field] !== undefined) throw fieldError(field, 'is a field of a periodic automation');
    return dto.run_at === undefined ? null : { cron: null, runAt: new Date(dto.run_at * 1000) };
  }
}
