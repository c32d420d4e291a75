// Where the benchmark's data lives: a scratch database created on DATABASE_URL's server (dropped
// at the end), or an embedded PGlite data directory; migrated, filled with the data set and
// analysed before the service starts.
import { join } from "node:path";
import { sql } from "kysely";
import pg from "pg";
import { pino } from "pino";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { openDatabase } from "../services/platform/db.js";
import { migrateToLatest } from "../services/platform/migrator.js";
import { writeDataset, type Dataset } from "./dataset.js";

const log = (line: string) => process.stderr.write(`[bench] ${line}\n`);

export interface Storage {
  /** What the service and the bare handler are given. */
  env: { DATABASE_URL: string; DATA_DIR: string };
  /** Pids of the Postgres backends serving the scratch database (none when embedded). */
  backendPids(): Promise<number[]>;
  description: string;
  /** Ends the monitoring connection. */
  close(): Promise<void>;
  drop(): Promise<void>;
}

/** One statement on the server's maintenance connection (creating and dropping databases). */
export async function admin(serverUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

/** Creates the scratch database (or embedded data directory), migrates it and writes the data set. */
export async function prepareStorage(
  options: { users: number; days: number },
  workDir: string,
): Promise<{ storage: Storage; dataset: Dataset }> {
  const logger = pino({ level: "warn" });
  const serverUrl = process.env.DATABASE_URL || undefined;
  let storage: Storage;
  if (serverUrl) {
    const name = `agentplane_bench_${Date.now()}_${process.pid}`;
    await admin(serverUrl, `create database ${pg.escapeIdentifier(name)}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    // A connection of our own to ask which backends serve the scratch database (for their CPU time).
    const monitor = new pg.Client({ connectionString: serverUrl });
    await monitor.connect();
    storage = {
      env: { DATABASE_URL: url.toString(), DATA_DIR: join(workDir, "data") },
      description: `Postgres, scratch database ${name}`,
      backendPids: async () =>
        (await monitor.query<{ pid: number }>("select pid from pg_stat_activity where datname = $1", [name])).rows.map(
          (r) => r.pid,
        ),
      close: () => monitor.end(),
      drop: () => admin(serverUrl, `drop database if exists ${pg.escapeIdentifier(name)} with (force)`),
    };
  } else {
    storage = {
      env: { DATABASE_URL: "", DATA_DIR: join(workDir, "data") },
      description: `embedded PGlite in ${join(workDir, "data")} (inside the service process)`,
      backendPids: async () => [],
      close: async () => {},
      drop: async () => {},
    };
  }
  let database: Awaited<ReturnType<typeof openDatabase<Database>>>;
  try {
    database = await openDatabase<Database>({
      databaseUrl: storage.env.DATABASE_URL || undefined,
      dataDir: storage.env.DATA_DIR,
      logger,
    });
  } catch (err) {
    await storage.close();
    await storage.drop();
    throw err;
  }
  try {
    await migrateToLatest(database.db, migrations, logger);
    const started = Date.now();
    const dataset = await writeDataset(database.db, { users: options.users, days: options.days });
    // Planner statistics, as a database in service has them (autovacuum would take a minute).
    await sql`analyze`.execute(database.db);
    log(
      `data set written in ${((Date.now() - started) / 1000).toFixed(1)} s: ${dataset.users} users, ${dataset.sessions} sessions ` +
        `(${dataset.sessionIds.length} top-level), ${dataset.messages} messages, ${dataset.events ?? "?"} telemetry events over ${options.days} days`,
    );
    return { storage, dataset };
  } catch (err) {
    await database.close();
    await storage.close();
    await storage.drop();
    throw err;
  } finally {
    await database.close();
  }
}
