import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { MAX_PRICE_PER_MTOK_USD } from './model-price-input.js';

const PRICE = { type: 'number', minimum: 0, maximum: MAX_PRICE_PER_MTOK_USD } as const;

/** The body of `PUT /api/v1/admin/model-prices/{model}` (documented here; validated by parseModelPrice). */
export class PutModelPriceDto {
  @ApiProperty({ ...PRICE, description: 'USD per million input tokens (uncached).', example: 2.5 }) input_per_mtok_usd!: number;
  @ApiProperty({ ...PRICE, description: 'USD per million output tokens.', example: 10 }) output_per_mtok_usd!: number;
  @ApiPropertyOptional({ ...PRICE, description: 'USD per million input tokens served from the provider\'s prompt cache; absent: the input price.', example: 1.25 })
  cached_input_per_mtok_usd?: number;
  @ApiPropertyOptional({ ...PRICE, description: 'USD per million reasoning tokens (part of the output); absent: the output price.' }) reasoning_per_mtok_usd?: number;
}

export class ModelPriceDto {
  @ApiProperty({ enum: ['model_price'] }) object!: 'model_price';
  @ApiProperty({ description: 'The model, `provider:model`, as agents and runs name it.', example: 'openai:gpt-4o-mini' }) model!: string;
  @ApiProperty({ ...PRICE }) input_per_mtok_usd!: number;
  @ApiProperty({ ...PRICE }) output_per_mtok_usd!: number;
  @ApiProperty({ ...PRICE, nullable: true, description: 'Null: cached input is priced as input.' }) cached_input_per_mtok_usd!: number | null;
  @ApiProperty({ ...PRICE, nullable: true, description: 'Null: reasoning is priced as output.' }) reasoning_per_mtok_usd!: number | null;
  @ApiProperty({ type: 'integer', description: 'Unix seconds: when the price was last set; calls made after it use it.' }) updated_at!: number;
}

export class ModelPriceListDto {
  @ApiProperty({ enum: ['list'] }) object!: 'list';
  @ApiProperty({ type: [ModelPriceDto], description: 'Every priced model, by name.' }) data!: ModelPriceDto[];
}

export class ModelPriceDeletedDto {
  @ApiProperty({ enum: ['model_price.deleted'] }) object!: 'model_price.deleted';
  @ApiProperty() model!: string;
  @ApiProperty({ enum: [true] }) deleted!: true;
}
