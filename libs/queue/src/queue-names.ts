/** Every queue and job the apps exchange, with its payload type; processors must handle each name. */
export const QUEUES = {
  sessions: 'session-dispatch',
  maintenance: 'maintenance',
  files: 'files',
  webhooks: 'webhooks',
  automations: 'automations',
} as const;

export const JOBS = {
  dispatchSession: 'session.dispatch',
  recoverySweep: 'recovery.sweep',
  filesSweep: 'files.sweep',
  prepareAttachments: 'attachments.prepare',
  deliverWebhooks: 'webhooks.deliver',
  webhooksSweep: 'webhooks.sweep',
  fireAutomation: 'automation.fire',
  automationsSweep: 'automations.sweep',
  retentionSweep: 'retention.sweep',
} as const;

export type JobName = (typeof JOBS)[keyof typeof JOBS];

export interface JobPayloads {
  /** `takeover`: a run of the session waits for a worker to continue it. */
  /** `readyInputId`: the nudge of an input whose attachments became ready (the driver logs what it did for it). */
  'session.dispatch': { sessionId: string; takeover?: boolean; readyInputId?: string };
  'recovery.sweep': Record<string, never>;
  /** Expired drafts, abandoned uploads and unfinished deletions (libs/files FilesSweep). */
  'files.sweep': Record<string, never>;
  /** Copy an input's attached files into its session's workdir, then mark the input ready. */
  'attachments.prepare': { inputId: string };
  /** Attempt the due head of one chain of webhook deliveries (an endpoint and a session), then the next ones while they succeed. */
  'webhooks.deliver': { endpointId: string; chain: string };
  /** Due deliveries no job announces (Redis lost them, a worker died mid-attempt), the backlog gauge, and the retention. */
  'webhooks.sweep': Record<string, never>;
  /** An automation's timer: its scheduled time `at` (Unix ms) has come. Only a hint: Postgres decides whether it fires. */
  'automation.fire': { automationId: string; at: number };
  /** Automations whose time passed with no timer (Redis lost it, no worker was up), and the gauges. */
  'automations.sweep': Record<string, never>;
  /** The retention tasks (libs/retention RetentionSweep): purges of deleted sessions and aged rows, session TTLs. */
  'retention.sweep': Record<string, never>;
}

/** Which jobs travel on which queue; a worker refuses to start when one of them has no handler. */
export const QUEUE_JOBS = {
  [QUEUES.sessions]: [JOBS.dispatchSession],
  [QUEUES.maintenance]: [JOBS.recoverySweep, JOBS.filesSweep, JOBS.webhooksSweep, JOBS.automationsSweep, JOBS.retentionSweep],
  [QUEUES.files]: [JOBS.prepareAttachments],
  [QUEUES.webhooks]: [JOBS.deliverWebhooks],
  [QUEUES.automations]: [JOBS.fireAutomation],
} as const satisfies Record<string, readonly JobName[]>;
