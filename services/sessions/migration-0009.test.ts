// Migration 0009 (sessions request path): existing sessions get the root of their tree, and the
// previous release, which keeps serving during a rollout, keeps working on the new schema: its
// inserts get a root, its moves get the transaction IDs a listing compares with its snapshot.
import { sql, type Migration } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testLogger, type TestDatabase } from "../../test/support/database.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization, createUser } from "../organization/queries.js";
import { migrateToLatest } from "../platform/migrator.js";
import { insertSession } from "./session-queries.js";

describe("migration 0009", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let userId: string;

  // A session as the previous release inserts it: no root_id, a list clock version.
  const insertAsBefore = (id: string, parent: string | null) =>
    sql`insert into sessions (id, org_id, user_id, parent_session_id, client, autonomy_mode, list_version)
        values (${id}, ${orgId}, ${userId}, ${parent}, 'web', 'manual', 1)`.execute(database.db);

  beforeAll(async () => {
    const before: Record<string, Migration> = Object.fromEntries(
      Object.entries(migrations).filter(([name]) => name < "0009"),
    );
    database = await createTestDatabase<Database>(before);
    orgId = (await createOrganization(database.db, { name: "Old" })).id;
    userId = (await createUser(database.db, { orgId, email: "o@old.test", role: "owner" })).id;
    for (const [id, parent] of [
      ["a", null],
      ["a1", "a"],
      ["a11", "a1"],
      ["a12", "a1"],
      ["b", null],
    ] as const)
      await insertAsBefore(id, parent);
    await migrateToLatest(database.db, migrations, testLogger());
  });
  afterAll(() => database?.drop());

  const roots = () => database.db.selectFrom("sessions").select(["id", "root_id"]).orderBy("id").execute();

  it("gives existing sessions the root of their tree", async () => {
    expect(await roots()).toEqual([
      { id: "a", root_id: "a" },
      { id: "a1", root_id: "a" },
      { id: "a11", root_id: "a" },
      { id: "a12", root_id: "a" },
      { id: "b", root_id: "b" },
    ]);
  });

  it("gives sessions the previous release inserts a root", async () => {
    await insertAsBefore("a121", "a12");
    await insertAsBefore("c", null);
    expect((await roots()).filter((r) => ["a121", "c"].includes(r.id))).toEqual([
      { id: "a121", root_id: "a" },
      { id: "c", root_id: "c" },
    ]);
  });

  it("records the transactions of the previous release's moves", async () => {
    const xidOf = async (id: string) =>
      (await database.db.selectFrom("sessions").select("list_xid").where("id", "=", id).executeTakeFirstOrThrow())
        .list_xid;
    const before = await xidOf("b");
    // touchSession as the previous release wrote it: the clock, the history row, the session.
    const moved = await database.db.transaction().execute(async (trx) => {
      const { version } = await sql<{ version: number }>`
        insert into session_list_clocks (org_id, version) values (${orgId}, 1)
        on conflict (org_id) do update set version = session_list_clocks.version + 1 returning version`
        .execute(trx)
        .then((r) => r.rows[0]!);
      await sql`insert into session_list_history (org_id, session_id, old_version, old_updated_at, new_version)
                select org_id, id, list_version, updated_at, ${version} from sessions where id = 'b'`.execute(trx);
      await sql`update sessions set updated_at = now() + interval '1 minute', list_version = ${version} where id = 'b'`.execute(
        trx,
      );
      return (await sql<{ xid: string }>`select pg_current_xact_id()::text as xid`.execute(trx)).rows[0]!.xid;
    });
    expect(await xidOf("b")).toBe(moved);
    const history = await database.db
      .selectFrom("session_list_history")
      .select(["old_xid", "new_xid"])
      .where("session_id", "=", "b")
      .execute();
    expect(history).toEqual([{ old_xid: before, new_xid: moved }]);
    // A change that does not move the session (a lease renewal) keeps its transaction.
    await sql`update sessions set lease_owner = 'r' where id = 'b'`.execute(database.db);
    expect(await xidOf("b")).toBe(moved);
  });

  it("gives the new release's sessions a clock version the previous release can list", async () => {
    const row = await insertSession(database.db, {
      orgId,
      userId,
      parentSessionId: "a",
      title: null,
      computerId: null,
      settings: {},
      client: "web",
      autonomyMode: "manual",
    });
    expect(row.root_id).toBe("a");
    expect(row.list_version).toBe(0);
  });
});
