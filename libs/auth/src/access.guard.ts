import { type CanActivate, type ExecutionContext, Injectable, SetMetadata, createParamDecorator } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { DomainError } from '#libs/errors';
import type { Principal } from './principal.js';

const PUBLIC_ROUTE = 'auth:public';

/** Marks a route that needs no credentials (health, docs). */
export const PublicRoute = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);

export type AuthedRequest = Request & { principal?: Principal };

/**
 * Every route not marked public needs a principal. The api authenticates in a middleware that
 * runs before the body is read (an unauthenticated request never costs a body parse); this guard
 * only refuses a route reached without one.
 */
@Injectable()
export class AccessGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, [context.getHandler(), context.getClass()])) return true;
    if (!context.switchToHttp().getRequest<AuthedRequest>().principal) throw new DomainError('unauthorized', 'Missing credentials: send Authorization: Bearer <API key or user token>');
    return true;
  }
}

export const CurrentPrincipal = createParamDecorator((_data: unknown, context: ExecutionContext): Principal => {
  const principal = context.switchToHttp().getRequest<AuthedRequest>().principal;
  if (!principal) throw new DomainError('unauthorized', 'Missing credentials');
  return principal;
});
