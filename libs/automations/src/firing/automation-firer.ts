import { Injectable } from '@nestjs/common';
import type { Principal } from '#libs/auth';
import type { IdempotentResponse } from '#libs/engine';
import type { InvocationRecord } from '../automation.types.js';

/** One scheduled time to fire, as the scheduler planned it. */
export interface ScheduledOccurrence {
  automationId: string;
  scheduledAt: Date;
  reason: 'scheduled' | 'catch_up';
  /** What next_run_at becomes (null: a once automation completes). */
  next: Date | null;
}

export type FireOutcome = { kind: 'stale' } | { kind: 'recorded'; invocation: InvocationRecord };

/**
 * STUB (contract, /work/notes/automations-contract.md "Firing"): the firing helper implements it.
 */
@Injectable()
export class AutomationFirer {
  fireScheduled(occurrence: ScheduledOccurrence): Promise<FireOutcome> {
    void occurrence;
    return Promise.reject(new Error('not implemented'));
  }

  fireManual(principal: Principal, automationId: string, key: string): Promise<IdempotentResponse> {
    void principal;
    void automationId;
    void key;
    return Promise.reject(new Error('not implemented'));
  }
}
