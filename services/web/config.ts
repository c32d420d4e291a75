// The web module's section of the configuration: where the dashboard's build is read from.
import { isAbsolute, join } from "node:path";
import { ConfigError, type Env } from "../platform/config.js";
import { packageRoot } from "./files.js";

export interface WebConfig {
  /**
   * DASHBOARD_DIR, default web/dist in the package (what `npm run build:web` writes): the
   * dashboard's build, read once at start. Absent, / answers 404 saying how to build it.
   */
  readonly dashboardDir: string;
}

export function loadWebConfig(env: Env): WebConfig {
  const dir = env.DASHBOARD_DIR;
  if (dir === undefined || dir === "") return { dashboardDir: join(packageRoot(), "web", "dist") };
  if (!isAbsolute(dir)) throw new ConfigError("DASHBOARD_DIR", `must be an absolute path, got "${dir.slice(0, 80)}"`);
  return { dashboardDir: dir };
}
