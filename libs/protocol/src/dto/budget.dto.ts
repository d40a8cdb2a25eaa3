import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsIn, IsInt, IsObject, IsString, IsUUID, Length, Max, MaxLength, Min, registerDecorator, ValidateNested, type ValidationOptions } from 'class-validator';
import { BUDGET_LIMIT_KEYS, BUDGET_ON_EXCEEDED, BUDGET_PERIODS, type BudgetLimits, type BudgetOnExceeded, type BudgetPeriod, USAGE_CLOCK_MAX_OFFSET_S } from '#libs/budgets';
import { IsSessionMetadata, OptionalNotNull } from './validators.js';

/** A budget's `metadata`: the bounds of a session's. */
const METADATA_SCHEMA = {
  type: 'object',
  additionalProperties: { type: 'string', maxLength: 512 },
  maxProperties: 16,
  example: { team: 'research' },
  description: 'Your string labels for the budget: at most 16 keys of 1–64 characters, values of at most 512 characters (else 422 naming the field).',
} as const;

/** The largest value of any limit (a billion dollars in micro-dollars; far beyond any real budget, well inside an exact integer). */
export const BUDGET_LIMIT_MAX = 1_000_000_000_000_000;

/** The keys of a budget's scope, one of which a budget names. */
export const BUDGET_SCOPE_KEYS = ['session_id', 'project_id', 'app_id', 'end_user_id', 'agent_id', 'user_id'] as const;
export type BudgetScopeKey = (typeof BUDGET_SCOPE_KEYS)[number];

/** The object `value` (a nested DTO once transformed) has exactly one (`exactly`) or at least one of `keys` set. */
function HasKeysOf(keys: readonly string[], mode: 'exactly one' | 'at least one', options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: mode === 'exactly one' ? 'hasExactlyOneKey' : 'hasAtLeastOneKey',
      target: target.constructor,
      propertyName: String(propertyName),
      options,
      validator: {
        validate: (value: unknown) => {
          if (typeof value !== 'object' || value === null) return true; // the type check says so
          const set = keys.filter((key) => (value as Record<string, unknown>)[key] !== undefined).length;
          return mode === 'exactly one' ? set === 1 : set >= 1;
        },
        defaultMessage: () => `must have ${mode} of ${keys.join(', ')}`,
      },
    });
  };
}

const LIMIT = (description: string) =>
  applyDecorators(ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: BUDGET_LIMIT_MAX, description }), OptionalNotNull(), IsInt(), Min(1), Max(BUDGET_LIMIT_MAX));

/** What a budget bounds, each a positive integer; at least one. */
export class BudgetLimitsDto implements BudgetLimits {
  @LIMIT('Cost in integer micro-dollars at the deployment\'s prices (calls of unpriced models count 0).') cost_microusd?: number;
  @LIMIT('Tokens: input (cached included) plus output (reasoning included).') tokens?: number;
  @LIMIT('Model calls (a turn\'s steps, compactions, MCP sampling).') model_calls?: number;
  @LIMIT('Tool calls and sandbox commands.') tool_calls?: number;
  @LIMIT('Turns with at least one call counted.') turns?: number;
  @LIMIT('Seconds the calls took, summed.') wall_time_s?: number;
}

/** A body's `limits` (required on create, optional on update): a nested object with at least one limit. */
const LIMITS = (description: string, required = true) =>
  applyDecorators(
    required ? ApiProperty({ type: BudgetLimitsDto, description }) : ApiPropertyOptional({ type: BudgetLimitsDto, description }),
    ...(required ? [] : [OptionalNotNull()]),
    IsObject(),
    ValidateNested(),
    Type(() => BudgetLimitsDto),
    HasKeysOf(BUDGET_LIMIT_KEYS, 'at least one'),
  );
const PERIOD = (description?: string) => applyDecorators(ApiPropertyOptional({ enum: BUDGET_PERIODS, ...(description ? { description } : {}) }), OptionalNotNull(), IsIn(BUDGET_PERIODS));
const ON_EXCEEDED = (description?: string) => applyDecorators(ApiPropertyOptional({ enum: BUDGET_ON_EXCEEDED, ...(description ? { description } : {}) }), OptionalNotNull(), IsIn(BUDGET_ON_EXCEEDED));
const METADATA = (description: string) => applyDecorators(ApiPropertyOptional({ ...METADATA_SCHEMA, description }), OptionalNotNull(), IsSessionMetadata());

/** What a budget covers: exactly one key. */
export class BudgetScopeDto {
  @ApiPropertyOptional({ format: 'uuid', description: 'A session of the caller; named on a tree\'s root, the whole tree.' })
  @OptionalNotNull()
  @IsUUID()
  session_id?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'A project of the caller: every session of it.' })
  @OptionalNotNull()
  @IsUUID()
  project_id?: string;

  @ApiPropertyOptional({ maxLength: 128, description: 'Every end user of an app (an app-bound key names its own app only).' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 128)
  app_id?: string;

  @ApiPropertyOptional({ maxLength: 256, description: 'An app\'s end user (its external id); through an app-bound key, that app\'s end user only.' })
  @OptionalNotNull()
  @IsString()
  @MaxLength(256)
  end_user_id?: string;

  @ApiPropertyOptional({ maxLength: 256, description: 'An agent the caller may use: every session of it in the caller\'s account.' })
  @OptionalNotNull()
  @IsString()
  @Length(1, 256)
  agent_id?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'A product user: every session of their account. Administrators only.' })
  @OptionalNotNull()
  @IsUUID()
  user_id?: string;
}

export class CreateBudgetDto {
  @ApiProperty({ type: BudgetScopeDto, description: 'Exactly one key.' })
  @IsObject()
  @ValidateNested()
  @Type(() => BudgetScopeDto)
  @HasKeysOf(BUDGET_SCOPE_KEYS, 'exactly one')
  scope!: BudgetScopeDto;

  @LIMITS('At least one limit.') limits!: BudgetLimitsDto;
  @PERIOD('What the limits are per (UTC days and months). Omitted: `lifetime`.') period?: BudgetPeriod;
  @ON_EXCEEDED('`pause`: the turn waits at a `budget` waitpoint; `fail`: it fails with `budget_exceeded`. Omitted: `pause`.') on_exceeded?: BudgetOnExceeded;
  @METADATA(METADATA_SCHEMA.description) metadata?: Record<string, string>;
}

export class UpdateBudgetDto {
  @LIMITS('Replaces the limits whole; at least one.', false) limits?: BudgetLimitsDto;
  @PERIOD() period?: BudgetPeriod;
  @ON_EXCEEDED() on_exceeded?: BudgetOnExceeded;
  @METADATA(`Replaces the whole map. ${METADATA_SCHEMA.description}`) metadata?: Record<string, string>;
}

/** A session's own budget (`yuxi.budget` on session create and update): a lifetime budget scoped to the session. */
export class SessionBudgetParamDto {
  @LIMITS('At least one limit.') limits!: BudgetLimitsDto;
  @ON_EXCEEDED('Omitted: `pause`.') on_exceeded?: BudgetOnExceeded;
}

/** What a budget's scope spent in its current period, committed (calls in flight are not shown). */
export class BudgetSpentDto {
  @ApiProperty({ type: 'integer' }) cost_microusd!: number;
  @ApiProperty({ type: 'integer' }) tokens!: number;
  @ApiProperty({ type: 'integer' }) model_calls!: number;
  @ApiProperty({ type: 'integer' }) tool_calls!: number;
  @ApiProperty({ type: 'integer' }) turns!: number;
  @ApiProperty({ type: 'integer', description: 'Whole seconds.' }) wall_time_s!: number;
}

export class BudgetDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['agent.budget'] }) object!: 'agent.budget';
  @ApiProperty({ type: BudgetScopeDto, description: 'The one key it was made with.' }) scope!: Partial<Record<BudgetScopeKey, string>>;
  @ApiProperty({ type: BudgetLimitsDto }) limits!: BudgetLimits;
  @ApiProperty({ enum: BUDGET_PERIODS }) period!: BudgetPeriod;
  @ApiProperty({ enum: BUDGET_ON_EXCEEDED }) on_exceeded!: BudgetOnExceeded;
  @ApiProperty({ type: BudgetSpentDto, description: 'Every unit\'s committed sum in the current period.' }) spent!: BudgetSpentDto;
  @ApiProperty({ type: 'integer', nullable: true, description: 'When the current period began (Unix seconds, on the usage clock: a UTC midnight or first of the month); null for `lifetime`.' })
  period_start!: number | null;
  @ApiProperty({ type: 'integer', nullable: true, description: 'When the next period begins and `spent` starts again from 0; null for `lifetime`.' }) period_end!: number | null;
  @ApiProperty({ type: 'object', additionalProperties: { type: 'string' } }) metadata!: Record<string, string>;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) created_at!: number;
  @ApiProperty({ type: 'integer', description: 'Unix seconds.' }) updated_at!: number;
}

export class BudgetListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [BudgetDto] }) data!: BudgetDto[];
  @ApiProperty({ type: String, nullable: true }) first_id!: string | null;
  @ApiProperty({ type: String, nullable: true }) last_id!: string | null;
  @ApiProperty() has_more!: boolean;
}

export class BudgetDeletedDto {
  @ApiProperty({ format: 'uuid' }) id!: string;
  @ApiProperty({ enum: ['agent.budget'] }) object!: 'agent.budget';
  @ApiProperty({ enum: [true] }) deleted!: true;
}

/** A session's own budget as the session resource shows it (`yuxi.budget`). */
export class SessionBudgetDto {
  @ApiProperty({ format: 'uuid', description: 'Also readable and changeable at `/agents/budgets/{id}`.' }) id!: string;
  @ApiProperty({ type: BudgetLimitsDto }) limits!: BudgetLimits;
  @ApiProperty({ enum: BUDGET_ON_EXCEEDED }) on_exceeded!: BudgetOnExceeded;
  @ApiPropertyOptional({ type: BudgetSpentDto, description: 'On a read of the session (not on lists): what the session and its tree spent.' }) spent?: BudgetSpentDto;
}

export class SetUsageClockDto {
  @ApiProperty({ type: 'integer', minimum: -USAGE_CLOCK_MAX_OFFSET_S, maximum: USAGE_CLOCK_MAX_OFFSET_S, description: 'Seconds the usage clock runs ahead of (or, negative, behind) the database\'s; 0 puts it back.' })
  @IsInt()
  @Min(-USAGE_CLOCK_MAX_OFFSET_S)
  @Max(USAGE_CLOCK_MAX_OFFSET_S)
  offset_s!: number;
}

export class UsageClockDto {
  @ApiProperty({ enum: ['usage_clock'] }) object!: 'usage_clock';
  @ApiProperty({ type: 'integer' }) offset_s!: number;
  @ApiProperty({ type: 'integer', description: 'The usage clock now (Unix seconds): what budget periods and report days go by.' }) now!: number;
}
