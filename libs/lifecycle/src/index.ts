export { AfterCommit, type Committed, type Nudge } from './after-commit.js';
export { AttachmentTransitions } from './attachment-transitions.js';
export { gateCancelInput, gatePromoteInput } from './input-gates.js';
export { LifecycleModule } from './lifecycle.module.js';
export { type MessageSpec, resolveMode, SessionControls } from './session-controls.js';
export { EVENT_BUILDERS, turnEvents } from './turn-events.js';
export { assistantItem, type HeldTurn, type Outcome, type RunOutput, type Seized, type Settled, type Successor, TurnTransitions, turnSeconds } from './turn-transitions.js';
export { type ModelStep, type Recorded, type RecordedModelStep, StepTransitions } from './step-transitions.js';
export { type Resumed, WaitpointControls } from './waitpoint-controls.js';
