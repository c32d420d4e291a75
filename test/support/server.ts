// Starts the real server (every module and the REST edge by default) on ports 0, against a
// fresh test database (TEST_DATABASE_URL, else in-memory PGlite) and key-value store
// (TEST_REDIS_URL, else in-process). For end-to-end tests through the edge and over gRPC.
import type { Database } from "../../services/database.js";
import { migrations } from "../../services/migrations.js";
import { loadConfig } from "../../services/config.js";
import type { Config } from "../../services/platform/config.js";
import { createLogger } from "../../services/platform/logger.js";
import type { KeyValueStore } from "../../services/platform/kv.js";
import { startServer, type RunningServer } from "../../services/server.js";
import { createTestDatabase } from "./database.js";
import { createTestKv } from "./kv.js";

export interface TestServer extends RunningServer {
  readonly restUrl: string;
  readonly kv: KeyValueStore;
  /** Stops the server and drops its database. */
  close(): Promise<void>;
}

/** A test server's configuration: ports picked by the system, quiet logs, no demo data; `env` overrides. */
export function testServerConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
    PORT: "0",
    GRPC_PORT: "0",
    INTERNAL_GRPC_PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    SEED_DEMO: "false",
    // Tests that need a runner run their own (sessions are claimed by the test's runner calls).
    DEMO_RUNNER: "false",
    ...env,
  });
}

export async function startTestServer(env: Record<string, string> = {}): Promise<TestServer> {
  const database = await createTestDatabase<Database>(migrations);
  const kv = await createTestKv();
  const config = testServerConfig(env);
  const logger = createLogger(config.logLevel);
  const server = await startServer(config, logger, { database, kv, workers: env.WORKERS === "true" });
  return {
    ...server,
    restUrl: server.restUrl ?? "",
    kv,
    async close() {
      await server.stop();
      await kv.close();
      await database.drop();
    },
  };
}
