import { defineMachine } from '#libs/database';
import { AUTOMATION_STATUSES } from './automation.types.js';

/**
 * An automation is created `active` (with its next time); a caller pauses and resumes it, the
 * service pauses it when its target is gone (with a pause reason), and a once automation whose
 * time fired is `completed` for good.
 */
export const AUTOMATION_MACHINE = defineMachine({
  table: 'automations',
  column: 'status',
  states: AUTOMATION_STATUSES,
  initial: ['active'],
  terminal: ['completed'],
  edges: {
    create: { from: [null], to: ['active'] },
    pause: { from: ['active'], to: ['paused'], by: 'PauseAutomation.execute' },
    /**
     * The service pauses it: the target session or agent is gone, or the owner is unavailable (with a
     * pause reason; a run now of a caller-paused one that finds its target gone gives it the reason).
     */
    targetGone: { from: ['active', 'paused'], to: ['paused'], by: 'InvocationStore.pause' },
    resume: { from: ['paused'], to: ['active'], by: 'ResumeAutomation.execute' },
    /** A once automation's time fired. */
    complete: { from: ['active'], to: ['completed'], by: 'InvocationStore.advance' },
    /** A once automation's only time was missed (recorded skipped, not fired): it is over all the same. */
    missedOnce: { from: ['active'], to: ['completed'], by: 'DueStore.recordMissed' },
  },
});
