import { Body, Controller, Delete, Get, Param, Put, Query, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiBody, ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { assertAdmin, assertFullAccess, CurrentPrincipal, type Principal } from '#libs/auth';
import { DomainError } from '#libs/errors';
import { PutSecretDto, SECRET_NAME_PATTERN, SecretDeletedDto, SecretDto, SecretListDto, SecretScopeQueryDto, SecretsStore } from '#libs/secrets';
import { PUT_SECRET_EXAMPLE, SECRET_EXAMPLE } from '../openapi/examples.js';
import { TAGS } from '../openapi/tags.js';
import { ApiErrors } from './api-errors.decorator.js';

const SECRET_NAME = { name: 'name', description: 'The secret\'s name, as an MCP tool\'s `auth.secret` names it: 1–64 of A-Z, a-z, 0-9, `_`, `.` and `-`.', schema: { type: 'string', pattern: SECRET_NAME_PATTERN.source, example: 'github-token' } };

@ApiTags(TAGS.admin.name)
@ApiBearerAuth()
@Controller('api/v1/admin/secrets')
export class AdminSecretsController {
  constructor(private readonly secrets: SecretsStore) {}

  @Get()
  @ApiOperation({
    operationId: 'listSecrets',
    summary: 'List named secrets',
    description: 'Names and versions, never values: the caller\'s own secrets (`scope=own`, the default), or the shared ones public agents use (`scope=shared`, administrators). Full access only.',
  })
  @ApiOkResponse({ type: SecretListDto, description: 'The secrets of the scope, by name.', example: { object: 'list', data: [SECRET_EXAMPLE] } })
  @ApiErrors('forbidden', 'validation_failed', 'rate_limited')
  list(@CurrentPrincipal() principal: Principal, @Query() query: SecretScopeQueryDto): Promise<SecretListDto> {
    return this.secrets.list(ownerOf(principal, query));
  }

  @Put(':name')
  @ApiOperation({
    operationId: 'putSecret',
    summary: 'Create or rotate a named secret',
    description:
      'Stores the value sealed under SECRETS_KEY (422 `not_implemented` where the deployment has none). Agents reference it by name in an MCP tool\'s `auth`, never by value; the worker reads it at call time, so a replacement reaches running sessions (their next request to the server; an OAuth token already issued is used until it expires or is refused). A private agent\'s references resolve in its owner\'s secrets, a public agent\'s in the shared ones. Audited (`secret.created`, `secret.replaced`), without the value. Full access only; `scope=shared` for administrators.',
  })
  @ApiParam(SECRET_NAME)
  @ApiBody({ type: PutSecretDto, examples: { token: { summary: 'A bearer token', value: PUT_SECRET_EXAMPLE } } })
  @ApiOkResponse({ type: SecretDto, description: 'Replaced: the next `version`.', example: { ...SECRET_EXAMPLE, version: 2 } })
  @ApiCreatedResponse({ type: SecretDto, description: 'Created.', example: SECRET_EXAMPLE })
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'invalid_json', 'not_implemented', 'rate_limited')
  async put(
    @CurrentPrincipal() principal: Principal,
    @Param('name') name: string,
    @Query() query: SecretScopeQueryDto,
    @Body() body: PutSecretDto,
    @Res({ passthrough: true }) res: Response,
  ): Promise<SecretDto> {
    const owner = ownerOf(principal, query);
    const { secret, created } = await this.secrets.put({ actorId: principal.actorId, keyId: principal.keyId }, owner, checkedName(name), body.value);
    res.status(created ? 201 : 200);
    return secret;
  }

  @Delete(':name')
  @ApiOperation({
    operationId: 'deleteSecret',
    summary: 'Delete a named secret',
    description: 'The value is gone at once; calls of agents that reference it fail from then on (the model reads that the server is unavailable). Audited (`secret.deleted`). Full access only; `scope=shared` for administrators.',
  })
  @ApiParam(SECRET_NAME)
  @ApiOkResponse({ type: SecretDeletedDto, description: 'Deleted.', example: { name: 'github-token', object: 'secret.deleted', deleted: true } })
  @ApiErrors('forbidden', 'not_found', 'validation_failed', 'rate_limited')
  async delete(@CurrentPrincipal() principal: Principal, @Param('name') name: string, @Query() query: SecretScopeQueryDto): Promise<SecretDeletedDto> {
    const owner = ownerOf(principal, query);
    await this.secrets.delete({ actorId: principal.actorId, keyId: principal.keyId }, owner, checkedName(name));
    return { name, object: 'secret.deleted', deleted: true };
  }
}

/** Whose secrets a call names: the calling product user's own, or (administrators) the shared ones. */
function ownerOf(principal: Principal, query: SecretScopeQueryDto): string | null {
  if (query.scope === 'shared') {
    assertAdmin(principal);
    return null;
  }
  assertFullAccess(principal);
  return principal.actorId;
}

function checkedName(name: string): string {
  if (!SECRET_NAME_PATTERN.test(name)) throw DomainError.validation([{ field: 'name', errors: [`must match ${SECRET_NAME_PATTERN}`] }]);
  return name;
}
