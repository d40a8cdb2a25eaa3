import { Module } from '@nestjs/common';
import { EventsModule } from '#libs/events';
import { FilesModule } from '#libs/files';
import { InputsModule } from '#libs/inputs';
import { QueueModule } from '#libs/queue';
import { SessionsModule } from '#libs/sessions';
import { TurnsModule } from '#libs/turns';
import { AfterCommit } from './after-commit.js';
import { AttachmentTransitions } from './attachment-transitions.js';
import { RunEndings } from './run-endings.js';
import { RunOutputWriter } from './run-output.js';
import { RunRecovery } from './run-recovery.js';
import { SessionControls } from './session-controls.js';
import { StepTransitions } from './step-transitions.js';
import { TurnClaims } from './turn-claims.js';
import { WaitpointControls } from './waitpoint-controls.js';

/**
 * The session aggregate's state transitions: the clients' side (SessionControls), the worker's
 * (TurnClaims, RunEndings, StepTransitions) and the recovery sweep's and operator's (RunRecovery).
 */
@Module({
  imports: [SessionsModule, InputsModule, TurnsModule, EventsModule, FilesModule, QueueModule],
  providers: [AfterCommit, SessionControls, TurnClaims, RunEndings, RunRecovery, RunOutputWriter, StepTransitions, WaitpointControls, AttachmentTransitions],
  exports: [AfterCommit, SessionControls, TurnClaims, RunEndings, RunRecovery, StepTransitions, WaitpointControls, AttachmentTransitions],
})
export class LifecycleModule {}
