import { DomainError } from '#libs/errors';

export type AccessLevel = 'full' | 'agents';
export const ACCESS_LEVELS: readonly AccessLevel[] = ['full', 'agents'];

/**
 * What a product user may do beyond their own resources: `admin` everything, `operator` read every
 * session and act on it, `viewer` read every session. Granted by an administrator; end users never
 * hold one.
 */
export const ROLES = ['admin', 'operator', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

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
  /** The product user's role; null for a product user without one and for every app end user. */
  role: Role | null;
  /** `role === 'admin'`, the test most routes make. */
  isAdmin: boolean;
  /**
   * Set only by `onBehalfOfOwner` (the admin routes): an operator acting on another owner's
   * session. `userId` is then the session's owner, so the owner-scoped reads and locks of the use
   * cases find it; `actorId` and `keyId` stay the operator's, for the audit trail.
   */
  operatorFor?: { ownerId: string };
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

/** Deployment administration (other users' keys, agents, roles, the audit trail). */
export function assertAdmin(principal: Principal): void {
  assertFullAccess(principal);
  if (!principal.isAdmin) throw new DomainError('forbidden', 'This operation is for administrators');
}

/** Reading and acting on every owner's sessions (the admin session routes' writes): administrators and operators. */
export function assertOperator(principal: Principal): void {
  assertFullAccess(principal);
  if (principal.role !== 'admin' && principal.role !== 'operator') throw new DomainError('forbidden', 'This operation is for operators and administrators');
}

/** Reading every owner's sessions: administrators, operators and viewers. A viewer acts on nothing. */
export function assertViewer(principal: Principal): void {
  assertFullAccess(principal);
  if (principal.role === null) throw new DomainError('forbidden', 'This operation is for viewers, operators and administrators');
}

/**
 * The operator as the owner of another user's session: the one way past owner scoping, for the
 * admin routes only (every other route scopes by the caller's own `userId`). Checks the role
 * itself, so no caller can get such a principal without it.
 */
export function onBehalfOfOwner(operator: Principal, ownerId: string): Principal {
  assertOperator(operator);
  return { ...operator, userId: ownerId, appId: null, endUser: null, operatorFor: { ownerId } };
}

/**
 * The product's private routes (manual OCR pre-parse, image thumbnails) and the full audit of
 * a run (its exact model requests, with `assertAdmin`) are for a signed-in user's token; every API
 * key, full or agents, bound to an app or not, gets 403.
 */
export function assertUserToken(principal: Principal): void {
  if (principal.keyId !== null) throw new DomainError('user_token_required', 'This route is for user tokens (JWT) only; API keys cannot call it');
}
