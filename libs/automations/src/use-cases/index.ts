import { AutomationTargetChecks } from './automation-checks.js';
import { DeleteAutomation, PauseAutomation, ResumeAutomation, RunAutomationNow } from './automation-controls.use-case.js';
import { GetAutomation, GetInvocation, ListAutomations, ListInvocations, PreviewSchedule } from './automation-reads.use-case.js';
import { CreateAutomation } from './create-automation.use-case.js';
import { UpdateAutomation } from './update-automation.use-case.js';

export { AutomationTargetChecks, CreateAutomation, DeleteAutomation, GetAutomation, GetInvocation, ListAutomations, ListInvocations, PauseAutomation, PreviewSchedule, ResumeAutomation, RunAutomationNow, UpdateAutomation };

/** The api's use cases of the resource (one class per operation). */
export const AUTOMATION_USE_CASES = [
  CreateAutomation,
  GetAutomation,
  ListAutomations,
  UpdateAutomation,
  DeleteAutomation,
  PauseAutomation,
  ResumeAutomation,
  RunAutomationNow,
  ListInvocations,
  GetInvocation,
  PreviewSchedule,
];
