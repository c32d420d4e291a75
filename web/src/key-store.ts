// The API key, entered once per browser tab: kept in sessionStorage (gone when the tab closes),
// sent only in the Authorization header, never put in a URL.
const KEY = "agentplane.apiKey";

export function storedKey(): string | undefined {
  return sessionStorage.getItem(KEY) ?? undefined;
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY);
}
