// Webhooks (PROTOCOL.md "Webhooks (Standard Webhooks)"): endpoints, the fan-out from the session
// outbox, and the delivery engine the worker runs.
export {};
