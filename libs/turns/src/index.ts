export { assistantContent, CALL_ITEM_TYPES, type CallItemType, COMPACTION_TRIGGERS, isCallItem, isReasoningPart, REASONING_PART } from './entities.js';
export type {
  CommittedStep,
  CompactionRecord,
  CompactionTrigger,
  ItemEntity,
  ItemStatus,
  PublicError,
  RunCheckpoint,
  RunEntity,
  RunStatus,
  StepKind,
  StepOutput,
  StoredContentPart,
  ToolCallSpec,
  TurnContext,
  TurnEntity,
  TurnStatus,
  Usage,
  Waitpoint,
  WaitpointKind,
  WaitpointQuestion,
  WaitpointElicitation,
  WaitpointResponse,
} from './entities.js';
export { toActiveMessageDto, toCurrentTurn, toItemDto, toRunDto, toRunSummary, toTurnDetailDto, toTurnDto } from './projections.js';
export {
  ContentPartDto,
  ItemDto,
  ItemListDto,
  PublicErrorDto,
  RunDto,
  RunSummaryDto,
  TurnContextDto,
  TurnDetailDto,
  TurnDto,
  TurnListDto,
  TurnStateDto,
  UsageDto,
  WaitpointDto,
  WaitpointQuestionDto,
  WaitpointToolCallDto,
} from './turn.dto.js';
export {
  ACTIVE_TURN_STATUSES,
  CANCEL_WINS_OVER,
  ITEM_MACHINE,
  ITEM_STATUSES,
  LEASABLE_RUN_STATUSES,
  RUN_MACHINE,
  RUN_STATUSES,
  RUN_TRANSITIONS,
  SETTLED_RUN_STATUSES,
  type SettledStatus,
  settledStatus,
  settledStatusSql,
  sqlList,
  STEP_KINDS,
  STEP_MACHINE,
  STEP_STATUSES,
  STEP_TRANSITIONS,
  type StepStatus,
  statusGuard,
  TERMINAL_TURN_STATUSES,
  type Transition,
  TURN_MACHINE,
  TURN_STATUSES,
  TURN_TRANSITIONS,
} from './states.js';
export { TurnsModule } from './turns.module.js';
export { type ContextItems, insertItemsWrite, ItemsRepository, type NewItem } from './items.repository.js';
export { itemText, itemTokens, itemTokensIfLoaded } from './item-tokens.js';
export type { Lease } from './lease.js';
export { RunsRepository, type SuccessorSpec } from './runs.repository.js';
export { type NewStep, StepsRepository } from './steps.repository.js';
export { type ModelRequestRow, ModelRequestsRepository } from './model-requests.repository.js';
export { type NewTurn, type SettleSpec, TurnsRepository } from './turns.repository.js';
export { type OpenWaitpointFilter, type OpenWaitpointRow, type RunFleetCounts, TIMELINE_TEXT_MAX, type TimelineRunRow, type TimelineStepRow } from './operator-reads.js';
export { leaseStateOf, leaseStateSql, RUN_LEASE_MACHINE, type RunLeaseState } from './lease-machine.js';
export { type CallsWaitpoint, parseWaitpoint, type QuestionWaitpoint, type TaggedWaitpoint, WAITPOINT_KINDS, waitpointProblem } from './waitpoints.js';
export { turnStartRows, turnStartWrites } from './turn-start-writes.js';
