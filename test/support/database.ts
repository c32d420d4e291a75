// A fresh, migrated database per caller: a uniquely named database on TEST_DATABASE_URL's server
// (so parallel test files never share tables), else an in-memory PGlite. Both go through
// openDatabase, the same path the server uses.
import type { Migration } from "kysely";
import pg from "pg";
import { pino, type Logger } from "pino";
import { openDatabase, type Database } from "../../services/platform/db.js";
import { migrateToLatest } from "../../services/platform/migrator.js";
import { IN_MEMORY_DATA_DIR } from "../../services/platform/pglite.js";

export interface TestDatabase<DB> extends Database<DB> {
  /** The database's name on the test server, or null for PGlite. */
  readonly name: string | null;
  /** Closes the handle and drops the database. Idempotent. */
  drop(): Promise<void>;
}

export function testLogger(): Logger {
  return pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
}

let seq = 0;

/** A unique database name: agentplane_test_<pid>_<seq>_<random>. */
export function uniqueDatabaseName(): string {
  return `agentplane_test_${process.pid}_${++seq}_${Math.random().toString(36).slice(2, 8)}`;
}

export async function createTestDatabase<DB>(
  migrations: Record<string, Migration>,
  options: { logger?: Logger; serverUrl?: string | undefined } = {},
): Promise<TestDatabase<DB>> {
  const logger = options.logger ?? testLogger();
  const serverUrl = "serverUrl" in options ? options.serverUrl : process.env.TEST_DATABASE_URL;
  let name: string | null = null;
  let database: Database<DB>;
  if (serverUrl) {
    name = uniqueDatabaseName();
    await admin(serverUrl, `create database ${pg.escapeIdentifier(name)}`);
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    try {
      database = await openDatabase<DB>({ databaseUrl: url.toString(), dataDir: IN_MEMORY_DATA_DIR, logger });
    } catch (error) {
      await admin(serverUrl, `drop database if exists ${pg.escapeIdentifier(name)}`).catch(() => {});
      throw error;
    }
  } else {
    database = await openDatabase<DB>({ dataDir: IN_MEMORY_DATA_DIR, logger });
  }

  try {
    await migrateToLatest(database.db, migrations, logger);
  } catch (error) {
    await database.close().catch(() => {});
    if (serverUrl && name)
      await admin(serverUrl, `drop database if exists ${pg.escapeIdentifier(name)} with (force)`).catch(() => {});
    throw error;
  }

  let dropping: Promise<void> | null = null;
  const drop = async () => {
    await database.close();
    if (serverUrl && name) await admin(serverUrl, `drop database if exists ${pg.escapeIdentifier(name)} with (force)`);
  };
  return { ...database, name, drop: () => (dropping ??= drop()) };
}

async function admin(serverUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  client.on("error", () => {});
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end().catch(() => {});
  }
}
