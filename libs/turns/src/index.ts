export { ACTIVE_TURN_STATUSES } from './entities.js';
export type {
  CommittedStep,
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
  TurnEntity,
  TurnStatus,
  Usage,
  Waitpoint,
  WaitpointKind,
  WaitpointQuestion,
  WaitpointResponse,
} from './entities.js';
export { toCurrentTurn, toItemDto, toRunDto, toRunSummary, toTurnDetailDto, toTurnDto } from './projections.js';
export {
  ContentPartDto,
  ItemDto,
  ItemListDto,
  PublicErrorDto,
  RunDto,
  RunSummaryDto,
  TurnDetailDto,
  TurnDto,
  TurnListDto,
  TurnStateDto,
  UsageDto,
  WaitpointDto,
} from './turn.dto.js';
export { TurnsModule } from './turns.module.js';
export { type Lease, type NewItem, type NewStep, type NewTurn, type SettleSpec, type SuccessorSpec, TurnsService } from './turns.service.js';
