import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, ArrayUnique, IsArray, IsBoolean, IsIn, IsInt, IsString, Length, Max, MaxLength, Min, ValidateIf } from 'class-validator';
import { OptionalNotNull } from '#libs/errors';
import { WEBHOOK_EVENT_TYPES, type WebhookEventType } from './webhook-events.js';
import { WEBHOOK_DELIVERY_MACHINE, WEBHOOK_DISABLED_REASON_MACHINE } from './webhook-states.js';

export const WEBHOOK_URL_MAX = 2048;
export const WEBHOOK_DESCRIPTION_MAX = 500;
/** Endpoints one owner may have. */
export const MAX_WEBHOOK_ENDPOINTS = 20;
const SUBSCRIBABLE = Object.keys(WEBHOOK_EVENT_TYPES).filter((type) => type !== 'webhook.test');
export const WEBHOOK_DISABLED_REASONS = WEBHOOK_DISABLED_REASON_MACHINE.states;
export type WebhookDisabledReason = (typeof WEBHOOK_DISABLED_REASONS)[number];
export const WEBHOOK_DELIVERY_STATUSES = WEBHOOK_DELIVERY_MACHINE.states;
export const WEBHOOK_ATTEMPT_OUTCOMES = ['succeeded', 'failed', 'timeout', 'network_error', 'blocked'] as const;
export type WebhookAttemptOutcome = (typeof WEBHOOK_ATTEMPT_OUTCOMES)[number];

const URL_DESCRIPTION =
  'Where deliveries are POSTed. HTTPS, resolving to a public address: private, loopback, link-local and metadata addresses are refused (422 `webhook_url_not_allowed`), after DNS resolution, and again at every attempt (redirects are not followed), unless the deployment sets WEBHOOK_ALLOW_PRIVATE_NETWORKS=true.';
const EVENT_TYPES_DESCRIPTION = 'The event types delivered; omitted or null: every type. `webhook.test` is always delivered (test sends only).';

export class CreateWebhookEndpointDto {
  @ApiProperty({ maxLength: WEBHOOK_URL_MAX, description: URL_DESCRIPTION, example: 'https://hooks.example.com/yuxi' })
  @IsString()
  @Length(8, WEBHOOK_URL_MAX)
  url!: string;

  @ApiPropertyOptional({ type: [String], enum: SUBSCRIBABLE, nullable: true, minItems: 1, maxItems: 32, description: EVENT_TYPES_DESCRIPTION })
  @ValidateIf((_dto: object, value: unknown) => value !== undefined && value !== null)
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(32)
  @ArrayUnique()
  @IsIn(SUBSCRIBABLE, { each: true })
  event_types?: WebhookEventType[] | null;

  @ApiPropertyOptional({ maxLength: WEBHOOK_DESCRIPTION_MAX, description: 'Omitted: empty.' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(WEBHOOK_DESCRIPTION_MAX)
  description?: string;

  @ApiPropertyOptional({ default: true, description: 'A disabled endpoint receives nothing (test sends excepted).' })
  @OptionalNotNull()
  @IsBoolean()
  enabled?: boolean;
}

/** An update: only the fields given change. */
export class UpdateWebhookEndpointDto {
  @ApiPropertyOptional({ maxLength: WEBHOOK_URL_MAX, description: URL_DESCRIPTION })
  @OptionalNotNull()
  @IsString()
  @Length(8, WEBHOOK_URL_MAX)
  url?: string;

  @ApiPropertyOptional({ type: [String], enum: SUBSCRIBABLE, nullable: true, minItems: 1, maxItems: 32, description: `${EVENT_TYPES_DESCRIPTION} null: back to every type.` })
  @ValidateIf((_dto: object, value: unknown) => value !== undefined && value !== null)
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(32)
  @ArrayUnique()
  @IsIn(SUBSCRIBABLE, { each: true })
  event_types?: WebhookEventType[] | null;

  @ApiPropertyOptional({ maxLength: WEBHOOK_DESCRIPTION_MAX })
  @OptionalNotNull()
  @IsString()
  @MaxLength(WEBHOOK_DESCRIPTION_MAX)
  description?: string;

  @ApiPropertyOptional({
    description:
      '`false` disables the endpoint (`disabled_reason` manual); `true` enables it again, whatever disabled it: its failure clock restarts and deliveries still pending (written before it was disabled) go out.',
  })
  @OptionalNotNull()
  @IsBoolean()
  enabled?: boolean;
}

export class WebhookEndpointDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['webhook_endpoint'] }) object!: 'webhook_endpoint';
  @ApiProperty({ description: URL_DESCRIPTION }) url!: string;
  @ApiProperty({ type: [String], enum: SUBSCRIBABLE, nullable: true, description: EVENT_TYPES_DESCRIPTION }) event_types!: WebhookEventType[] | null;
  @ApiProperty({ description: 'Empty when none was given.' }) description!: string;
  @ApiProperty() enabled!: boolean;
  @ApiProperty({
    type: String,
    enum: [...WEBHOOK_DISABLED_REASONS, null],
    nullable: true,
    description: 'Why a disabled endpoint is: `manual` (its owner), `gone` (it answered 410), `failing` (every attempt failed for WEBHOOK_DISABLE_AFTER_S, 5 days by default). Null while enabled.',
  })
  disabled_reason!: WebhookDisabledReason | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds; null while enabled.' }) disabled_at!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds: the first failed attempt since the last success; null while deliveries succeed.' }) failing_since!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds: until then the previous secret signs too (24 h after a rotation); null when only one secret signs.' })
  previous_secret_expires_at!: number | null;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) updated_at!: number;
}

export class WebhookEndpointWithSecretDto extends WebhookEndpointDto {
  @ApiProperty({
    pattern: '^whsec_[A-Za-z0-9+/]+=*$',
    description: 'The signing secret (`whsec_` + base64), shown only in this answer: store it now. Verify deliveries with it (Standard Webhooks; the SDK\'s `verifyWebhook`).',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  })
  secret!: string;
}

export class WebhookEndpointListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [WebhookEndpointDto] }) data!: WebhookEndpointDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class WebhookEndpointDeletedDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['webhook_endpoint'] }) object!: 'webhook_endpoint';
  @ApiProperty({ enum: [true] }) deleted!: true;
}

export class WebhookAttemptDto {
  @ApiProperty({ type: 'integer', minimum: 1 }) attempt!: number;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) started_at!: number;
  @ApiProperty({ type: 'integer', description: 'Milliseconds from the request to the response head (or the failure).' }) duration_ms!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'The receiver\'s HTTP status; null when none came (timeout, network error, blocked address).' }) status_code!: number | null;
  @ApiProperty({
    enum: WEBHOOK_ATTEMPT_OUTCOMES,
    description: '`succeeded` (2xx), `failed` (another status; 3xx included: redirects are not followed), `timeout` (no answer within WEBHOOK_TIMEOUT_MS), `network_error`, `blocked` (the address is not allowed).',
  })
  outcome!: WebhookAttemptOutcome;
  @ApiProperty({ description: 'The first 1,024 characters of the response body.' }) response_excerpt!: string;
  @ApiProperty({ type: String, nullable: true, description: 'What went wrong, when no status says it.' }) error!: string | null;
}

export class WebhookDeliveryDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['webhook_delivery'] }) object!: 'webhook_delivery';
  @ApiProperty({ format: 'uuid' }) endpoint_id!: string;
  @ApiProperty({ description: 'The payload\'s `id` and the `webhook-id` header: the session event\'s `event_id` (a redelivery repeats it: dedup on it).' }) event_id!: string;
  @ApiProperty({ enum: Object.keys(WEBHOOK_EVENT_TYPES) }) event_type!: WebhookEventType;
  @ApiProperty({ type: String, format: 'uuid', nullable: true }) session_id!: string | null;
  @ApiProperty({ enum: WEBHOOK_DELIVERY_STATUSES, description: '`pending` (an attempt is due or under way), `succeeded`, `failed` (every attempt of the schedule failed, or a test send\'s only one).' })
  status!: (typeof WEBHOOK_DELIVERY_STATUSES)[number];
  @ApiProperty({ type: 'integer', description: 'Attempts made so far (one whose worker died mid-attempt counts, and leaves no entry in `attempts`).' }) attempt_count!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds: when the next attempt is due; null once the delivery is done.' }) next_attempt_at!: number | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The delivery this one redelivers.' }) redelivery_of!: string | null;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: 'integer', nullable: true, description: 'Unix seconds; null while pending.' }) completed_at!: number | null;
  @ApiProperty({ type: [WebhookAttemptDto], description: 'Every attempt that came to a result, oldest first.' }) attempts!: WebhookAttemptDto[];
}

export class WebhookDeliveryListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [WebhookDeliveryDto] }) data!: WebhookDeliveryDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class WebhookDeliveryListQueryDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 64, description: 'The `last_id` of the previous page (400 `invalid_cursor` when it is not a delivery of this endpoint).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 64)
  after?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, description: 'Page size (default 20).' })
  @OptionalNotNull()
  @Type(() => Number)
  @IsInt()
  @Min(1)
  @Max(100)
  limit?: number;

  @ApiPropertyOptional({ enum: WEBHOOK_DELIVERY_STATUSES, description: 'Only deliveries in this status.' })
  @OptionalNotNull()
  @IsIn(WEBHOOK_DELIVERY_STATUSES)
  status?: (typeof WEBHOOK_DELIVERY_STATUSES)[number];
}
