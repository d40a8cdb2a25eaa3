import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { listEnvelope, type PageQuery, unixSeconds } from '#libs/database';
import type { AutomationDto, AutomationListDto, InvocationDto, InvocationListDto, SchedulePreviewDto } from '../dto/automation-view.dto.js';
import { nextTimes } from '../schedule/cron-schedule.js';
import { AutomationsRepository } from '../tables/automations.repository.js';
import { InvocationsRepository } from '../tables/invocations.repository.js';
import { toAutomationDto, toInvocationDto } from '../views/automation-view.js';
import { checkSchedule } from './automation-checks.js';

/** `GET /automations/{id}`: the caller's automation (another owner's is 404). */
@Injectable()
export class GetAutomation {
  constructor(private readonly automations: AutomationsRepository) {}

  async execute(principal: Principal, id: string): Promise<AutomationDto> {
    return toAutomationDto(await this.automations.get(principal.userId, id));
  }
}

/** `GET /automations`: the caller's automations, one page; `sessionId` narrows to those targeting that session. */
@Injectable()
export class ListAutomations {
  constructor(private readonly automations: AutomationsRepository) {}

  async execute(principal: Principal, page: PageQuery, sessionId?: string): Promise<AutomationListDto> {
    const { rows, hasMore } = await this.automations.list(principal.userId, page, sessionId);
    return listEnvelope(rows.map(toAutomationDto), hasMore);
  }
}

/** `GET /automations/{id}/invocations`: what each scheduled time and run did, one page (the automation the caller's, else 404). */
@Injectable()
export class ListInvocations {
  constructor(
    private readonly automations: AutomationsRepository,
    private readonly invocations: InvocationsRepository,
  ) {}

  async execute(principal: Principal, automationId: string, page: PageQuery): Promise<InvocationListDto> {
    await this.automations.get(principal.userId, automationId);
    const { rows, hasMore } = await this.invocations.list(principal.userId, automationId, page);
    return listEnvelope(rows.map(toInvocationDto), hasMore);
  }
}

/** `GET /automations/{id}/invocations/{invocation_id}`. */
@Injectable()
export class GetInvocation {
  constructor(private readonly invocations: InvocationsRepository) {}

  async execute(principal: Principal, automationId: string, id: string): Promise<InvocationDto> {
    return toInvocationDto(await this.invocations.get(principal.userId, automationId, id));
  }
}

/** `GET /automation-schedules/preview`: the next fire times of a schedule after the database's now (what a form shows before saving). */
@Injectable()
export class PreviewSchedule {
  constructor(
    private readonly automations: AutomationsRepository,
    private readonly config: AppConfig,
  ) {}

  async execute(expression: string, timezone: string, count: number): Promise<SchedulePreviewDto> {
    const schedule = checkSchedule(expression, timezone, this.config.automationMinIntervalS);
    const times = nextTimes(schedule, await this.automations.now(), count);
    return { object: 'agent.automation.schedule_preview', expression, timezone, next_run_times: times.map((time) => unixSeconds(time)) };
  }
}
