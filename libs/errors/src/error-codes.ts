/**
 * The stable error codes of the public API. Clients branch on `code`, never on `message`;
 * this catalog is also what the OpenAPI document lists, so every code thrown anywhere must be here.
 */
export type ErrorType =
  | 'invalid_request'
  | 'authentication'
  | 'permission'
  | 'not_found'
  | 'invalid_state'
  | 'unavailable'
  | 'internal';

interface ErrorCodeSpec {
  status: number;
  type: ErrorType;
  retryable: boolean;
  description: string;
}

export const ERROR_CODES = {
  invalid_cursor: { status: 400, type: 'invalid_request', retryable: false, description: 'The `after` cursor does not belong to this list scope.' },
  unauthorized: { status: 401, type: 'authentication', retryable: false, description: 'Missing, malformed or unknown API key.' },
  user_suspended: {
    status: 401,
    type: 'authentication',
    retryable: false,
    description: 'The user behind this API key or user token is suspended by an administrator: every key and token of theirs is refused until they are reactivated.',
  },
  forbidden: { status: 403, type: 'permission', retryable: false, description: 'The API key lacks the permission for this operation.' },
  user_token_required: {
    status: 403,
    type: 'permission',
    retryable: false,
    description:
      'This route is for signed-in users with a user token (JWT): the product\'s private routes (`/api/agent/…`: manual OCR pre-parse, image thumbnails) and the exact model requests of a run (administrators); no API key may call it, whatever its access.',
  },
  not_found: { status: 404, type: 'not_found', retryable: false, description: 'The resource does not exist or is not visible to this caller.' },
  route_not_found: { status: 404, type: 'not_found', retryable: false, description: 'No endpoint matches this method and path.' },
  method_not_allowed: { status: 405, type: 'invalid_request', retryable: false, description: 'The path exists but not with this method; the Allow header lists the methods it takes.' },
  idempotency_conflict: { status: 409, type: 'invalid_state', retryable: false, description: 'The Idempotency-Key was already used with a different intent.' },
  state_conflict: { status: 409, type: 'invalid_state', retryable: false, description: 'The session or turn is in a state that does not allow this operation.' },
  turn_requires_action: {
    status: 409,
    type: 'invalid_state',
    retryable: false,
    description:
      'The active turn waits at a waitpoint (`details.turn_id`, `details.waitpoint_id`, `details.kind`). For an answer or an approval, ordinary messages in any `yuxi.mode` are refused until it is resumed; for a client tool result, only an explicit `follow_up` queues. Promotions are refused in both. Resume it (`yuxi.session.input.resume`, or `tool_result` for a client tool), or cancel it.',
  },
  turn_cancelling: {
    status: 409,
    type: 'invalid_state',
    retryable: false,
    description:
      'The active turn is being cancelled (`details.turn_id`): ordinary messages, in any `yuxi.mode`, and promotions are refused until it has settled as cancelled; then send again.',
  },
  waitpoint_stale: {
    status: 409,
    type: 'invalid_state',
    retryable: false,
    description: 'The waitpoint or tool call is not the one the turn waits for (stale, already answered, or of another turn).',
  },
  file_already_bound: {
    status: 409,
    type: 'invalid_state',
    retryable: false,
    description: 'The file is attached to a session input already: it is no longer a draft (read it through the session\'s attachments) and cannot be attached again.',
  },
  attachment_busy: {
    status: 409,
    type: 'invalid_state',
    retryable: false,
    description:
      'The attachment cannot be deleted now: its preparation is unfinished (and its input not cancelled), a pending input references it, or a turn of the session is active.',
  },
  file_not_ready: { status: 409, type: 'invalid_state', retryable: false, description: 'The file is still being prepared into the session\'s workdir; retry once its attachment status is ready.' },
  revision_mismatch: {
    status: 412,
    type: 'invalid_state',
    retryable: false,
    description: 'The `If-Match` revision is not the session\'s current one (`details.revision`): it changed since you read it. Read it again and reapply your change.',
  },
  payload_too_large: { status: 413, type: 'invalid_request', retryable: false, description: 'The request body exceeds the configured limit.' },
  input_text_too_large: {
    status: 413,
    type: 'invalid_request',
    retryable: false,
    description:
      'The text of the submission (its messages\' text parts together, or a waitpoint response\'s answers together) exceeds MAX_INPUT_TEXT_BYTES (`details.limit_bytes`, UTF-8 bytes; 256 KiB by default); `details.field` names the part where it was passed. Send long documents as files.',
  },
  file_too_large: { status: 413, type: 'invalid_request', retryable: false, description: 'The uploaded file exceeds 5 MiB (`details.limit_bytes`).' },
  file_quota_exceeded: {
    status: 413,
    type: 'invalid_request',
    retryable: false,
    description:
      'The stored files of the caller\'s account (a product user and its apps\' end users: uploads, inline images of messages and images tools returned) would exceed FILE_QUOTA_BYTES, or the caller\'s drafts FILE_QUOTA_DRAFTS (`details`); delete drafts, attachments or sessions first.',
  },
  session_image_quota_exceeded: {
    status: 413,
    type: 'invalid_request',
    retryable: false,
    description: 'The inline images of this submission would take the session\'s stored images (inline and from tools) past SESSION_IMAGE_BYTES (`details.used_bytes`, `details.quota_bytes`); start a new session.',
  },
  storage_quota_exceeded: {
    status: 413,
    type: 'invalid_request',
    retryable: false,
    description:
      'The caller\'s owner already stores at least STORAGE_QUOTA_BYTES (`details.used_bytes`: its live sessions\' measured total, which lags by the storage accounting interval; `details.quota_bytes`; `details.accounting_interval_s`): new inputs are refused at acceptance, nothing of them written. Delete sessions: a deleted session stops counting at the storage accounting\'s next pass (within `details.accounting_interval_s`, RETENTION_SWEEP_MS), long before its purge; or ask an operator to raise the quota.',
  },
  unsupported_media_type: { status: 415, type: 'invalid_request', retryable: false, description: 'The request body must be application/json (multipart/form-data for a file upload).' },
  file_type_not_allowed: {
    status: 415,
    type: 'invalid_request',
    retryable: false,
    description:
      'The file\'s content, detected from its bytes (the client\'s content type is ignored), is not an accepted type: PNG, JPEG, GIF or WebP images, PDF, or UTF-8 text (.txt, .md, .csv, .tsv, .json, .log).',
  },
  file_type_mismatch: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description: 'The filename\'s extension does not match the content detected from the bytes (e.g. a PNG named .pdf, or .json that is not JSON).',
  },
  image_too_large: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description: 'The image (or a PDF page\'s image) declares more pixels than allowed (`details.limit_pixels`, 40 megapixels): refused from its header, before decoding.',
  },
  file_unreadable: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description: 'The file could not be parsed within the limits (corrupt, or OCR or PDF reading past its time or memory limit); the message says which. A reader busy past its queue wait is 503 `service_unavailable` instead.',
  },
  validation_failed: { status: 422, type: 'invalid_request', retryable: false, description: 'The request has invalid, unknown or explicitly null fields; `details.fields` lists each one.' },
  invalid_json: { status: 422, type: 'invalid_request', retryable: false, description: 'The request body is not valid JSON.' },
  idempotency_key_required: { status: 422, type: 'invalid_request', retryable: false, description: 'Creating a session or submitting an event requires an Idempotency-Key header of 1–128 characters (on an upload it is optional, but 1–128 characters when sent).' },
  model_not_allowed: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description:
      'The model may not be used here: it is not in the deployment\'s MODEL_ALLOWLIST, or it overrides the agent\'s model where the caller may not (callers who do not manage the agent may switch only to a model of its `allowed_models`).',
  },
  tool_approval_pinned: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description:
      'The agent\'s owner pinned its approval mode (`tool_approval_pinned`): callers who do not manage the agent may raise the mode (`default` to `always_ask`) but never lower it below the agent\'s.',
  },
  invalid_model: { status: 422, type: 'invalid_request', retryable: false, description: 'The model is not of the form provider:model or its provider is unknown.' },
  invalid_agent: { status: 422, type: 'invalid_request', retryable: false, description: 'The agent definition is invalid; `details.fields` lists each problem.' },
  environment_unavailable: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description:
      'The session asks for an execution environment this deployment does not offer: a `self_hosted` one (it hosts environments itself: use `openai_hosted`), or any environment on a deployment without a sandbox runtime (SANDBOX_RUNTIME=none), including one its agent gives by default (send `{"type": "none"}`).',
  },
  budget_exceeded: {
    status: 409,
    type: 'invalid_state',
    retryable: false,
    description:
      'A budget in the session\'s scope has no room left (`details.budget_id`, `details.limit`, `details.spent`): approving its `budget` waitpoint succeeds only once the budget is raised, its period rolls over or it is deleted; the turn stays waiting.',
  },
  environment_loosened: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description:
      'The session\'s `environment` asks for more than its agent\'s default environment allows (`details.fields` names each field): wider network access or domains, or a higher limit. A session may only tighten its agent\'s environment.',
  },
  waitpoint_incomplete: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description: 'The response does not cover every question or tool call of the waitpoint; the turn keeps waiting.',
  },
  invalid_last_event_id: { status: 422, type: 'invalid_request', retryable: false, description: 'The Last-Event-ID header is not a cursor issued by this stream.' },
  last_event_id_retired: {
    status: 400,
    type: 'invalid_request',
    retryable: false,
    description:
      'The Last-Event-ID is a cursor of this session in the earlier format, issued before events carried `yuxi.seq`: it cannot show whether events were missed, so the stream does not resume from it. Reconnect without Last-Event-ID (the retained window is replayed; skip events whose `event_id` you already applied) or re-read the turn and its items, then resume from the `id:` of the events you receive.',
  },
  unknown_event_type: { status: 422, type: 'invalid_request', retryable: false, description: 'The submitted event type is not part of the protocol.' },
  control_event_required: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description:
      'The admin events route takes the control events only (cancel, resume, tool_result, continue, tree stop and continue): an operator never writes messages or other inputs into another user\'s session.',
  },
  webhook_url_not_allowed: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description:
      'The webhook URL is not allowed: it must be an absolute https URL without credentials that resolves only to public addresses (private, loopback, link-local and metadata addresses are refused unless the deployment sets WEBHOOK_ALLOW_PRIVATE_NETWORKS=true); `message` says which rule.',
  },
  mcp_url_not_allowed: {
    status: 422,
    type: 'invalid_request',
    retryable: false,
    description:
      'An MCP tool\'s `server_url` or OAuth `issuer` is a literal private, loopback, link-local, CGNAT, metadata or reserved address (in any spelling): refused at save unless the deployment sets MCP_ALLOW_PRIVATE_NETWORKS=true, or lists the host in MCP_ALLOWED_HOSTS and an administrator owns the agent. `details.fields` names each field (`tools[0].server_url`). Host names are checked when the server is called.',
  },
  automation_limit: { status: 409, type: 'invalid_state', retryable: false, description: 'The caller already has the most automations allowed (`AUTOMATION_MAX_PER_OWNER`, `details.limit`): delete one first.' },
  fork_depth_exceeded: {
    status: 409,
    type: 'invalid_state',
    retryable: false,
    description: 'The fork would reach its history through more ancestors than the deployment allows (`FORK_MAX_DEPTH`, in `details.limit`): fork an earlier session of the lineage, or start a new session.',
  },
  webhook_endpoint_limit: { status: 409, type: 'invalid_state', retryable: false, description: 'The caller already has the most webhook endpoints allowed (20): delete one first.' },
  api_key_limit: {
    status: 409,
    type: 'invalid_state',
    retryable: false,
    description: 'The key\'s owner already holds the most live API keys allowed (`MAX_KEYS_PER_USER`, in `details.limit`): revoke one first.',
  },
  not_implemented: { status: 422, type: 'invalid_request', retryable: false, description: 'The field or event type is part of the protocol but not available in this deployment yet.' },
  rate_limited: {
    status: 429,
    type: 'invalid_request',
    retryable: true,
    description:
      'Too many requests for this key, its user (all their keys together), its app or end user; too many new end users for the app; or too many open event streams for the key or its user; retry after `Retry-After` seconds.',
  },
  authentication_throttled: {
    status: 429,
    type: 'authentication',
    retryable: true,
    description: 'Too many failed authentications from this client address: further bad credentials from it are answered this instead of 401 until `Retry-After` seconds have passed, while valid credentials keep working.',
  },
  too_many_large_bodies: {
    status: 429,
    type: 'invalid_request',
    retryable: true,
    description:
      'The user already has MAX_CONCURRENT_LARGE_BODIES request bodies over 1 MiB in flight (session creates, event submissions, uploads); this one was refused before its body was read. Retry after `Retry-After` seconds, once one of them is answered.',
  },
  file_work_limited: {
    status: 429,
    type: 'invalid_request',
    retryable: true,
    description:
      'The caller already has FILE_WORK_PER_PRINCIPAL parse or thumbnail requests running (`details.limit`, 2 by default): each decodes a PDF or an image, so one caller\'s burst is bounded; retry after `Retry-After` seconds.',
  },
  internal_error: { status: 500, type: 'internal', retryable: true, description: 'An unexpected server error; the request id identifies it in the logs.' },
  service_unavailable: { status: 503, type: 'unavailable', retryable: true, description: 'A dependency (Postgres, Redis or file storage) is unavailable, or a file reader (PDF, OCR) is busy past its queue wait; retry (with the same Idempotency-Key where there is one).' },
} as const satisfies Record<string, ErrorCodeSpec>;

export type ErrorCode = keyof typeof ERROR_CODES;
