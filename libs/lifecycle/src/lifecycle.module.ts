import { Module } from '@nestjs/common';
import { EventsModule } from '#libs/events';
import { FilesModule } from '#libs/files';
import { InputsModule } from '#libs/inputs';
import { QueueModule } from '#libs/queue';
import { SessionsModule } from '#libs/sessions';
import { TurnsModule } from '#libs/turns';
import { AfterCommit } from './after-commit.js';
import { AttachmentTransitions } from './attachment-transitions.js';
import { SessionControls } from './session-controls.js';
import { StepTransitions } from './step-transitions.js';
import { TurnTransitions } from './turn-transitions.js';
import { WaitpointControls } from './waitpoint-controls.js';

/** The session aggregate's state transitions: the clients' side (SessionControls) and the worker's (TurnTransitions). */
@Module({
  imports: [SessionsModule, InputsModule, TurnsModule, EventsModule, FilesModule, QueueModule],
  providers: [AfterCommit, SessionControls, TurnTransitions, StepTransitions, WaitpointControls, AttachmentTransitions],
  exports: [AfterCommit, SessionControls, TurnTransitions, StepTransitions, WaitpointControls, AttachmentTransitions],
})
export class LifecycleModule {}
