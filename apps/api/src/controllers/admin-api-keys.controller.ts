import { Body, Controller, Delete, Get, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import { ApiKeyCreatedDto, ApiKeyDeletedDto, ApiKeyListDto, ApiKeys, assertFullAccess, CreateApiKeyDto, CurrentPrincipal, type Principal } from '#libs/auth';
import { API_KEY_CREATED_EXAMPLE, API_KEY_DELETED_EXAMPLE, API_KEY_LIST_EXAMPLE, CREATE_API_KEY_EXAMPLE, CREATE_API_KEY_FOR_SUBJECT_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/api-keys')
export class AdminApiKeysController {
  constructor(private readonly keys: ApiKeys) {}

  @Post()
  @ApiOperation({
    operationId: 'createApiKey',
    summary: 'Create an API key',
    description:
      'The secret is in this response only; it is stored as a keyed hash. `access: agents` keys reach the public agents API only. With `app_id` the key acts for that app\'s end users (`X-End-User-Id`). The owner is the caller, or another user named by `user_id` (the server\'s id) or by `user_subject` (the `sub` of their user tokens: the key then acts as the very user those tokens do); not both (422). Another user than yourself is for administrators. Full access only.',
  })
  @ApiBody({
    type: CreateApiKeyDto,
    examples: {
      agents: { summary: 'A key for the public agents API only', value: CREATE_API_KEY_EXAMPLE },
      subject: { summary: 'A key for the user whose tokens carry sub "alice" (administrators)', value: CREATE_API_KEY_FOR_SUBJECT_EXAMPLE },
    },
  })
  @ApiCreatedResponse({ type: ApiKeyCreatedDto, description: 'The key, with its secret (shown this once).', example: API_KEY_CREATED_EXAMPLE })
  @ApiErrors('forbidden', 'validation_failed', 'invalid_json', 'api_key_limit', 'rate_limited')
  create(@CurrentPrincipal() principal: Principal, @Body() body: CreateApiKeyDto): Promise<ApiKeyCreatedDto> {
    assertFullAccess(principal);
    return this.keys.create(principal, body);
  }

  @Get()
  @ApiOperation({ operationId: 'listApiKeys', summary: 'List API keys', description: 'Without their secrets: the caller\'s own keys, or every key for administrators. Full access only.' })
  @ApiOkResponse({ type: ApiKeyListDto, description: 'The keys.', example: API_KEY_LIST_EXAMPLE })
  @ApiErrors('forbidden', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal): Promise<ApiKeyListDto> {
    assertFullAccess(principal);
    return this.keys.list(principal);
  }

  @Delete(':key_id')
  @ApiOperation({ operationId: 'revokeApiKey', summary: 'Revoke an API key', description: 'The key is refused from the next request on, on every api replica. Your own keys, or any key for administrators.' })
  @ApiParam({ name: 'key_id', description: 'The `id` of the key (not its secret).', schema: { type: 'string', format: 'uuid' } })
  @ApiOkResponse({ type: ApiKeyDeletedDto, description: 'Revoked.', example: API_KEY_DELETED_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'rate_limited')
  async revoke(@CurrentPrincipal() principal: Principal, @Param('key_id') keyId: string): Promise<ApiKeyDeletedDto> {
    assertFullAccess(principal);
    await this.keys.revoke(principal, keyId);
    return { id: keyId, object: 'api_key.deleted', deleted: true };
  }
}
