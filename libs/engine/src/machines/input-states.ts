import { defineMachine, type Transition } from '#libs/database';

/**
 * The input queue's state machine, declared once: statuses, modes and attachment preparation,
 * and the repository method that performs each edge (its SQL carries the edge's guard; see
 * test/unit/states.test.ts). Whether a client may ask for an edge (cancel, promote) is decided in
 * libs/engine (input-gates.ts); the statement here only keeps the guard atomic.
 */
export const INPUT_STATUSES = ['pending', 'consumed', 'cancelled'] as const;
export type InputStatus = (typeof INPUT_STATUSES)[number];

export const INPUT_MODES = ['follow_up', 'steer'] as const;
export type InputMode = (typeof INPUT_MODES)[number];

/** `preparing`: its attached files are not in the session workdir yet, and it cannot be claimed. */
export const ATTACHMENT_STATUSES = ['preparing', 'ready'] as const;
export type AttachmentStatus = (typeof ATTACHMENT_STATUSES)[number];

export const INPUT_TRANSITIONS = {
  accept: { from: [null], to: ['pending'], by: 'InputsRepository.insert', column: 'status' },
  /** A claim (or a yield to steers) takes the input into a turn. */
  consume: { from: ['pending'], to: ['consumed'], by: 'InputsRepository.markConsumed', column: 'status' },
  /** The client removed it from the queue (input-gates.ts decides whether it may). */
  cancel: { from: ['pending'], to: ['cancelled'], by: 'InputsRepository.markCancelled', column: 'status' },
} as const satisfies Record<string, Transition<InputStatus>>;

export const MODE_TRANSITIONS = {
  /** A pending follow-up becomes a steer (input-gates.ts decides whether it may). */
  promote: { from: ['follow_up'], to: ['steer'], by: 'InputsRepository.markSteer', column: 'mode' },
} as const satisfies Record<string, Transition<InputMode>>;

export const ATTACHMENT_TRANSITIONS = {
  ready: { from: ['preparing'], to: ['ready'], by: 'InputsRepository.markAttachmentsReady', column: 'attachment_status' },
} as const satisfies Record<string, Transition<AttachmentStatus>>;

/** The machines of the inputs table (libs/database/src/machine.ts): CHECK, guards and enums derive from them. */
export const INPUT_MACHINE = defineMachine({
  table: 'inputs',
  column: 'status',
  states: INPUT_STATUSES,
  initial: ['pending'],
  terminal: ['consumed', 'cancelled'],
  edges: INPUT_TRANSITIONS,
});

export const INPUT_MODE_MACHINE = defineMachine({
  table: 'inputs',
  column: 'mode',
  states: INPUT_MODES,
  // An input is accepted in either mode; only a pending follow-up may become a steer.
  initial: INPUT_MODES,
  terminal: ['steer'],
  edges: { ...MODE_TRANSITIONS, accept: { from: [null], to: INPUT_MODES } },
});

export const ATTACHMENT_MACHINE = defineMachine({
  table: 'inputs',
  column: 'attachment_status',
  states: ATTACHMENT_STATUSES,
  initial: ATTACHMENT_STATUSES,
  terminal: ['ready'],
  edges: { ...ATTACHMENT_TRANSITIONS, accept: { from: [null], to: ATTACHMENT_STATUSES } },
});
