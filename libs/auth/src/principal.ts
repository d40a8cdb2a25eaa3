import { DomainError } from '#libs/errors';

export type AccessLevel = 'full' | 'agents';
export const ACCESS_LEVELS: readonly AccessLevel[] = ['full', 'agents'];

/**
 * Who is calling. Every resource is scoped to `userId`: the product user, or — through an
 * app-bound key — the app's end user acting (the default one when no X-End-User-Id is sent).
 * Another principal's resource is simply not found.
 */
export interface Principal {
  userId: string;
  /** The product user behind the call: the key's owner, or the JWT subject's user. */
  actorId: string;
  /** null for a JWT. */
  keyId: string | null;
  access: AccessLevel;
  /** The app of an app-bound key (never from a client header). */
  appId: string | null;
  /** The end user's id within the app ('' for the app's default end user); null when not acting for an app. */
  endUser: string | null;
  isAdmin: boolean;
  /** Per-key overrides of the deployment's limits. */
  limits: { perMinute: number | null; streams: number | null };
}

/** App end users never see or run private agents; product users see their own. */
export function mayUsePrivateAgents(principal: Principal): boolean {
  return principal.appId === null;
}

/** The principal as a viewer of saved agents. */
export function agentViewerOf(principal: Principal): { userId: string; mayUsePrivate: boolean } {
  return { userId: principal.userId, mayUsePrivate: mayUsePrivateAgents(principal) };
}

/** Administrative routes are for full-access product users; an `agents` key or an app's end user gets 403. */
export function assertFullAccess(principal: Principal): void {
  if (principal.access !== 'full' || principal.appId !== null) throw new DomainError('forbidden', 'This operation needs a full-access API key or a user token, not bound to an app');
}

/** Deployment administration (other users' keys, the audit trail). */
export function assertAdmin(principal: Principal): void {
  assertFullAccess(principal);
  if (!principal.isAdmin) throw new DomainError('forbidden', 'This operation is for administrators');
}

/**
 * The product's private routes (001: manual OCR pre-parse, image thumbnails) are for a signed-in
 * user's token; every API key, full or agents, bound to an app or not, gets 403.
 */
export function assertUserToken(principal: Principal): void {
  if (principal.keyId !== null) throw new DomainError('user_token_required', 'This route is for user tokens (JWT) only; API keys cannot call it');
}
