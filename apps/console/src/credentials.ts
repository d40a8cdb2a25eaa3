import { AgentsClient } from '#libs/sdk';

// The key (or token) lives in this tab's sessionStorage only: closing the tab signs out, and no
// other tab or later visit reads it.
const STORAGE_KEY = 'yuxi.console.credential';

export function storedCredential(): string | null {
  return sessionStorage.getItem(STORAGE_KEY);
}

export function storeCredential(credential: string): void {
  sessionStorage.setItem(STORAGE_KEY, credential);
}

export function forgetCredential(): void {
  sessionStorage.removeItem(STORAGE_KEY);
}

/** A client of the API that served this page, signed with the stored credential. */
export function clientFor(credential: string): AgentsClient {
  return new AgentsClient({ baseUrl: window.location.origin, apiKey: credential });
}
