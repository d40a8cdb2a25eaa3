export { IdempotencyService, type IdempotentResponse, type IdempotencyScope, type ReceiptRow, receiptLookup, type SqlFragment, type WorkResult } from './idempotency.service.js';
export type { AttachmentStatus, FrozenInputConfig, InputContentBlock, InputEntity, InputMessage, InputMode, InputStatus } from './input.entity.js';
export { InputsModule } from './inputs.module.js';
export { InputContentBlockDto, InputDto, InputMessageDto } from './input.dto.js';
export { InputsRepository, type NewInput, type RidingWrite, toInputDto } from './inputs.repository.js';
export {
  ATTACHMENT_MACHINE,
  ATTACHMENT_STATUSES,
  ATTACHMENT_TRANSITIONS,
  INPUT_MACHINE,
  INPUT_MODE_MACHINE,
  INPUT_MODES,
  INPUT_STATUSES,
  INPUT_TRANSITIONS,
  MODE_TRANSITIONS,
} from './states.js';
export { PREPARATION_RETRY_MAX_MS, preparationRetryDelayMs } from './preparation-backoff.js';
export { type AcceptedReceipt, IdempotencyReceiptEntity } from './receipt.entity.js';
export { CLAIM_QUEUE, claimBatch, claimQueueInputs, consumedWrite } from './claim-queue.js';
