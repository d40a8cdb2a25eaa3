/** Every queue and job the apps exchange, with its payload type; processors must handle each name. */
export const QUEUES = {
  sessions: 'session-dispatch',
  maintenance: 'maintenance',
  files: 'files',
} as const;

export const JOBS = {
  dispatchSession: 'session.dispatch',
  recoverySweep: 'recovery.sweep',
  filesSweep: 'files.sweep',
  prepareAttachments: 'attachments.prepare',
} as const;

export type JobName = (typeof JOBS)[keyof typeof JOBS];

export interface JobPayloads {
  /** `takeover`: a run of the session waits for a worker to continue it. */
  'session.dispatch': { sessionId: string; takeover?: boolean };
  'recovery.sweep': Record<string, never>;
  /** Expired drafts, abandoned uploads and unfinished deletions (libs/files FilesSweep). */
  'files.sweep': Record<string, never>;
  /** Copy an input's attached files into its session's workdir, then mark the input ready. */
  'attachments.prepare': { inputId: string };
}

/** Which jobs travel on which queue; a worker refuses to start when one of them has no handler. */
export const QUEUE_JOBS = {
  [QUEUES.sessions]: [JOBS.dispatchSession],
  [QUEUES.maintenance]: [JOBS.recoverySweep, JOBS.filesSweep],
  [QUEUES.files]: [JOBS.prepareAttachments],
} as const satisfies Record<string, readonly JobName[]>;
