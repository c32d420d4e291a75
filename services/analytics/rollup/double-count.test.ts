// The double-count rule (rollup/plan.ts countedEvent): a client exporting both the token-usage
// metric and the api_request log events reports the same tokens twice; per organization, day and
// session the log events win, and a metric without log events of its session still counts.
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../test/support/database.js";
import type { Database } from "../../database.js";
import { migrations } from "../../migrations.js";
import { createOrganization, createUser } from "../../organization/queries.js";
import type { EventSource, IncomingEvent } from "../ingest/events.js";
import { ingestEvents } from "../ingest/ingest.js";
import { creditsUsedThisMonth } from "../../organization/credit-limits/balance.js";
import { rollupOrganization } from "./rollup.js";

const NOW = Date.parse("2026-05-20T09:00:00Z");

describe("model usage reported both as an OpenTelemetry metric and as log events", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let otherOrg: string;
  let ann: string;
  let olga: string;

  const usage = (org: string, user: string, time: string, input: number, sessionId?: string): IncomingEvent => ({
    type: "model_usage",
    time,
    orgId: org,
    userId: user,
    client: "terminal-ui",
    modelId: "claude-x",
    modelTier: "standard",
    inputTokens: input,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    ...(sessionId ? { sessionId } : {}),
  });
  const ingest = async (source: EventSource, events: IncomingEvent[]) => {
    const result = await ingestEvents(database.db, events, NOW, { source });
    expect(result.rejected).toEqual([]);
  };
  const dayRow = async (org: string, day: string) =>
    (
      await sql<{ input_tokens: number; events: number; user_input: number }>`
        select d.input_tokens, d.events,
          (select sum(m.input_tokens) from analytics_user_model_daily m where m.org_id = d.org_id and m.day = d.day) as user_input
        from analytics_daily d where d.org_id = ${org} and d.day = ${day}::date`.execute(database.db)
    ).rows[0];

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    orgId = (await createOrganization(database.db, { name: "Both ways" })).id;
    otherOrg = (await createOrganization(database.db, { name: "Elsewhere" })).id;
    ann = (await createUser(database.db, { orgId, email: "ann@both.test", role: "owner" })).id;
    olga = (await createUser(database.db, { orgId: otherOrg, email: "olga@elsewhere.test", role: "owner" })).id;
  }, 60_000);

  afterAll(async () => {
    await database?.drop();
  });

  it("counts the log events of a session and drops its metric; other sessions' metrics count", async () => {
    await ingest("otlp_metric", [
      usage(orgId, ann, "2026-05-10T09:00:00Z", 100, "s1"), // s1 has log events: dropped
      usage(orgId, ann, "2026-05-10T09:00:00Z", 70, "s2"), // no log events in s2: counts
      usage(orgId, ann, "2026-05-10T09:05:00Z", 8, "s3"), // counts, beside the native usage of s3
      usage(orgId, ann, "2026-05-10T09:10:00Z", 11), // no session, and log events without one: dropped
      usage(orgId, ann, "2026-05-11T09:00:00Z", 9, "s1"), // s1's log events were the day before: counts
    ]);
    await ingest("otlp_log", [
      usage(orgId, ann, "2026-05-10T08:59:00Z", 40, "s1"),
      usage(orgId, ann, "2026-05-10T08:59:30Z", 60, "s1"),
      usage(orgId, ann, "2026-05-10T09:09:00Z", 3),
      // Another organization's log events of a session named alike change nothing here.
      usage(otherOrg, olga, "2026-05-10T09:00:00Z", 1000, "s2"),
    ]);
    await ingest("native", [usage(orgId, ann, "2026-05-10T09:06:00Z", 5, "s3")]);

    await rollupOrganization(database.db, orgId, ["2026-05-10", "2026-05-11"], { through: "2026-05-19" });
    await rollupOrganization(database.db, otherOrg, ["2026-05-10"], { through: "2026-05-19" });

    // s1: 40 + 60 (logs), s2: 70, s3: 5 + 8, no session: 3.
    const counted = 40 + 60 + 70 + 5 + 8 + 3;
    // Eight rows stored that day, two of them dropped.
    expect(await dayRow(orgId, "2026-05-10")).toEqual({ input_tokens: counted, events: 6, user_input: counted });
    expect(await dayRow(orgId, "2026-05-11")).toEqual({ input_tokens: 9, events: 1, user_input: 9 });
    expect(await dayRow(otherOrg, "2026-05-10")).toEqual({ input_tokens: 1000, events: 1, user_input: 1000 });
  });

  it("counts them once in the credit balance of a day not rolled up yet", async () => {
    const carl = (await createUser(database.db, { orgId, email: "carl@both.test", role: "member" })).id;
    await ingest("otlp_metric", [
      usage(orgId, carl, "2026-05-15T09:00:00Z", 100, "s1"),
      usage(orgId, carl, "2026-05-15T09:00:00Z", 30, "s2"),
    ]);
    await ingest("otlp_log", [usage(orgId, carl, "2026-05-15T08:59:00Z", 40, "s1")]);
    // Input tokens only and no multiplier: credits are the tokens. s1's log events, s2's metric.
    expect(await creditsUsedThisMonth(database.db, orgId, carl, new Date(NOW))).toBe(40 + 30);
  });
});
