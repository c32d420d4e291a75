// The real server in this process, like test/support/server.ts, but on a database and a
// key-value store the fault test opened itself (through a proxy, on its own Redis, ...).
import type { Database } from "../../../services/database.js";
import type { Database as DatabaseHandle } from "../../../services/platform/db.js";
import type { KeyValueStore } from "../../../services/platform/kv.js";
import { createLogger } from "../../../services/platform/logger.js";
import { startServer, type RunningServer } from "../../../services/server.js";
import { testServerConfig } from "../../support/server.js";

export async function startServerOn(
  database: DatabaseHandle<Database>,
  kv: KeyValueStore,
  env: Record<string, string> = {},
): Promise<RunningServer & { restUrl: string }> {
  const config = testServerConfig(env);
  const server = await startServer(config, createLogger(config.logLevel), { database, kv, workers: false });
  return { ...server, restUrl: server.restUrl ?? "" };
}
