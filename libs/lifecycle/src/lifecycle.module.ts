import { Module } from '@nestjs/common';
import { AgentsModule } from '#libs/agents';
import { EventsModule } from '#libs/events';
import { FilesModule } from '#libs/files';
import { InputsModule } from '#libs/inputs';
import { QueueModule } from '#libs/queue';
import { SessionsModule } from '#libs/sessions';
import { TurnsModule } from '#libs/turns';
import { AfterCommit } from './after-commit.js';
import { AttachmentTransitions } from './attachment-transitions.js';
import { CapabilityLimits } from './capability-limits.js';
import { CooperationTransitions } from './cooperation-transitions.js';
import { CooperationWaits } from './cooperation-waits.js';
import { RunEndings } from './run-endings.js';
import { RunOutputWriter } from './run-output.js';
import { RunRecovery } from './run-recovery.js';
import { SessionControls } from './session-controls.js';
import { StepTransitions } from './step-transitions.js';
import { TreeControls } from './tree-controls.js';
import { SessionTransactions } from './session-transaction.js';
import { TurnClaims } from './turn-claims.js';
import { TurnTakeovers } from './turn-takeovers.js';
import { TurnSettlement } from './turn-settlement.js';
import { WaitpointControls } from './waitpoint-controls.js';

/**
 * The session aggregate's state transitions: the clients' side (SessionControls), the worker's
 * (TurnClaims, RunEndings, StepTransitions), a coordinator's on its members (CooperationTransitions,
 * CooperationWaits) and the recovery sweep's and operator's (RunRecovery).
 */
@Module({
  imports: [SessionsModule, InputsModule, TurnsModule, EventsModule, FilesModule, QueueModule, AgentsModule],
  providers: [AfterCommit, SessionTransactions, TurnTakeovers, TurnSettlement, SessionControls, TurnClaims, RunEndings, RunRecovery, RunOutputWriter, StepTransitions, WaitpointControls, AttachmentTransitions, CooperationTransitions, CooperationWaits, TreeControls, CapabilityLimits],
  exports: [AfterCommit, SessionTransactions, TurnSettlement, SessionControls, TurnClaims, RunEndings, RunRecovery, StepTransitions, WaitpointControls, AttachmentTransitions, CooperationTransitions, CooperationWaits, TreeControls, CapabilityLimits],
})
export class LifecycleModule {}
