import { sql, type Kysely, type Migration } from "kysely";
import { afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, testLogger, type TestDatabase } from "../../test/support/database.js";
import { openDatabase, type Database } from "./db.js";
import { MigrationError, migrateToLatest } from "./migrator.js";

const logger = testLogger();
const mode = process.env.TEST_DATABASE_URL ? "postgres" : "pglite";

/** Each migration records itself, so a double application shows. */
function recording(name: string, body?: (db: Kysely<any>) => Promise<void>): Migration {
  return {
    async up(db) {
      await sql`create table if not exists applied (name text not null, at timestamptz not null default now())`.execute(
        db,
      );
      await body?.(db);
      await sql`insert into applied (name) values (${name})`.execute(db);
    },
  };
}

const base: Record<string, Migration> = {
  "0001_one": recording("0001_one", async (db) => {
    await sql`create table one (id int primary key)`.execute(db);
  }),
  "0002_two": recording("0002_two", async (db) => {
    await sql`create table two (id int primary key)`.execute(db);
  }),
};

async function appliedNames(db: Kysely<any>): Promise<string[]> {
  return (await sql<{ name: string }>`select name from applied order by name`.execute(db)).rows.map((r) => r.name);
}

describe(`migrateToLatest (${mode})`, () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });
  async function fresh(): Promise<TestDatabase<any>> {
    const database = await createTestDatabase<any>({});
    cleanup.push(() => database.drop());
    return database;
  }

  it("applies pending migrations in order and is idempotent", async () => {
    const { db } = await fresh();
    expect(await migrateToLatest(db, base, logger)).toEqual({ applied: ["0001_one", "0002_two"] });
    expect(await migrateToLatest(db, base, logger)).toEqual({ applied: [] });
    const more = { ...base, "0003_three": recording("0003_three") };
    expect(await migrateToLatest(db, more, logger)).toEqual({ applied: ["0003_three"] });
    expect(await appliedNames(db)).toEqual(["0001_one", "0002_two", "0003_three"]);
  });

  it("names the failing migration and leaves the schema as it was", async () => {
    const { db } = await fresh();
    await migrateToLatest(db, { "0001_one": base["0001_one"] as Migration }, logger);
    const broken = {
      ...base,
      "0003_broken": recording("0003_broken", async (db) => {
        await sql`alter table nowhere add column x int`.execute(db);
      }),
    };
    const error = await migrateToLatest(db, broken, logger).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationError);
    expect((error as MigrationError).migration).toBe("0003_broken");
    expect((error as Error).message).toMatch(/^migration "0003_broken" failed: .*nowhere/);
    // 0002 ran in the same transaction: rolled back too.
    expect(await appliedNames(db)).toEqual(["0001_one"]);
    expect((await sql<{ t: string | null }>`select to_regclass('two')::text as t`.execute(db)).rows[0]?.t).toBeNull();
  });

  it("refuses a record not listed in name order", async () => {
    const { db } = await fresh();
    const unordered = { "0002_two": base["0002_two"] as Migration, "0001_one": base["0001_one"] as Migration };
    await expect(migrateToLatest(db, unordered, logger)).rejects.toThrow(/"0002_two" is listed before "0001_one"/);
  });

  it("is safe when two processes migrate at once", async () => {
    const first = await fresh();
    // A second, independent pool and Kysely instance on the same database.
    const second: Database<any> = await openDatabase({ databaseUrl: first.url, dataDir: "memory://", logger });
    cleanup.push(() => second.close());
    const slow = {
      ...base,
      "0003_slow": recording("0003_slow", async (db) => {
        await sql`select pg_sleep(0.3)`.execute(db);
      }),
    };
    const [a, b] = await Promise.all([
      migrateToLatest(first.db, slow, logger),
      migrateToLatest(second.db, slow, logger),
    ]);
    expect([...a.applied, ...b.applied].sort()).toEqual(["0001_one", "0002_two", "0003_slow"]);
    expect(a.applied.length === 0 || b.applied.length === 0).toBe(true);
    expect(await appliedNames(first.db)).toEqual(["0001_one", "0002_two", "0003_slow"]);
  });

  it("is not cut short by the pool's statement timeout", async () => {
    const first = await fresh();
    const strict: Database<any> = await openDatabase({
      databaseUrl: first.url,
      dataDir: "memory://",
      logger,
      statementTimeoutMs: 100,
    });
    cleanup.push(() => strict.close());
    const slow = {
      "0001_slow": recording("0001_slow", async (db) => void (await sql`select pg_sleep(0.3)`.execute(db))),
    };
    expect(await migrateToLatest(strict.db, slow, logger)).toEqual({ applied: ["0001_slow"] });
    if (mode === "postgres") {
      // The timeout is back in force on the pool afterwards.
      await expect(sql`select pg_sleep(0.3)`.execute(strict.db)).rejects.toThrow(/statement timeout/);
    }
  });
});
