import { Body, Controller, Delete, Get, Param, Put, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CurrentPrincipal, type Principal } from '#libs/auth';
import { ModelPrices } from '#libs/protocol';
import { MODEL_KEY_MAX_LENGTH, ModelPriceDeletedDto, ModelPriceDto, ModelPriceListDto, PutModelPriceDto } from '#libs/usage';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

const MODEL = {
  name: 'model',
  description: `The model, \`provider:model\` as agents and runs name it (at most ${MODEL_KEY_MAX_LENGTH} printable characters, no spaces). URL-encode the colon where a client needs it.`,
  schema: { type: 'string', minLength: 3, maxLength: MODEL_KEY_MAX_LENGTH, example: 'openai:gpt-4o-mini' },
} as const;

const PRICE_EXAMPLE = { object: 'model_price', model: 'openai:gpt-4o-mini', input_per_mtok_usd: 0.15, output_per_mtok_usd: 0.6, cached_input_per_mtok_usd: 0.075, reasoning_per_mtok_usd: null, updated_at: 1767225600 };

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/model-prices')
export class AdminModelPricesController {
  constructor(private readonly prices: ModelPrices) {}

  @Get()
  @ApiOperation({
    operationId: 'listModelPrices',
    summary: 'List model prices',
    description: 'The price of every priced model, in USD per million tokens: what the usage ledger costs each model call at (`yuxi.usage.cost_microusd`). A model without a price costs nothing (cost null). Administrators only.',
  })
  @ApiOkResponse({ type: ModelPriceListDto, description: 'Every priced model, by name.', example: { object: 'list', data: [PRICE_EXAMPLE] } })
  @ApiErrors('forbidden', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal): Promise<ModelPriceListDto> {
    return this.prices.list(principal);
  }

  @Put(':model')
  @ApiOperation({
    operationId: 'putModelPrice',
    summary: 'Set a model\'s price',
    description:
      'Creates or replaces the model\'s price (whole: an absent cached or reasoning price falls back to the input or output price). It applies to the model calls made after it is set; each call\'s ledger row keeps the price it was made at, so a change never rewrites past costs. Cost per call, in micro-dollars: uncached input × input price + cached input × cached price + non-reasoning output × output price + reasoning × reasoning price (USD per million tokens is micro-dollars per token), rounded. Audited (`model_price.set`). Administrators only.',
  })
  @ApiParam(MODEL)
  @ApiBody({ type: PutModelPriceDto, examples: { price: { summary: 'A price with a cached-input discount', value: { input_per_mtok_usd: 0.15, output_per_mtok_usd: 0.6, cached_input_per_mtok_usd: 0.075 } } } })
  @ApiOkResponse({ type: ModelPriceDto, description: 'Replaced.', example: PRICE_EXAMPLE })
  @ApiCreatedResponse({ type: ModelPriceDto, description: 'Created.', example: PRICE_EXAMPLE })
  // 404: a path that is not valid percent-encoded UTF-8 names no model (answered before the route).
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'invalid_json', 'rate_limited')
  async put(@CurrentPrincipal() principal: Principal, @Param('model') model: string, @Body() body: unknown, @Res({ passthrough: true }) res: Response): Promise<ModelPriceDto> {
    const { price, created } = await this.prices.put(principal, model, body);
    res.status(created ? 201 : 200);
    return price;
  }

  @Delete(':model')
  @ApiOperation({
    operationId: 'deleteModelPrice',
    summary: 'Remove a model\'s price',
    description: 'The model\'s later calls have no cost (null); past calls keep theirs. Audited (`model_price.deleted`). Administrators only.',
  })
  @ApiParam(MODEL)
  @ApiOkResponse({ type: ModelPriceDeletedDto, description: 'Removed.', example: { object: 'model_price.deleted', model: 'openai:gpt-4o-mini', deleted: true } })
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'rate_limited')
  async delete(@CurrentPrincipal() principal: Principal, @Param('model') model: string): Promise<ModelPriceDeletedDto> {
    await this.prices.delete(principal, model);
    return { object: 'model_price.deleted', model, deleted: true };
  }
}
