import { Injectable } from '@nestjs/common';

/**
 * STUB (contract, /work/notes/automations-contract.md "Timers and the sweep"): the timers helper
 * implements it: a BullMQ delayed job per scheduled time, never throwing.
 */
@Injectable()
export class AutomationTimers {
  arm(automationId: string, at: Date): Promise<void> {
    void automationId;
    void at;
    return Promise.resolve();
  }
}
