/**
 * Schema migrations: kysely's `Migrator` over an explicit record of migrations (no filesystem
 * scanning). Migrations are frozen once written; a schema change is a new entry.
 *
 * Kysely applies migrations in the order of their names (it sorts them), so the record must list
 * them in that same order; `migrateToLatest` refuses a record whose listed order differs rather
 * than silently apply them in another order. Prefix names with a sequence number or date.
 *
 * Concurrency: on Postgres the run holds kysely's migration lock (a session advisory lock) and
 * applies all pending migrations in one transaction, so two processes starting together apply
 * each migration once; on the embedded database the server runs one transaction at a time, which
 * gives the same guarantee. Since everything runs in one transaction, a failure leaves the schema
 * as it was before the run.
 */
import { Migrator, sql, type Kysely, type Migration, type MigrationResult } from "kysely";
import type { Logger } from "pino";

export interface MigrateResult {
  /** Names applied by this run, in order (empty when the schema was up to date). */
  applied: string[];
}

export class MigrationError extends Error {
  constructor(
    message: string,
    /** The migration that failed, when one did. */
    readonly migration: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "MigrationError";
  }
}

/** Checks the record (see the module comment); throws a MigrationError when it is unusable. */
export function assertMigrationsOrdered(migrations: Record<string, Migration>): void {
  const names = Object.keys(migrations);
  for (const [index, name] of names.entries()) {
    if (typeof migrations[name]?.up !== "function") {
      throw new MigrationError(`migration "${name}" has no up() function`, name);
    }
    const previous = names[index - 1];
    if (previous !== undefined && !(previous < name)) {
      throw new MigrationError(
        `migrations must be listed in ascending name order (kysely applies them sorted by name): "${previous}" is listed before "${name}"`,
        name,
      );
    }
  }
}

export async function migrateToLatest<DB>(
  db: Kysely<DB>,
  migrations: Record<string, Migration>,
  logger: Logger,
): Promise<MigrateResult> {
  assertMigrationsOrdered(migrations);
  const log = logger.child({ component: "migrator" });
  const started = Date.now();

  // One dedicated connection, without the pool's statement_timeout: a long migration (or waiting
  // for another process's migration lock) must not be cut short.
  const { error, results } = await db.connection().execute(async (connection) => {
    await sql`set statement_timeout = 0`.execute(connection);
    try {
      const migrator = new Migrator({
        db: connection,
        provider: { getMigrations: async () => migrations },
      });
      return await migrator.migrateToLatest();
    } finally {
      await sql`reset statement_timeout`.execute(connection).catch(() => {});
    }
  });

  const all: MigrationResult[] = results ?? [];
  if (error !== undefined) {
    const failed = all.find((result) => result.status === "Error")?.migrationName;
    const reason = error instanceof Error ? error.message : String(error);
    const message = failed
      ? `migration "${failed}" failed: ${reason} (no migration of this run was applied)`
      : `migrations failed: ${reason}`;
    log.error({ err: error, migration: failed }, message);
    throw new MigrationError(message, failed, { cause: error });
  }

  const applied = all.filter((result) => result.status === "Success").map((result) => result.migrationName);
  if (applied.length > 0) {
    log.info({ applied, ms: Date.now() - started }, `applied ${applied.length} migration(s)`);
  } else {
    log.debug("schema is up to date");
  }
  return { applied };
}
