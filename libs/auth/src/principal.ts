/** Who is calling: every resource is scoped to `userId`; another user's resource is simply not found. */
export interface Principal {
  userId: string;
  keyId: string;
  scopes: string[];
}
