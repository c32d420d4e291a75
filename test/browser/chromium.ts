// Debian's Chromium (`apt-get install chromium`), driven by playwright-core: the browser tests
// and `npm run screenshots` use the system browser, never a downloaded build. Each launch gets a
// fresh profile directory, removed when the browser closes.
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export const chromiumMissing = !existsSync(CHROMIUM);

/** Flags for a quiet, offline-friendly headless run (no sync, updates, QUIC or first-run UI). */
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(viewport = { width: 1440, height: 900 }): Promise<Browser> {
  const profile = await mkdtemp(join(tmpdir(), "agentplane-chromium-"));
  // A persistent context is how playwright takes a profile directory of our choosing (it refuses
  // --user-data-dir among the args).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport,
  });
  return {
    context,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
