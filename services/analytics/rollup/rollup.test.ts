// The rollup schedule over a real test database with a pinned clock: catch-up of missed days at
// start, quiet days after activity, late events, concurrent runs, and the platform's telemetry
// sink inside callers' transactions.
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/support/database.js";
import type { Database } from "../../database.js";
import { migrations } from "../../migrations.js";
import { createOrganization, createUser } from "../../organization/queries.js";
import type { IncomingEvent } from "../ingest/events.js";
import { ingestEvents } from "../ingest/ingest.js";
import { rollupOrganization } from "./rollup.js";
import { rollupDays } from "./days.js";
import { runTick } from "./scheduler.js";
import { createTelemetrySink } from "../ingest/sink.js";

const at = (iso: string) => Date.parse(iso);

describe("rollup schedule", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let alice: string;
  let bob: string;
  const event = (userId: string, time: string, extra: Partial<IncomingEvent> = {}): IncomingEvent => ({
    type: "git_commit",
    time,
    orgId,
    userId,
    client: "web",
    ...extra,
  });
  const day = async (d: string) =>
    (
      await sql<{
        daily_active_users: number;
        weekly_active_users: number;
        monthly_active_users: number;
        git_commits: number;
      }>`
        select daily_active_users, weekly_active_users, monthly_active_users, git_commits from analytics_daily where org_id = ${orgId} and day = ${d}::date`.execute(
        database.db,
      )
    ).rows[0];

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    orgId = (await createOrganization(database.db, { name: "Schedule" })).id;
    alice = (await createUser(database.db, { orgId, email: "alice@example.test", role: "owner" })).id;
    bob = (await createUser(database.db, { orgId, email: "bob@example.test", role: "member" })).id;
  }, 60_000);

  afterAll(async () => {
    await database?.drop();
  });

  it("catches up every day since the last sweep, including quiet ones", async () => {
    // Ingested on the day itself: no pending mark; the sweep after midnight finds it.
    await ingestEvents(database.db, [event(alice, "2026-05-05T10:00:00Z")], at("2026-05-05T12:00:00Z"));
    const first = await runTick(database.db, at("2026-05-06T00:05:00Z"));
    expect(first.days).toEqual(["2026-05-01", "2026-05-02", "2026-05-03", "2026-05-04", "2026-05-05"]);
    expect(await day("2026-05-05")).toEqual({
      daily_active_users: 1,
      weekly_active_users: 1,
      monthly_active_users: 1,
      git_commits: 1,
    });

    // The server was down for three nights: the next start sweeps all three days.
    await ingestEvents(database.db, [event(alice, "2026-05-06T10:00:00Z")], at("2026-05-06T12:00:00Z"));
    const second = await runTick(database.db, at("2026-05-09T07:30:00Z"));
    expect(second.days).toEqual(["2026-05-06", "2026-05-07", "2026-05-08"]);
    expect(await day("2026-05-06")).toMatchObject({ daily_active_users: 1, git_commits: 1 });
    // Quiet days after activity still carry the trailing counts.
    expect(await day("2026-05-08")).toEqual({
      daily_active_users: 0,
      weekly_active_users: 1,
      monthly_active_users: 1,
      git_commits: 0,
    });

    // Nothing left: another tick the same day does nothing.
    expect(await runTick(database.db, at("2026-05-09T08:05:00Z"))).toEqual({
      days: [],
      organizationDays: 0,
      events: 0,
    });
  });

  it("rolls up late events of past days at the next tick, with the windows they change", async () => {
    // Bob's events for May 5th arrive on the 9th (a client that was offline).
    const late = await ingestEvents(
      database.db,
      [event(bob, "2026-05-05T15:00:00Z"), event(bob, "2026-05-05T16:00:00Z")],
      at("2026-05-09T09:00:00Z"),
    );
    expect(late.accepted).toBe(2);
    expect(
      (await sql<{ n: number }>`select count(*) as n from analytics_pending_days`.execute(database.db)).rows[0]?.n,
    ).toBe(1);
    const tick = await runTick(database.db, at("2026-05-09T10:05:00Z"));
    expect(tick.days).toEqual([]);
    expect(tick.events).toBe(3);
    expect(await day("2026-05-05")).toEqual({
      daily_active_users: 2,
      weekly_active_users: 2,
      monthly_active_users: 2,
      git_commits: 3,
    });
    expect(await day("2026-05-08")).toMatchObject({ weekly_active_users: 2, monthly_active_users: 2 });
    expect(
      (await sql<{ n: number }>`select count(*) as n from analytics_pending_days`.execute(database.db)).rows[0]?.n,
    ).toBe(0);
  });

  // Two connections at once (a rollup's open transaction and an ingest): the embedded PGlite has one.
  it.skipIf(!process.env.TEST_DATABASE_URL)(
    `keeps the pending mark of events committed after its snapshot, for the next rollup${process.env.TEST_DATABASE_URL ? "" : " (skipped: needs TEST_DATABASE_URL)"}`,
    async () => {
      const org = (await createOrganization(database.db, { name: "Interlock" })).id;
      const ann = (await createUser(database.db, { orgId: org, email: "ann@interlock.test", role: "owner" })).id;
      const commit = (time: string): IncomingEvent => ({
        type: "git_commit",
        time,
        orgId: org,
        userId: ann,
        client: "web",
      });
      const now = at("2026-05-20T09:00:00Z");
      const marks = async () =>
        (
          await sql<{ n: number }>`select count(*)::int as n from analytics_pending_days where org_id = ${org}`.execute(
            database.db,
          )
        ).rows[0]?.n;
      const commits = async () =>
        (
          await sql<{
            n: number;
          }>`select git_commits::int as n from analytics_daily where org_id = ${org} and day = '2026-05-10'`.execute(
            database.db,
          )
        ).rows[0]?.n;

      // Two batches of the same past day: two marks, and neither waited for the other.
      await Promise.all([
        ingestEvents(database.db, [commit("2026-05-10T08:00:00Z")], now),
        ingestEvents(database.db, [commit("2026-05-10T09:00:00Z")], now),
      ]);
      expect(await marks()).toBe(2);

      // A rollup takes its snapshot; a third batch of that day commits after it.
      await database.db
        .transaction()
        .setIsolationLevel("repeatable read")
        .execute(async (trx) => {
          await sql`select 1`.execute(trx);
          await ingestEvents(database.db, [commit("2026-05-10T10:00:00Z")], now);
          await rollupDays(trx, org, ["2026-05-10"]);
        });
      // The rollup counted what its snapshot saw and deleted those marks only.
      expect(await commits()).toBe(2);
      expect(await marks()).toBe(1);

      // The next rollup counts the late batch and clears its mark.
      await rollupOrganization(database.db, org, ["2026-05-10"], { through: "2026-05-19" });
      expect(await commits()).toBe(3);
      expect(await marks()).toBe(0);
    },
  );

  it("lets concurrent runs take turns with the same result", async () => {
    const days = ["2026-05-05", "2026-05-06"];
    const before = await day("2026-05-05");
    const runs = await Promise.all(
      [1, 2, 3].map(() => rollupOrganization(database.db, orgId, days, { through: "2026-05-08" })),
    );
    expect(runs.map((r) => r.events)).toEqual([4, 4, 4]);
    expect(await day("2026-05-05")).toEqual(before);
  });

  it("recomputes a range of several chunks in parallel, with windows across their boundaries", async () => {
    const org = (await createOrganization(database.db, { name: "Chunks" })).id;
    const ann = (await createUser(database.db, { orgId: org, email: "ann@example.test", role: "owner" })).id;
    const ben = (await createUser(database.db, { orgId: org, email: "ben@example.test", role: "member" })).id;
    const at = (userId: string, time: string): IncomingEvent => ({
      type: "git_commit",
      time,
      orgId: org,
      userId,
      client: "web",
    });
    // Seven chunks of at most 7 days: 06-05..06-11, ..., 07-03..07-09, 07-10..07-16, 07-17..07-20.
    // The windows of 07-05 count Ann's 06-10 and those of 07-10 and 07-12 count 07-05 and 07-08:
    // days of other chunks, recomputed at the same time.
    const events = [
      at(ann, "2026-06-05T09:00:00Z"),
      at(ann, "2026-06-10T09:00:00Z"),
      at(ben, "2026-07-05T23:00:00Z"),
      at(ann, "2026-07-08T09:00:00Z"),
    ];
    expect((await ingestEvents(database.db, events, Date.parse("2026-07-21T00:00:00Z"))).accepted).toBe(4);
    const days: string[] = [];
    for (let d = Date.parse("2026-06-05T00:00:00Z"); d <= Date.parse("2026-07-20T00:00:00Z"); d += 86_400_000)
      days.push(new Date(d).toISOString().slice(0, 10));
    expect((await rollupOrganization(database.db, org, days, { through: "2026-07-20" })).events).toBe(4);
    const counts = async (d: string) =>
      (
        await sql<{ dau: number; wau: number; mau: number }>`
          select daily_active_users as dau, weekly_active_users as wau, monthly_active_users as mau
          from analytics_daily where org_id = ${org} and day = ${d}::date`.execute(database.db)
      ).rows[0];
    expect(await counts("2026-07-05")).toEqual({ dau: 1, wau: 1, mau: 2 });
    // The second chunk's days count the first chunk's users.
    expect(await counts("2026-07-08")).toEqual({ dau: 1, wau: 2, mau: 2 });
    expect(await counts("2026-07-10")).toEqual({ dau: 0, wau: 2, mau: 2 });
    expect(await counts("2026-07-12")).toEqual({ dau: 0, wau: 1, mau: 2 });
  });

  it("stores the platform's events with the caller's transaction, or not at all", async () => {
    const sink = createTelemetrySink(database.db);
    const count = async () =>
      (await sql<{ n: number }>`select count(*) as n from analytics_events where type = 'message'`.execute(database.db))
        .rows[0]?.n;
    const message = {
      type: "message",
      time: new Date().toISOString(),
      orgId,
      userId: alice,
      client: "web",
      role: "user",
    };
    await expect(
      database.db.transaction().execute(async (trx) => {
        await sink.record([message], trx);
        throw new Error("the write failed");
      }),
    ).rejects.toThrow("the write failed");
    expect(await count()).toBe(0);
    await database.db.transaction().execute((trx) => sink.record([message], trx));
    await sink.record([
      { ...message, eventId: "sink-1" },
      { ...message, eventId: "sink-1" },
    ]);
    expect(await count()).toBe(2);
    await expect(sink.record([{ ...message, role: "narrator" }])).rejects.toThrow(/role: /);
    await expect(sink.record([{ ...message, userId: "nobody" }])).rejects.toThrow(/does not belong/);
  });
});
