// The real server in this process on a fresh test database that it reaches through a PgProxy
// (faults, statement counts), with its own key-value store. For the tests that watch or
// disturb what goes to Postgres.
import type { Database } from "../../../services/database.js";
import { migrations } from "../../../services/migrations.js";
import { openDatabase, type Database as DatabaseHandle } from "../../../services/platform/db.js";
import type { KeyValueStore } from "../../../services/platform/kv.js";
import { IN_MEMORY_DATA_DIR } from "../../../services/platform/pglite.js";
import { createTestDatabase, testLogger, type TestDatabase } from "../../support/database.js";
import { createTestKv } from "../../support/kv.js";
import { startServerOn } from "./in-process-server.js";
import { startPgProxy, type PgProxy } from "./pg-proxy.js";

export interface ServerBehindProxy {
  readonly proxy: PgProxy;
  /** The test database, reached directly (not through the proxy). */
  readonly database: TestDatabase<Database>;
  /** The server's own handle, through the proxy. */
  readonly handle: DatabaseHandle<Database>;
  readonly kv: KeyValueStore;
  readonly server: Awaited<ReturnType<typeof startServerOn>>;
  close(): Promise<void>;
}

export async function startServerBehindProxy(
  options: { poolMax?: number; statementTimeoutMs?: number; env?: Record<string, string> } = {},
): Promise<ServerBehindProxy> {
  const upstream = new URL(process.env.TEST_DATABASE_URL!);
  const proxy = await startPgProxy(upstream.hostname, Number(upstream.port || 5432));
  const database = await createTestDatabase<Database>(migrations);
  const viaProxy = new URL(database.url);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  const handle = await openDatabase<Database>({
    databaseUrl: viaProxy.toString(),
    dataDir: IN_MEMORY_DATA_DIR,
    logger: testLogger(),
    ...(options.poolMax !== undefined ? { poolMax: options.poolMax } : {}),
    ...(options.statementTimeoutMs !== undefined ? { statementTimeoutMs: options.statementTimeoutMs } : {}),
  });
  const kv = await createTestKv();
  const server = await startServerOn(handle, kv, options.env);
  return {
    proxy,
    database,
    handle,
    kv,
    server,
    async close() {
      proxy.slow(0);
      await server.stop();
      await handle.close();
      await kv.close();
      await database.drop();
      await proxy.close();
    },
  };
}
