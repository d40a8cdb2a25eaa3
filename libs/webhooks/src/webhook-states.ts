import { defineMachine, type StateOf } from '#libs/database';

/**
 * A delivery is written `pending` (by the outbox's fan-out, a test send or a redelivery) and each
 * attempt under its lease moves it: `succeeded`, `failed` for good, or `pending` again with its next
 * attempt scheduled. A redelivery is a new row, never an edge out of a finished one.
 */
export const WEBHOOK_DELIVERY_MACHINE = defineMachine({
  table: 'webhook_deliveries',
  column: 'status',
  constraint: 'webhook_deliveries_status',
  states: ['pending', 'succeeded', 'failed'],
  initial: ['pending'],
  terminal: ['succeeded', 'failed'],
  edges: {
    enqueue: { from: [null], to: ['pending'] },
    attempted: { from: ['pending'], to: ['pending', 'succeeded', 'failed'], by: 'DeliveryStore.record' },
  },
});
export type WebhookDeliveryStatus = StateOf<typeof WEBHOOK_DELIVERY_MACHINE>;

/** The guard of a delivery an attempt may still move (`status = 'pending'`), on `column`. */
export const PENDING_DELIVERY = (column = 'status'): string => WEBHOOK_DELIVERY_MACHINE.from('attempted', column);

/**
 * An endpoint's state, derived from its columns (`enabled`, `failing_since`): no status column.
 * `failing`: enabled, and every attempt failed since `failing_since`; `disabled`: by its owner, or
 * by the deliverer (it answered 410, or it kept failing): the reason is WEBHOOK_DISABLED_REASON_MACHINE.
 */
export const WEBHOOK_ENDPOINT_MACHINE = defineMachine({
  table: null,
  column: 'state',
  states: ['enabled', 'failing', 'disabled'],
  initial: ['enabled', 'disabled'],
  terminal: [],
  edges: {
    create: { from: [null], to: ['enabled', 'disabled'] },
    /** An attempt failed: the failure clock starts. */
    fail: { from: ['enabled'], to: ['failing'] },
    /** An attempt succeeded. */
    recover: { from: ['failing'], to: ['enabled'] },
    /** The owner disabled it, it answered 410, or it failed for longer than the disable delay. */
    disable: { from: ['enabled', 'failing'], to: ['disabled'] },
    /** The owner enabled it again: its failure clock restarts. */
    enable: { from: ['disabled'], to: ['enabled'] },
  },
});
export type WebhookEndpointState = StateOf<typeof WEBHOOK_ENDPOINT_MACHINE>;

export function webhookEndpointState(endpoint: { enabled: boolean; failingSince: Date | null }): WebhookEndpointState {
  if (!endpoint.enabled) return 'disabled';
  return endpoint.failingSince === null ? 'enabled' : 'failing';
}

/** Why a disabled endpoint is (`webhook_endpoints.disabled_reason`; null while enabled). Set when it is disabled, cleared when it is enabled. */
export const WEBHOOK_DISABLED_REASON_MACHINE = defineMachine({
  table: 'webhook_endpoints',
  column: 'disabled_reason',
  constraint: 'webhook_endpoints_disabled_reason',
  states: ['manual', 'gone', 'failing'],
  initial: ['manual', 'gone', 'failing'],
  terminal: ['manual', 'gone', 'failing'],
  edges: { disable: { from: [null], to: ['manual', 'gone', 'failing'] } },
});
