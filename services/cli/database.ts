// The CLI reaches the same database as the server: DATABASE_URL, or the embedded database —
// through the running server's socket when a server holds it (openDatabase handles that).
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import type { Config } from "../platform/config.js";
import { openDatabase, type Database as DatabaseHandle } from "../platform/db.js";
import type { Logger } from "../platform/logger.js";
import { migrateToLatest } from "../platform/migrator.js";

export async function withDatabase<T>(
  config: Config,
  logger: Logger,
  fn: (database: DatabaseHandle<Database>) => Promise<T>,
): Promise<T> {
  const database = await openDatabase<Database>({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger });
  try {
    await migrateToLatest(database.db, migrations, logger);
    return await fn(database);
  } finally {
    await database.close();
  }
}
