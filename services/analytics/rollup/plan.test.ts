// Which organizations a rollup visits, over a real test database: the skip scan of the raw
// events' (org_id, UTC day) index must find exactly the organizations with events on the days
// asked, across month partitions and UTC day boundaries.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/support/database.js";
import type { Database } from "../../database.js";
import { migrations } from "../../migrations.js";
import { createOrganization, createUser } from "../../organization/queries.js";
import { ingestEvents } from "../ingest/ingest.js";
import { rollupOrganization } from "./rollup.js";
import { organizationsToRollUp, organizationsWithEvents, organizationsWithRawEvents } from "./plan.js";

describe("organizations with raw events", () => {
  let database: TestDatabase<Database>;
  const orgs: Array<{ id: string; user: string }> = [];
  const now = Date.parse("2026-07-20T12:00:00Z");

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    for (let i = 0; i < 5; i++) {
      const id = (await createOrganization(database.db, { name: `Org ${i}` })).id;
      orgs.push({
        id,
        user: (await createUser(database.db, { orgId: id, email: `u${i}@example.test`, role: "owner" })).id,
      });
    }
    const at = (i: number, time: string) => ({
      type: "git_commit",
      time,
      orgId: orgs[i]!.id,
      userId: orgs[i]!.user,
      client: "web",
    });
    const result = await ingestEvents(
      database.db,
      [
        // Org 0: the last second of May 31 and July 1 (UTC), around the month partitions' edge.
        at(0, "2026-05-31T23:59:59.999Z"),
        at(0, "2026-07-01T00:00:00Z"),
        // Org 1: June 15 only, written with an offset: its UTC day is June 15.
        at(1, "2026-06-15T20:30:00-03:00"),
        at(1, "2026-06-15T00:00:01Z"),
        // Org 2: many days of June, June 15 among them.
        ...Array.from({ length: 20 }, (_, d) => at(2, `2026-06-${String(d + 1).padStart(2, "0")}T12:00:00Z`)),
        // Org 3: June 14 and 16, never June 15.
        at(3, "2026-06-14T23:59:59Z"),
        at(3, "2026-06-16T00:00:00Z"),
        // Org 4: no events at all.
      ],
      now,
    );
    expect(result.rejected).toEqual([]);
  }, 60_000);

  afterAll(async () => {
    await database?.drop();
  });

  const ids = (...indexes: number[]) => indexes.map((i) => orgs[i]!.id).sort();

  it("finds the organizations with events on a day, and only those", async () => {
    expect((await organizationsWithEvents(database.db, "2026-06-15")).sort()).toEqual(ids(1, 2));
    expect((await organizationsWithEvents(database.db, "2026-06-14")).sort()).toEqual(ids(2, 3));
    expect((await organizationsWithEvents(database.db, "2026-06-16")).sort()).toEqual(ids(2, 3));
    expect((await organizationsWithEvents(database.db, "2026-05-31")).sort()).toEqual(ids(0));
    expect((await organizationsWithEvents(database.db, "2026-07-01")).sort()).toEqual(ids(0));
    expect(await organizationsWithEvents(database.db, "2026-06-30")).toEqual([]);
    expect(await organizationsWithEvents(database.db, "2026-06-01")).toEqual([orgs[2]!.id]);
  });

  it("finds them over a range, across month partitions, each once and in order", async () => {
    expect(await organizationsWithRawEvents(database.db, "2026-05-01", "2026-07-31")).toEqual(ids(0, 1, 2, 3));
    expect(await organizationsWithRawEvents(database.db, "2026-06-21", "2026-06-30")).toEqual([]);
    expect(await organizationsWithRawEvents(database.db, "2026-06-16", "2026-07-01")).toEqual(ids(0, 2, 3));
    expect(await organizationsWithRawEvents(database.db, "2026-06-01", "2026-06-13")).toEqual(ids(2));
  });

  it("adds the organizations with aggregates in the 29 days before a rollup's range", async () => {
    // Nothing is rolled up yet: only raw events count.
    expect(await organizationsToRollUp(database.db, "2026-06-15", "2026-06-15")).toEqual(ids(1, 2));
    // Org 0's May 31, rolled up: its active users count in the monthly windows of the 29 days
    // after, so its rollup wrote rows for those quiet days (through June 29), and a range within
    // 29 days of any of them visits org 0 again.
    await rollupOrganization(database.db, orgs[0]!.id, ["2026-05-31"], { through: "2026-07-19" });
    expect(await organizationsToRollUp(database.db, "2026-06-15", "2026-06-15")).toEqual(ids(0, 1, 2));
    expect(await organizationsToRollUp(database.db, "2026-06-30", "2026-06-30")).toEqual(ids(0));
    expect(await organizationsToRollUp(database.db, "2026-07-02", "2026-07-10")).toEqual(ids(0));
    expect(await organizationsToRollUp(database.db, "2026-08-01", "2026-08-05")).toEqual([]);
  });
});
