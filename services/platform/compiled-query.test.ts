import { sql, type Kysely, type Migration, type Transaction } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import { compiledQuery } from "./compiled-query.js";

interface Db {
  pets: { id: number; owner: string; name: string; age: number };
}
type Exec = Kysely<Db> | Transaction<Db>;

const petsMigration: Migration = {
  async up(db) {
    await sql`create table pets (id int4 primary key, owner text not null, name text not null, age int4 not null)`.execute(
      db,
    );
  },
};

describe("compiledQuery", () => {
  let database: TestDatabase<Db>;

  beforeAll(async () => {
    database = await createTestDatabase<Db>({ "0001_pets": petsMigration });
    await database.db
      .insertInto("pets")
      .values([
        { id: 1, owner: "ann", name: "Rex", age: 3 },
        { id: 2, owner: "ann", name: "Tom", age: 9 },
        { id: 3, owner: "bob", name: "Rex", age: 5 },
        { id: 4, owner: "bob", name: "Ida", age: 1 },
      ])
      .execute();
  }, 60_000);

  afterAll(async () => {
    await database?.drop();
  });

  // Constants of the query (the age bound, the limit) stay in place among the arguments.
  const build = (db: Exec, owner: string, name: string) =>
    db
      .selectFrom("pets")
      .select(["id", "name"])
      .where("owner", "=", owner)
      .where("age", "<", 8)
      .where("name", "<>", name)
      .orderBy("id")
      .limit(10);

  it("answers as the query built anew each time, for every argument", async () => {
    const find = compiledQuery(2, (db: Exec, owner: string, name: string) => build(db, owner, name));
    for (const [owner, name] of [
      ["ann", "Tom"],
      ["bob", "Rex"],
      ["bob", "nobody"],
      ["carl", "Rex"],
    ] as const) {
      const expected = await build(database.db, owner, name).execute();
      expect((await find(database.db, owner, name)).rows, `${owner} ${name}`).toEqual(expected);
    }
    expect((await find(database.db, "bob", "Rex")).rows).toEqual([{ id: 4, name: "Ida" }]);
  });

  it("runs in a transaction it is given", async () => {
    const find = compiledQuery(1, (db: Exec, owner: string) =>
      db.selectFrom("pets").select("id").where("owner", "=", owner).orderBy("id"),
    );
    await database.db.transaction().execute(async (trx) => {
      await trx.insertInto("pets").values({ id: 5, owner: "dan", name: "Zed", age: 2 }).execute();
      expect((await find(trx, "dan")).rows).toEqual([{ id: 5 }]);
      await trx.deleteFrom("pets").where("id", "=", 5).execute();
    });
  });

  it("refuses a call with the wrong number of arguments, and an argument the query never uses", async () => {
    const find = compiledQuery(1, (db: Exec, owner: string) =>
      db.selectFrom("pets").select("id").where("owner", "=", owner),
    );
    await expect((find as (...a: unknown[]) => Promise<unknown>)(database.db, "ann", "extra")).rejects.toThrow(
      "expected 1 arguments, got 2",
    );
    const unused = compiledQuery(2, (db: Exec, owner: string, _name: string) =>
      db.selectFrom("pets").select("id").where("owner", "=", owner),
    );
    await expect(unused(database.db, "ann", "Rex")).rejects.toThrow("1 argument(s) never reach the query");
  });
});
