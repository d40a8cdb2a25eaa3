export { Acceptance } from './acceptance.js';
export { IdempotentWrite, type TransactionWork } from './idempotent-write.js';
export { DeleteAttachment } from './attachments.use-case.js';
export { CreateSession } from './create-session.use-case.js';
export { CancelInput, CancelTurn, ContinueQueue, PromoteInput } from './queue-controls.use-case.js';
export { ArchiveSession, UpdateSession } from './session-settings.use-case.js';
export { DeleteSession } from './delete-session.use-case.js';
export { UploadDraft } from './upload-file.use-case.js';
export { SubmitEvent } from './submit-event.use-case.js';
export { SubmitMessage } from './submit-message.use-case.js';
export { ResumeTurn, SubmitToolResult } from './waitpoint-responses.use-case.js';
export { CompactContext } from './compact-context.use-case.js';
export { ContinueTree, StopTree } from './tree-controls.use-case.js';
export { OPERATOR_EVENT_TYPES, SubmitOperatorEvent } from './operator-events.use-case.js';
export { CreateProject, DeleteProject, GetProject, ListProjects } from './projects.use-case.js';
export { ARTIFACT_USE_CASES, DeleteArtifact, GetArtifact, GetArtifactContent, ListArtifacts } from './artifacts.use-case.js';

import { InlineImages } from '../inline-images.js';
import { Acceptance } from './acceptance.js';
import { IdempotentWrite } from './idempotent-write.js';
import { MessageAcceptance } from './message-acceptance.js';
import { DeleteAttachment } from './attachments.use-case.js';
import { CreateSession } from './create-session.use-case.js';
import { FirstInput } from './first-input.js';
import { CancelInput, CancelTurn, ContinueQueue, PromoteInput } from './queue-controls.use-case.js';
import { ArchiveSession, UpdateSession } from './session-settings.use-case.js';
import { DeleteSession } from './delete-session.use-case.js';
import { UploadDraft } from './upload-file.use-case.js';
import { SubmitEvent } from './submit-event.use-case.js';
import { SubmitMessage } from './submit-message.use-case.js';
import { ResumeTurn, SubmitToolResult } from './waitpoint-responses.use-case.js';
import { CompactContext } from './compact-context.use-case.js';
import { ControlEvents } from './control-events.js';
import { ContinueTree, StopTree } from './tree-controls.use-case.js';
import { SubmitOperatorEvent } from './operator-events.use-case.js';
import { CreateProject, DeleteProject, GetProject, ListProjects } from './projects.use-case.js';

/** One class per operation (each accepts its work through Acceptance). */
export const USE_CASES = [IdempotentWrite, Acceptance, MessageAcceptance, InlineImages, DeleteAttachment, CreateSession, FirstInput, SubmitEvent, ControlEvents, SubmitMessage, CancelInput, CancelTurn, PromoteInput, ContinueQueue, ResumeTurn, SubmitToolResult, CompactContext, StopTree, ContinueTree, UpdateSession, ArchiveSession, DeleteSession, UploadDraft, CreateProject, ListProjects, GetProject, DeleteProject, SubmitOperatorEvent];
