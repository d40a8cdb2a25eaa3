import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { newId } from '#libs/database';
import { IdempotencyService, type IdempotentResponse } from '#libs/engine';
import { budgetViewerOf, IdempotentWrite } from '#libs/protocol';
import type { AutomationRecord } from '../automation.types.js';
import type { CreateAutomationDto } from '../dto/automation-params.dto.js';
import { nextTime } from '../schedule/cron-schedule.js';
import { AutomationsRepository } from '../tables/automations.repository.js';
import { AutomationTimers } from '../timers/automation-timers.js';
import { toAutomationDto } from '../views/automation-view.js';
import { AutomationTargetChecks, checkMetadata, checkSchedule, fieldError, firingPrincipalOf } from './automation-checks.js';

const CREATE_SCOPE = 'automations.create';

/**
 * `POST /automations` (Idempotency-Key required): the automation, active, with its first time.
 * The key's receipt commits with the row, so a retry answers the same automation byte for byte and
 * creates no second one. The timer is armed after commit (the sweep covers a lost one).
 */
@Injectable()
export class CreateAutomation {
  constructor(
    private readonly automations: AutomationsRepository,
    private readonly targets: AutomationTargetChecks,
    private readonly idempotentWrite: IdempotentWrite,
    private readonly timers: AutomationTimers,
    private readonly config: AppConfig,
  ) {}

  async execute(principal: Principal, dto: CreateAutomationDto, rawKey: string | undefined): Promise<IdempotentResponse> {
    const key = IdempotencyService.requireKey(rawKey);
    const schedule = this.scheduleOf(dto);
    const metadata = dto.metadata === undefined ? {} : checkMetadata(dto.metadata, 'metadata');
    const target = await this.targets.check(principal, dto.target);
    const requestHash = IdempotencyService.hashIntent({ operation: CREATE_SCOPE, body: dto });
    let created: AutomationRecord | null = null;
    const result = await this.idempotentWrite.execute({ ownerId: principal.userId, scope: CREATE_SCOPE, key, requestHash }, async (manager) => {
      // "From now" is the database's clock, the one the timers and the sweep compare with.
      const now = await this.automations.now(manager);
      let nextRunAt: Date | null;
      if (schedule) {
        nextRunAt = nextTime(schedule, now);
        if (!nextRunAt) throw fieldError('expression', 'never fires after now');
      } else {
        nextRunAt = new Date(dto.run_at! * 1000);
        if (nextRunAt <= now) throw fieldError('run_at', 'must be in the future');
      }
      created = await this.automations.create(
        manager,
        {
          id: newId(),
          ownerId: principal.userId,
          principal: firingPrincipalOf(principal),
          name: dto.name,
          type: dto.type,
          expression: schedule?.expression ?? null,
          timezone: schedule?.timezone ?? null,
          runAt: schedule ? null : nextRunAt,
          ...target,
          metadata,
          overlap: dto.yuxi?.overlap ?? 'skip',
          catchUp: dto.yuxi?.catch_up ?? 'latest',
          status: 'active',
          pauseReason: null,
          nextRunAt,
        },
        { accountId: budgetViewerOf(principal).accountId, limit: this.config.automationMaxPerOwner },
      );
      return { status: 201, body: toAutomationDto(created), sessionId: null, receipt: null };
    });
    const armed = created as AutomationRecord | null;
    if (!result.replayed && armed?.nextRunAt) await this.timers.arm(armed.id, armed.nextRunAt);
    return result;
  }

  private scheduleOf(dto: CreateAutomationDto) {
    if (dto.type === 'periodic') {
      if (dto.run_at !== undefined) throw fieldError('run_at', 'is a field of a once automation');
      if (dto.expression === undefined) throw fieldError('expression', 'is required for a periodic automation');
      if (dto.timezone === undefined) throw fieldError('timezone', 'is required for a periodic automation');
      return checkSchedule(dto.expression, dto.timezone, this.config.automationMinIntervalS);
    }
    for (const field of ['expression', 'timezone'] as const) if (dto[field] !== undefined) throw fieldError(field, 'is a field of a periodic automation');
    if (dto.run_at === undefined) throw fieldError('run_at', 'is required for a once automation');
    return null;
  }
}
