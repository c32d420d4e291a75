// A provisioning worker in a process of its own, so a test can kill it with SIGKILL in the
// middle of a step, as a crash or an OOM kill would. Prints "ready" once it polls.
//   node --import tsx test/support/provisioning-worker-process.ts <databaseUrl> <e2bApiUrl> <e2bApiKey> <leaseMs>
import { pino } from "pino";
import type { Database } from "../../services/database.js";
import { startProvisioningWorker } from "../../services/computers/provisioning-worker.js";
import { openDatabase } from "../../services/platform/db.js";
import { IN_MEMORY_DATA_DIR } from "../../services/platform/pglite.js";

const [databaseUrl, apiUrl, apiKey, leaseMs] = process.argv.slice(2);
if (!databaseUrl || !apiUrl || !apiKey || !leaseMs)
  throw new Error("usage: provisioning-worker-process.ts <databaseUrl> <e2bApiUrl> <e2bApiKey> <leaseMs>");
const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
// statement_timeout is a startup parameter the embedded database does not take; none is needed here.
const database = await openDatabase<Database>({
  databaseUrl,
  dataDir: IN_MEMORY_DATA_DIR,
  logger,
  statementTimeoutMs: 0,
  poolMax: 2,
});
startProvisioningWorker({
  db: database.db,
  e2b: { apiUrl, apiKey, sandboxUrl: apiUrl, template: "base" },
  logger,
  workerId: `child-${process.pid}`,
  pollIntervalMs: 50,
  leaseMs: Number(leaseMs),
});
process.stdout.write("ready\n");
