// The two analytics services through an in-memory router transport, over a real test database,
// with the clock pinned (so ranges only possible in the future can be tried today).
import { Code, createClient, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlerTransport, rejection } from "../../test/support/handlers.js";
import { AnalyticsService, TelemetryService } from "../../gen/agentplane/analytics/v1/analytics_pb.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization, createUser } from "../organization/queries.js";
import type { Role } from "../platform/context.js";
import { createAnalyticsService } from "./read/handlers.js";
import { createTelemetryService, MAX_INGEST_BATCH } from "./telemetry-handlers.js";

const NOW = Date.parse("2027-03-01T08:00:00Z");

describe("analytics handlers", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let userId: string;
  let clients: Record<Role, Client<typeof AnalyticsService>>;
  let telemetry: Client<typeof TelemetryService>;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    orgId = (await createOrganization(database.db, { name: "Handlers" })).id;
    userId = (await createUser(database.db, { orgId, email: "dev@example.test", role: "owner" })).id;
    const deps = { db: database.db, now: () => NOW };
    const transportAs = (role: Role) =>
      handlerTransport(
        (router) => {
          router.service(AnalyticsService, createAnalyticsService(deps));
          router.service(TelemetryService, createTelemetryService(deps));
        },
        { orgId, userId, role },
      );
    clients = {
      owner: createClient(AnalyticsService, transportAs("owner")),
      manager: createClient(AnalyticsService, transportAs("manager")),
      member: createClient(AnalyticsService, transportAs("member")),
      guest: createClient(AnalyticsService, transportAs("guest")),
    };
    telemetry = createClient(TelemetryService, transportAs("owner"));
  }, 60_000);

  afterAll(async () => {
    await database?.drop();
  });

  it("refuses members and guests", async () => {
    for (const role of ["member", "guest"] as const) {
      const err = await rejection(clients[role].getTokens({ startDate: "2026-03-01", endDate: "2026-03-01" }));
      expect(err.code).toBe(Code.PermissionDenied);
      expect(err.rawMessage).toMatch(/owner or manager/);
    }
    expect((await clients.manager.getTokens({ startDate: "2026-03-01", endDate: "2026-03-01" })).data).toHaveLength(1);
  });

  it("allows 366 days and refuses 367", async () => {
    const ok = await clients.owner.getActivity({ startDate: "2026-02-01", endDate: "2027-02-01" });
    expect(ok.data).toHaveLength(366);
    const err = await rejection(clients.owner.getActivity({ startDate: "2026-02-01", endDate: "2027-02-02" }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toMatch(/^endDate: the range may span at most 366 days/);
  });

  it("fills every day of the range without data with zeros and empty breakdowns", async () => {
    const res = await clients.owner.getTools({ startDate: "2026-03-01", endDate: "2026-03-02" });
    expect(res.data.map((r) => r.date)).toEqual(["2026-03-01", "2026-03-02"]);
    expect(res.data[0]).toMatchObject({
      tool_calls: 0,
      by_tool: [],
      autonomy_ratio_p90: 0,
      tool_autonomy_level_ratio: { auto_high: 0, auto_medium: 0, auto_low: 0, manual: 0 },
    });
    expect(
      (await clients.owner.getTools({ startDate: "2026-03-01", endDate: "2026-03-02", groupBy: "tool_name" })).data,
    ).toEqual([]);
  });

  it("validates limit and cursor of /users", async () => {
    for (const limit of [0, 101, -5]) {
      const err = await rejection(clients.owner.getUsers({ startDate: "2026-03-01", endDate: "2026-03-01", limit }));
      expect(err.rawMessage).toMatch(/^limit: must be an integer from 1 to 100/);
    }
    const err = await rejection(
      clients.owner.getUsers({ startDate: "2026-03-01", endDate: "2026-03-01", cursor: "x".repeat(300) }),
    );
    expect(err.rawMessage).toMatch(/^cursor: /);
  });

  it("asks the edge for a 304 when If-None-Match names the current ETag", async () => {
    let etag = "";
    await clients.owner.getProductivity(
      { startDate: "2026-03-01", endDate: "2026-03-03" },
      { onHeader: (h) => (etag = h.get("etag") ?? "") },
    );
    expect(etag).not.toBe("");
    let code: string | null = null;
    const res = await clients.owner.getProductivity(
      { startDate: "2026-03-01", endDate: "2026-03-03" },
      { headers: { "if-none-match": etag }, onHeader: (h) => (code = h.get("x-http-code")) },
    );
    expect(code).toBe("304");
    expect(res.data).toEqual([]);
  });

  it("ingests through TelemetryService with partial acceptance and duplicates", async () => {
    const event = {
      type: "message",
      time: "2027-02-27T10:00:00Z",
      orgId,
      userId,
      client: "web",
      role: "user",
      eventId: "h-1",
    };
    const res = await telemetry.ingest({ events: [event, { ...event }, { ...event, eventId: "h-2", role: "robot" }] });
    expect(res.accepted).toBe(1);
    expect(res.duplicates).toBe(1);
    expect(res.rejected).toEqual([expect.objectContaining({ index: 2, reason: expect.stringMatching(/^role: /) })]);
    const big = await rejection(
      telemetry.ingest({ events: Array.from({ length: MAX_INGEST_BATCH + 1 }, () => event) }),
    );
    expect(big.rawMessage).toMatch(/^events: at most/);

    const rolled = await telemetry.rollup({ fromDate: "2027-02-27", toDate: "2027-02-27", orgId });
    expect(rolled).toMatchObject({ days: 1, events: 1 });
    const activity = await clients.owner.getActivity({ startDate: "2027-02-27", endDate: "2027-02-28" });
    expect(activity.data.map((r) => [r.daily_active_users, r.user_messages, r.monthly_active_users])).toEqual([
      [1, 1, 1],
      [0, 0, 1],
    ]);
  });

  it("gives a /users page a new ETag when a rollup changes its rows, and each page its own", async () => {
    const day = "2027-02-20";
    const range = { startDate: day, endDate: day, limit: 1 };
    const etagOf = async (req: typeof range & { cursor?: string }) => {
      let etag = "";
      const res = await clients.owner.getUsers(req, { onHeader: (h) => (etag = h.get("etag") ?? "") });
      return { etag, res };
    };
    const message = { type: "message", time: `${day}T10:00:00Z`, orgId, userId, client: "web", role: "user" };
    await telemetry.ingest({ events: [{ ...message, eventId: "u-1" }] });
    await telemetry.rollup({ fromDate: day, toDate: day, orgId });
    const first = await etagOf(range);
    expect(first.res.data.map((r) => r.messages)).toEqual([1]);
    // The same rows again: the same validator.
    await telemetry.rollup({ fromDate: day, toDate: day, orgId });
    expect((await etagOf(range)).etag).toBe(first.etag);

    // A late event changes the day's row: a client holding the old ETag gets the new page.
    await telemetry.ingest({ events: [{ ...message, eventId: "u-2", time: `${day}T11:00:00Z` }] });
    await telemetry.rollup({ fromDate: day, toDate: day, orgId });
    let code: string | null = null;
    const fresh = await clients.owner.getUsers(range, {
      headers: { "if-none-match": first.etag },
      onHeader: (h) => (code = h.get("x-http-code")),
    });
    expect(code).toBeNull();
    expect(fresh.data.map((r) => r.messages)).toEqual([2]);
    const second = await etagOf(range);
    expect(second.etag).not.toBe(first.etag);

    // Another page of the same range (another cursor or limit) is another representation.
    expect((await etagOf({ ...range, cursor: userId })).etag).not.toBe(second.etag);
    expect((await etagOf({ ...range, limit: 2 })).etag).not.toBe(second.etag);
  });

  it("rolls up finished days only", async () => {
    const err = await rejection(telemetry.rollup({ fromDate: "2027-02-28", toDate: "2027-03-01" }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toMatch(/^to_date: must not be after 2027-02-28/);
  });
});
