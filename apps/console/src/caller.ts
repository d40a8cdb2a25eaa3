import { createContext, useContext } from 'react';
import type { AgentsClient, Caller } from '#libs/sdk';

/** The signed-in client and who it is (`GET /api/v1/me`): pages show what the role may do. */
export interface Console {
  client: AgentsClient;
  caller: Caller;
}

export const ConsoleContext = createContext<Console | null>(null);

export function useConsole(): Console {
  const value = useContext(ConsoleContext);
  if (!value) throw new Error('useConsole outside the signed-in console');
  return value;
}

/** What a role may reach (the server decides; this only hides what would answer 403). */
export const may = {
  readEverySession: (caller: Caller) => caller.role !== null && caller.access === 'full' && caller.app_id === null,
  actOnEverySession: (caller: Caller) => (caller.role === 'admin' || caller.role === 'operator') && caller.access === 'full' && caller.app_id === null,
  administer: (caller: Caller) => caller.role === 'admin' && caller.access === 'full' && caller.app_id === null,
  manageOwnKeys: (caller: Caller) => caller.access === 'full' && caller.app_id === null,
};
