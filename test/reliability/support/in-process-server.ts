// The real server in this process, like test/support/server.ts, but on a database and a
// key-value store the fault test opened itself (through a proxy, on its own Redis, ...).
import type { Database } from "../../../services/database.js";
import { loadConfig } from "../../../services/config.js";
import type { Database as DatabaseHandle } from "../../../services/platform/db.js";
import type { KeyValueStore } from "../../../services/platform/kv.js";
import { createLogger } from "../../../services/platform/logger.js";
import { startServer, type RunningServer } from "../../../services/server.js";

export async function startServerOn(
  database: DatabaseHandle<Database>,
  kv: KeyValueStore,
  env: Record<string, string> = {},
): Promise<RunningServer & { restUrl: string }> {
  const config = loadConfig({
    PORT: "0",
    GRPC_PORT: "0",
    INTERNAL_GRPC_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    SEED_DEMO: "false",
    ...env,
  });
  const server = await startServer(config, createLogger(config.logLevel), { database, kv, workers: false });
  return { ...server, restUrl: server.restUrl ?? "" };
}
