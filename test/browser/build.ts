// Builds the dashboard's current sources (web/) into a fresh directory, which the server then
// serves (DASHBOARD_DIR): a test sees the code as it is now, never a stale web/dist, and never
// writes web/dist under a server that another test file runs.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";

const CONFIG = fileURLToPath(new URL("../../web/vite.config.ts", import.meta.url));

/** The directory holding the build (index.html and assets/). */
export async function buildDashboard(): Promise<string> {
  const outDir = await mkdtemp(join(tmpdir(), "agentplane-dashboard-"));
  await build({ configFile: CONFIG, logLevel: "warn", build: { outDir, emptyOutDir: true } });
  return outDir;
}
