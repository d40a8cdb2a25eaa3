import { DomainError } from '#libs/errors';

/** Who is calling: every resource is scoped to `userId`; another user's resource is simply not found. */
export interface Principal {
  userId: string;
  keyId: string;
  scopes: string[];
}

/** Administrative routes are for full-access callers; an `agents`-level key gets 403. */
export function assertFullAccess(principal: Principal): void {
  if (!principal.scopes.includes('full')) throw new DomainError('forbidden', 'This operation needs a full-access API key');
}
