import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiKeyCreatedDto, ApiKeyDeletedDto, ApiKeyListDto, ApiKeys, assertFullAccess, CreateApiKeyDto, CurrentPrincipal, type Principal } from '#libs/auth';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags('admin')
@ApiBearerAuth()
@Controller('api/v1/admin/api-keys')
export class AdminApiKeysController {
  constructor(private readonly keys: ApiKeys) {}

  @Post()
  @ApiOperation({
    summary: 'Create an API key (full access only)',
    description:
      'The secret is in this response only; it is stored as a keyed hash. `access: agents` keys reach the public agents API only. With `app_id` the key acts for that app\'s end users (`X-End-User-Id`). A `user_id` other than your own is for administrators.',
  })
  @ApiCreatedResponse({ type: ApiKeyCreatedDto })
  @ApiErrors('forbidden', 'validation_failed', 'invalid_json', 'rate_limited')
  create(@CurrentPrincipal() principal: Principal, @Body() body: CreateApiKeyDto): Promise<ApiKeyCreatedDto> {
    assertFullAccess(principal);
    return this.keys.create(principal, body);
  }

  @Get()
  @ApiOperation({ summary: 'List API keys without their secrets: your own, or every key for administrators' })
  @ApiOkResponse({ type: ApiKeyListDto })
  @ApiErrors('forbidden', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal): Promise<ApiKeyListDto> {
    assertFullAccess(principal);
    return this.keys.list(principal);
  }

  @Delete(':key_id')
  @ApiOperation({ summary: 'Revoke an API key', description: 'Refused on the next request, on every api replica.' })
  @ApiOkResponse({ type: ApiKeyDeletedDto })
  @ApiErrors('forbidden', 'not_found', 'rate_limited')
  async revoke(@CurrentPrincipal() principal: Principal, @Param('key_id') keyId: string): Promise<ApiKeyDeletedDto> {
    assertFullAccess(principal);
    await this.keys.revoke(principal, keyId);
    return { id: keyId, object: 'api_key.deleted', deleted: true };
  }
}
