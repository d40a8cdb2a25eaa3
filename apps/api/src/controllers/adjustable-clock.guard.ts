import { type CanActivate, type ExecutionContext, Injectable, mixin, type Type } from '@nestjs/common';
import { assertAdmin, type Principal } from '#libs/auth';
import { AppConfig } from '#libs/config';
import { DomainError } from '#libs/errors';

/**
 * A guard for a test clock's route (the usage clock, the lifecycle clock): the route exists only
 * where the deployment lets that clock move (`adjustable` reads its setting); elsewhere it is not
 * found. Where it exists it is for administrators, refused (403) before its body is read, as every
 * admin route is.
 */
export function AdjustableClockGuard(route: string, adjustable: (config: AppConfig) => boolean): Type<CanActivate> {
  @Injectable()
  class ClockAdjustable implements CanActivate {
    constructor(private readonly config: AppConfig) {}

    canActivate(context: ExecutionContext): boolean {
      if (!adjustable(this.config)) throw new DomainError('route_not_found', `No route for PUT ${route}`);
      const principal = context.switchToHttp().getRequest<{ principal?: Principal }>().principal;
      if (!principal) throw new DomainError('unauthorized', 'Missing credentials');
      assertAdmin(principal);
      return true;
    }
  }
  return mixin(ClockAdjustable);
}
