export { IdempotencyService, type IdempotentResponse, type IdempotencyScope, type WorkResult } from './idempotency.service.js';
export type { AttachmentStatus, FrozenInputConfig, InputContentBlock, InputEntity, InputMessage, InputMode, InputStatus } from './input.entity.js';
export { InputsModule } from './inputs.module.js';
export { InputContentBlockDto, InputDto, InputMessageDto } from './input.dto.js';
export { InputsService, type NewInput, toInputDto } from './inputs.service.js';
export { PREPARATION_RETRY_MAX_MS, preparationRetryDelayMs } from './preparation-backoff.js';
export type { AcceptedReceipt } from './receipt.entity.js';
