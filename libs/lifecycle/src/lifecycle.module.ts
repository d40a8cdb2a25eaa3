import { Module } from '@nestjs/common';
import { EventsModule } from '#libs/events';
import { FilesModule } from '#libs/files';
import { InputsModule } from '#libs/inputs';
import { SessionsModule } from '#libs/sessions';
import { TurnsModule } from '#libs/turns';
import { AttachmentTransitions } from './attachment-transitions.js';
import { SessionControls } from './session-controls.js';
import { StepTransitions } from './step-transitions.js';
import { TurnTransitions } from './turn-transitions.js';
import { WaitpointControls } from './waitpoint-controls.js';

/** The session aggregate's state transitions: the clients' side (SessionControls) and the worker's (TurnTransitions). */
@Module({
  imports: [SessionsModule, InputsModule, TurnsModule, EventsModule, FilesModule],
  providers: [SessionControls, TurnTransitions, StepTransitions, WaitpointControls, AttachmentTransitions],
  exports: [SessionControls, TurnTransitions, StepTransitions, WaitpointControls, AttachmentTransitions],
})
export class LifecycleModule {}
