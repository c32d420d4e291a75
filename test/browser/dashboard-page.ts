// Steps on the dashboard page that the browser tests and `npm run screenshots` share.
import type { Page } from "playwright-core";

/** Every panel of the page, by section id. */
export const PANELS = [
  "credits",
  "active-users",
  "active-by-client",
  "top-tools",
  "top-mcp-servers",
  "productivity",
  "users",
  "readiness",
  "sessions",
] as const;

/** Types the key into the form and opens the dashboard. */
export async function signIn(page: Page, key: string): Promise<void> {
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Open dashboard" }).click();
}

/** Waits until no panel is loading (each has shown data, an empty range, or an error). */
export async function panelsSettled(page: Page, timeout = 30_000): Promise<void> {
  // Locators, not waitForFunction: the page's Content-Security-Policy (no eval) refuses the latter.
  for (const id of PANELS) await page.locator(`#${id}[data-state]:not([data-state="loading"])`).waitFor({ timeout });
}

// The functions evaluated in the page are written as expressions: this project's TypeScript has
// no DOM types (services run on Node), and a string keeps them out of its type check.

/** Each panel's data-state. */
export async function panelStates(page: Page): Promise<Record<string, string | null>> {
  const states: Record<string, string | null> = {};
  for (const id of PANELS) states[id] = await page.getAttribute(`#${id}`, "data-state");
  return states;
}

/** What the page's debug mirror (web/src/debug.ts) holds at `path`, e.g. `charts["credits"]`. */
export function dashboardDebug<T>(page: Page, path: string): Promise<T> {
  return page.evaluate(`window.agentplaneDashboard.${path}`) as Promise<T>;
}

export function storedKey(page: Page): Promise<string | null> {
  return page.evaluate(`sessionStorage.getItem("agentplane.apiKey")`) as Promise<string | null>;
}

/** The focused element as "id: its label" (its <label>, else aria-label, else its text). */
export function focusedControl(page: Page): Promise<string | undefined> {
  return page.evaluate(`(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return undefined;
    const text = el.labels && el.labels.length > 0 ? el.labels[0].textContent : (el.getAttribute("aria-label") ?? el.textContent);
    return (el.id || el.tagName.toLowerCase()) + ": " + (text ?? "").trim();
  })()`) as Promise<string | undefined>;
}
