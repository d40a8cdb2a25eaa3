// The webhook endpoints and deliveries of the document's examples.
import { AT, SESSION_ID } from './example-ids.js';

const WEBHOOK_ID = '0193a5b0-5e6f-7a8b-9c0d-1e2f3a4b5c6d';
const WEBHOOK_DELIVERY_ID = '0193a5b0-6f70-7b8c-9d0e-2f3a4b5c6d7e';
export const CREATE_WEBHOOK_EXAMPLE = { url: 'https://hooks.example.com/yuxi', event_types: ['agent.session.turn.completed', 'agent.session.turn.failed', 'yuxi.session.turn.waiting'], description: 'Ticketing system' };
export const WEBHOOK_EXAMPLE = {
  id: WEBHOOK_ID,
  object: 'webhook_endpoint',
  ...CREATE_WEBHOOK_EXAMPLE,
  enabled: true,
  disabled_reason: null,
  disabled_at: null,
  failing_since: null,
  previous_secret_expires_at: null,
  created_at: AT - 60,
  updated_at: AT - 60,
};
export const WEBHOOK_WITH_SECRET_EXAMPLE = { ...WEBHOOK_EXAMPLE, secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYo=' };
export const WEBHOOK_LIST_EXAMPLE = { object: 'list', data: [WEBHOOK_EXAMPLE], first_id: WEBHOOK_ID, last_id: WEBHOOK_ID, has_more: false };
export const WEBHOOK_DELETED_EXAMPLE = { id: WEBHOOK_ID, object: 'webhook_endpoint', deleted: true };
export const WEBHOOK_DELIVERY_EXAMPLE = {
  id: WEBHOOK_DELIVERY_ID,
  object: 'webhook_delivery',
  endpoint_id: WEBHOOK_ID,
  event_id: 'evt_0193a5b07a8b7c9d8e0f1a2b3c4d5e6f',
  event_type: 'agent.session.turn.completed',
  session_id: SESSION_ID,
  status: 'succeeded',
  attempt_count: 2,
  next_attempt_at: null,
  redelivery_of: null,
  created_at: AT - 10,
  completed_at: AT - 4,
  attempts: [
    { attempt: 1, started_at: AT - 10, duration_ms: 15000, status_code: null, outcome: 'timeout', response_excerpt: '', error: 'no response within 15000 ms' },
    { attempt: 2, started_at: AT - 4, duration_ms: 42, status_code: 200, outcome: 'succeeded', response_excerpt: '{"ok":true}', error: null },
  ],
};
export const WEBHOOK_DELIVERY_LIST_EXAMPLE = { object: 'list', data: [WEBHOOK_DELIVERY_EXAMPLE], first_id: WEBHOOK_DELIVERY_ID, last_id: WEBHOOK_DELIVERY_ID, has_more: false };
