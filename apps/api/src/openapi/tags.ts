/** The areas of the document, in the order Swagger shows them. Controllers tag their operations with these names. */
export const TAGS = {
  agents: { name: 'agents', description: 'The saved agents a caller can start sessions with.' },
  sessions: { name: 'sessions', description: 'Create, list, read, update and archive sessions; their runtime state.' },
  projects: {
    name: 'projects',
    description: 'Projects: named groups of a caller\'s sessions that share one workdir (a file attached in one session is listed and read by the file tools of every session of the project).',
  },
  budgets: {
    name: 'budgets',
    description:
      'Budgets: limits on what a session (or its tree), project, app, end user, agent or account spends per period, checked before every model and tool call; a turn that reaches one waits at a `budget` waitpoint or fails.',
  },
  automations: {
    name: 'automations',
    description:
      'Automations: agents started by a clock (a 5- or 6-field cron expression in an IANA time zone, or once at a time), each scheduled time fired at most once, into a new session or an existing one; pause, resume, run now, and the invocations that say what each time did.',
  },
  events: {
    name: 'inputs-and-events',
    description: 'Submit inputs and control events (messages, steers, cancels, waitpoint answers, tool results), read the queue, inputs and receipts, and subscribe to the session event stream (SSE).',
  },
  turns: { name: 'turns-and-items', description: 'Turns, their runs (execution segments) and the items of the session history.' },
  webhooks: {
    name: 'webhooks',
    description:
      'Webhook endpoints of the caller (Standard Webhooks): signed POSTs when a session is created, a turn completes, fails, is cancelled or waits for an answer, a coordinator creates a member, or a context is compacted; retried on a schedule, in order per session, with a delivery log. The payloads are in `x-webhooks` and under `WebhookPayload`.',
  },
  files: { name: 'files', description: 'Files: upload drafts (and read or delete them before they are attached with `yuxi.attachment_file_ids`), a session\'s attachments and the bytes of its workdir files.' },
  productFiles: {
    name: 'product-files',
    description: 'The product\'s private file routes under /api/agent (manual OCR pre-parse of a draft, image thumbnails): for user tokens (JWT) only; API keys get 403 `user_token_required`.',
  },
  admin: {
    name: 'admin',
    description:
      'Agents, API keys, users and their roles, the audit trail (full-access callers; most for administrators only), and the operator API over every owner\'s sessions: `viewer`s read them, `operator`s also send control events, `admin`s do everything. A product user without a role reaches none of the cross-owner routes (403).',
  },
  usage: {
    name: 'usage',
    description: 'What sessions spent (tokens, model and tool calls, cost at the deployment\'s prices), summed from the usage ledger by day, agent, model, session, project, app or end user: the caller\'s own, and every owner\'s for operators.',
  },
  caller: { name: 'caller', description: 'Who the credential is: its user, access level, app and role.' },
  operations: { name: 'operations', description: 'Health and Prometheus metrics, without credentials.' },
} as const;
