// Automations: agents started by a clock (periodic cron schedules with a time zone, or once at a
// time), each scheduled time fired exactly once, and a record of what each invocation did.
export * from './automation.types.js';
export { AUTOMATION_MACHINE } from './automation-states.js';
export { AUTOMATION_COLUMNS, automationFromRow, INVOCATION_COLUMNS, invocationFromRow } from './tables/automation-rows.js';
export { type CronSchedule, latestTimes, MAX_EXPRESSION_LENGTH, nextTime, nextTimes, parseSchedule, type ScheduleProblem, timesBetween } from './schedule/cron-schedule.js';
export { type DueInput, type DuePlan, planDue } from './schedule/due-plan.js';
export { AutomationsModule } from './automations.module.js';
export { AutomationFirer, type FireOutcome, type ScheduledOccurrence } from './firing/automation-firer.js';
export { AutomationTimers, timerJobId } from './timers/automation-timers.js';
export { AutomationScheduler, type RunDueResult } from './timers/automation-scheduler.js';
export { AutomationSweep } from './timers/automation-sweep.js';
export { type AfterMissed, DueStore } from './timers/due-store.js';
export { AutomationsRepository, type AutomationPatch, type NewAutomation } from './tables/automations.repository.js';
export { InvocationsRepository } from './tables/invocations.repository.js';
export * from './dto/automation-params.dto.js';
export * from './dto/automation-view.dto.js';
export { snapshotOfView, targetView, toAutomationDto, toAutomationSnapshot, toInvocationDto } from './views/automation-view.js';
export * from './use-cases/index.js';
