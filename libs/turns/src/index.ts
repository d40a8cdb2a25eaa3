export { ACTIVE_TURN_STATUSES } from './entities.js';
export type { CommittedStep, ItemEntity, ItemStatus, PublicError, RunCheckpoint, RunEntity, StoredContentPart, RunStatus, TurnEntity, TurnStatus } from './entities.js';
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
} from './turn.dto.js';
export { TurnsModule } from './turns.module.js';
export { type Lease, type NewItem, type NewTurn, type SettleSpec, type SuccessorSpec, TurnsService } from './turns.service.js';
