import { type CanActivate, type ExecutionContext, Injectable, SetMetadata, createParamDecorator } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { DomainError } from '#libs/errors';
import { AuthService } from './auth.service.js';
import type { Principal } from './principal.js';

const PUBLIC_ROUTE = 'auth:public';

/** Marks a route that needs no API key (health, docs). */
export const PublicRoute = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);

type AuthedRequest = Request & { principal?: Principal };

/** `Authorization: Bearer <key>` on every route not marked public. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly auth: AuthService,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [context.getHandler(), context.getClass()])) return true;
    const req = context.switchToHttp().getRequest<AuthedRequest>();
    const match = /^Bearer\s+(\S+)\s*$/i.exec(req.header('authorization') ?? '');
    if (!match?.[1]) throw new DomainError('unauthorized', 'Missing API key: send Authorization: Bearer <key>');
    const principal = await this.auth.authenticate(match[1]);
    if (!principal) throw new DomainError('unauthorized', 'Invalid API key');
    if (!principal.scopes.includes('full') && !principal.scopes.includes('agents')) {
      throw new DomainError('forbidden', 'This API key has no agents permission');
    }
    req.principal = principal;
    return true;
  }
}

export const CurrentPrincipal = createParamDecorator((_data: unknown, context: ExecutionContext): Principal => {
  const principal = context.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new DomainError('unauthorized', 'Missing API key');
  return principal;
});
