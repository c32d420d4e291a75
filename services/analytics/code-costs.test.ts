// /code and /costs through an in-memory router transport, over a real test database with the
// clock pinned: events of every kind that feeds them (native and OpenTelemetry-sourced, with and
// without a reported cost, priced and unpriced models), rolled up, and the answers compared with
// values the test computes from the same events by itself.
import { Code, createClient, type Client } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlerTransport, rejection } from "../../test/support/handlers.js";
import { AnalyticsService } from "../../gen/agentplane/analytics/v1/analytics_pb.js";
import { createTestDatabase, type TestDatabase } from "../../test/support/database.js";
import type { Database } from "../database.js";
import { migrations } from "../migrations.js";
import { createOrganization, createUser } from "../organization/queries.js";
import type { Role } from "../platform/context.js";
import type { EventSource, IncomingEvent } from "./ingest/events.js";
import { ingestEvents } from "./ingest/ingest.js";
import { createAnalyticsService } from "./read/handlers.js";
import { removeModelPrice, setModelPrice } from "./rollup/days.js";
import { rollupOrganization } from "./rollup/rollup.js";

const NOW = Date.parse("2027-03-01T08:00:00Z");
const D1 = "2027-02-10";
const D2 = "2027-02-11";
const RANGE = { startDate: D1, endDate: D2 };
/** US dollars per million tokens: input, output, cache read, cache write. */
const PRICE = { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 };
const PRICED = "priced-model";
const UNPRICED = "unpriced-model";

type Sourced = { event: IncomingEvent; source: EventSource };

describe("/code and /costs", () => {
  let database: TestDatabase<Database>;
  let orgId: string;
  let otherOrg: string;
  let ann: string;
  let ben: string;
  let olga: string;
  let clients: Record<Role, Client<typeof AnalyticsService>>;
  let other: Client<typeof AnalyticsService>;
  let events: Sourced[];
  const emails = new Map<string, string>();

  const base = (org: string, user: string, extra: Partial<IncomingEvent>): IncomingEvent => ({
    type: "git_commit",
    time: `${D1}T10:00:00Z`,
    orgId: org,
    userId: user,
    client: "terminal-ui",
    ...extra,
  });
  const lines = (org: string, user: string, added: number, removed: number, language?: string): Sourced => ({
    event: base(org, user, {
      type: "lines_changed",
      ...(added ? { linesAdded: added } : {}),
      ...(removed ? { linesRemoved: removed } : {}),
      ...(language ? { language, path: `src/x.${language.slice(0, 2)}` } : {}),
    }),
    source: "native",
  });
  const decision = (user: string, d: "accept" | "reject", tool: string, language?: string): Sourced => ({
    event: base(orgId, user, { type: "edit_decision", decision: d, tool, ...(language ? { language } : {}) }),
    source: "native",
  });
  const usage = (
    org: string,
    user: string,
    modelId: string,
    tokens: [number, number, number, number],
    extra: Partial<IncomingEvent> = {},
    source: EventSource = "native",
  ): Sourced => ({
    event: base(org, user, {
      type: "model_usage",
      modelId,
      modelTier: "standard",
      inputTokens: tokens[0],
      outputTokens: tokens[1],
      cacheReadTokens: tokens[2],
      cacheWriteTokens: tokens[3],
      ...extra,
    }),
    source,
  });

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    orgId = (await createOrganization(database.db, { name: "Code and costs" })).id;
    otherOrg = (await createOrganization(database.db, { name: "Other" })).id;
    ann = (await createUser(database.db, { orgId, email: "ann@code.test", role: "owner" })).id;
    ben = (await createUser(database.db, { orgId, email: "ben@code.test", role: "member" })).id;
    olga = (await createUser(database.db, { orgId: otherOrg, email: "olga@other.test", role: "owner" })).id;
    emails.set(ann, "ann@code.test").set(ben, "ben@code.test").set(olga, "olga@other.test");
    const deps = { db: database.db, now: () => NOW };
    const transportAs = (org: string, userId: string, role: Role) =>
      handlerTransport((router) => router.service(AnalyticsService, createAnalyticsService(deps)), {
        orgId: org,
        userId,
        role,
      });
    clients = {
      owner: createClient(AnalyticsService, transportAs(orgId, ann, "owner")),
      manager: createClient(AnalyticsService, transportAs(orgId, ann, "manager")),
      member: createClient(AnalyticsService, transportAs(orgId, ben, "member")),
      guest: createClient(AnalyticsService, transportAs(orgId, ben, "guest")),
    };
    other = createClient(AnalyticsService, transportAs(otherOrg, olga, "owner"));

    events = [
      lines(orgId, ann, 10, 2, "typescript"),
      lines(orgId, ann, 5, 0),
      lines(orgId, ben, 0, 7, "python"),
      decision(ann, "accept", "Edit", "typescript"),
      decision(ann, "accept", "Edit", "typescript"),
      decision(ann, "reject", "Write", "typescript"),
      decision(ben, "reject", "Edit", "python"),
      decision(ben, "accept", "NotebookEdit"),
      // Priced by the table; then the same model with a cost the client reported (which wins).
      usage(orgId, ann, PRICED, [1_000_000, 100_000, 2_000_000, 10_000]),
      usage(orgId, ann, PRICED, [5_000_000, 5_000_000, 0, 0], { costUsd: 0.25 }),
      // No price and no reported cost: unpriced tokens, no cost; with a reported cost: that cost.
      usage(orgId, ben, UNPRICED, [500, 50, 7, 3]),
      usage(orgId, ben, UNPRICED, [1_000, 100, 0, 0], { costUsd: 1.1 }),
      // One session reported both as a metric and as log events: the log events count.
      usage(orgId, ann, PRICED, [0, 0, 0, 0], { costUsd: 99, sessionId: "s9" }, "otlp_metric"),
      usage(orgId, ann, PRICED, [0, 0, 0, 0], { costUsd: 0.5, sessionId: "s9" }, "otlp_log"),
      // A metric of a session without log events counts.
      usage(orgId, ben, PRICED, [0, 0, 0, 0], { costUsd: 0.125, sessionId: "s10" }, "otlp_metric"),
      // Another organization's day.
      lines(otherOrg, olga, 1000, 0, "go"),
      usage(otherOrg, olga, PRICED, [1, 1, 1, 1], { costUsd: 7 }),
    ];
    await setModelPrice(database.db, {
      model_id: PRICED,
      input_per_million: PRICE.input,
      output_per_million: PRICE.output,
      cache_read_per_million: PRICE.cacheRead,
      cache_write_per_million: PRICE.cacheWrite,
    });
    for (const source of ["native", "otlp_metric", "otlp_log"] as const) {
      const batch = events.filter((e) => e.source === source).map((e) => e.event);
      const result = await ingestEvents(database.db, batch, NOW, { source });
      expect(result.rejected).toEqual([]);
    }
    for (const org of [orgId, otherOrg]) await rollupOrganization(database.db, org, [D1, D2], { through: D2 });
  }, 60_000);

  afterAll(async () => {
    await database?.drop();
  });

  // ---- the reference: the metrics' definitions applied to the test's own events ----

  /** The events of the organization that count: a metric's usage drops when its session has log usage. */
  const counted = (org: string) => {
    const mine = events.filter((e) => e.event.orgId === org);
    const logSessions = new Set(
      mine.filter((e) => e.source === "otlp_log" && e.event.type === "model_usage").map((e) => e.event.sessionId ?? ""),
    );
    return mine
      .filter(
        (e) =>
          !(e.event.type === "model_usage" && e.source === "otlp_metric" && logSessions.has(e.event.sessionId ?? "")),
      )
      .map((e) => e.event);
  };
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const codeOf = (es: IncomingEvent[]) => {
    const accepted = es.filter((e) => e.type === "edit_decision" && e.decision === "accept").length;
    const rejected = es.filter((e) => e.type === "edit_decision" && e.decision === "reject").length;
    return {
      lines_added: sum(es.filter((e) => e.type === "lines_changed").map((e) => e.linesAdded ?? 0)),
      lines_removed: sum(es.filter((e) => e.type === "lines_changed").map((e) => e.linesRemoved ?? 0)),
      edits_accepted: accepted,
      edits_rejected: rejected,
    };
  };
  const tokensOf = (e: IncomingEvent) =>
    (e.inputTokens ?? 0) + (e.outputTokens ?? 0) + (e.cacheReadTokens ?? 0) + (e.cacheWriteTokens ?? 0);
  const costOf = (e: IncomingEvent) => {
    if (e.costUsd !== undefined) return e.costUsd;
    if (e.modelId !== PRICED) return 0;
    return (
      (e.inputTokens! * PRICE.input +
        e.outputTokens! * PRICE.output +
        e.cacheReadTokens! * PRICE.cacheRead +
        e.cacheWriteTokens! * PRICE.cacheWrite) /
      1e6
    );
  };
  const costsOf = (es: IncomingEvent[]) => {
    const usages = es.filter((e) => e.type === "model_usage");
    return {
      cost_usd: sum(usages.map(costOf)),
      reported_cost_usd: sum(usages.map((e) => e.costUsd ?? 0)),
      unpriced_tokens: sum(
        usages.filter((e) => e.costUsd === undefined && e.modelId !== PRICED).map((e) => tokensOf(e)),
      ),
    };
  };
  const keys = (es: IncomingEvent[], key: (e: IncomingEvent) => string) => [...new Set(es.map(key))].sort();
  const codeEvents = (org: string) =>
    counted(org).filter((e) => e.type === "lines_changed" || e.type === "edit_decision");
  const rate = (c: { edits_accepted: number; edits_rejected: number }) =>
    c.edits_accepted + c.edits_rejected > 0 ? c.edits_accepted / (c.edits_accepted + c.edits_rejected) : 0;
  /** Costs are rounded to millionths of a dollar. */
  const expectCosts = (actual: unknown, expected: Record<string, number>) => {
    const a = actual as Record<string, number>;
    for (const [k, v] of Object.entries(expected))
      if (k === "unpriced_tokens") expect(a[k], k).toBe(v);
      else expect(a[k], k).toBeCloseTo(v, 6);
  };

  it("answers /code per day: totals, acceptance rate, by language and by user", async () => {
    const es = codeEvents(orgId);
    const total = codeOf(es);
    // The data really exercises the metric: both decisions, several languages and users, a language-less event.
    expect(total.edits_accepted * total.edits_rejected).toBeGreaterThan(0);
    const res = await clients.owner.getCode(RANGE);
    expect(res.meta).toMatchObject({ orgId, startDate: D1, endDate: D2 });
    expect(res.data.map((r) => r.date)).toEqual([D1, D2]);
    const languages = keys(es, (e) => e.language ?? "");
    expect(languages).toEqual(["", "python", "typescript"]);
    const users = keys(es, (e) => e.userId!);
    expect(res.data[0]).toEqual({
      date: D1,
      ...total,
      edit_acceptance_rate: rate(total),
      by_language: languages.map((language) => ({
        language,
        ...codeOf(es.filter((e) => (e.language ?? "") === language)),
      })),
      by_user: users.map((userId) => ({
        user_id: userId,
        user_email: emails.get(userId),
        ...codeOf(es.filter((e) => e.userId === userId)),
      })),
    });
    // A day without code events: zeros, a rate of 0 (not NaN), empty breakdowns.
    expect(res.data[1]).toEqual({
      date: D2,
      lines_added: 0,
      lines_removed: 0,
      edits_accepted: 0,
      edits_rejected: 0,
      edit_acceptance_rate: 0,
      by_language: [],
      by_user: [],
    });
  });

  it("flattens /code by language or by user", async () => {
    const es = codeEvents(orgId);
    const byLanguage = await clients.manager.getCode({ ...RANGE, groupBy: "language" });
    expect(byLanguage.data).toEqual(
      keys(es, (e) => e.language ?? "").map((language) => {
        const c = codeOf(es.filter((e) => (e.language ?? "") === language));
        return { date: D1, group_key: language, ...c, edit_acceptance_rate: rate(c) };
      }),
    );
    const byUser = await clients.owner.getCode({ ...RANGE, groupBy: "user" });
    expect(byUser.data).toEqual(
      keys(es, (e) => e.userId!).map((userId) => {
        const c = codeOf(es.filter((e) => e.userId === userId));
        return { date: D1, group_key: userId, ...c, edit_acceptance_rate: rate(c) };
      }),
    );
  });

  it("answers /costs per day from reported costs and prices, with unpriced tokens, by model and by user", async () => {
    const es = counted(orgId).filter((e) => e.type === "model_usage");
    const res = await clients.owner.getCosts(RANGE);
    expect(res.data.map((r) => r.date)).toEqual([D1, D2]);
    const day = res.data[0]!;
    const total = costsOf(es);
    expectCosts(day, total);
    // The metric's parts all count: priced, reported, the surviving metric; the dropped one (99) does not.
    expect(total.cost_usd).toBeGreaterThan(5);
    expect(total.cost_usd).toBeLessThan(99);
    expect(total.unpriced_tokens).toBe(560);
    const models = keys(es, (e) => e.modelId!);
    const byModel = day.by_model as Array<Record<string, unknown>>;
    expect(byModel.map((m) => m.model_id)).toEqual(models);
    models.forEach((m, i) => {
      expectCosts(byModel[i], costsOf(es.filter((e) => e.modelId === m)));
    });
    const users = keys(es, (e) => e.userId!);
    const byUser = day.by_user as Array<Record<string, unknown>>;
    expect(byUser.map((u) => [u.user_id, u.user_email])).toEqual(users.map((u) => [u, emails.get(u)]));
    users.forEach((u, i) => {
      expectCosts(byUser[i], costsOf(es.filter((e) => e.userId === u)));
    });
    expect(res.data[1]).toEqual({
      date: D2,
      cost_usd: 0,
      reported_cost_usd: 0,
      unpriced_tokens: 0,
      by_model: [],
      by_user: [],
    });
  });

  it("flattens /costs by model or by user", async () => {
    const es = counted(orgId).filter((e) => e.type === "model_usage");
    const byModel = await clients.owner.getCosts({ ...RANGE, groupBy: "model" });
    const models = keys(es, (e) => e.modelId!);
    expect(byModel.data.map((r) => [r.date, r.group_key])).toEqual(models.map((m) => [D1, m]));
    models.forEach((m, i) => {
      expectCosts(byModel.data[i], costsOf(es.filter((e) => e.modelId === m)));
    });
    const byUser = await clients.owner.getCosts({ ...RANGE, groupBy: "user" });
    const users = keys(es, (e) => e.userId!);
    expect(byUser.data.map((r) => [r.date, r.group_key])).toEqual(users.map((u) => [D1, u]));
    users.forEach((u, i) => {
      expectCosts(byUser.data[i], costsOf(es.filter((e) => e.userId === u)));
    });
  });

  it("refuses a group_by the endpoint does not have, naming the field", async () => {
    for (const groupBy of ["model", "LANGUAGE", "tool_name", "users"]) {
      const err = await rejection(clients.owner.getCode({ ...RANGE, groupBy }));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toMatch(/^group_by: must be one of "language", "user" or omitted/);
    }
    for (const groupBy of ["language", "Model", "client"]) {
      const err = await rejection(clients.owner.getCosts({ ...RANGE, groupBy }));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toMatch(/^group_by: must be one of "model", "user" or omitted/);
    }
  });

  it("applies the date rules of the other endpoints", async () => {
    const today = await rejection(clients.owner.getCosts({ startDate: D1, endDate: "2027-03-01" }));
    expect(today.code).toBe(Code.InvalidArgument);
    expect(today.rawMessage).toMatch(/^endDate: /);
    const reversed = await rejection(clients.owner.getCode({ startDate: D2, endDate: D1 }));
    expect(reversed.code).toBe(Code.InvalidArgument);
  });

  it("refuses members and guests", async () => {
    for (const role of ["member", "guest"] as const) {
      for (const call of [clients[role].getCode(RANGE), clients[role].getCosts(RANGE)]) {
        const err = await rejection(call);
        expect(err.code).toBe(Code.PermissionDenied);
        expect(err.rawMessage).toMatch(/owner or manager/);
      }
    }
  });

  it("shows each organization only its own data", async () => {
    const code = await other.getCode(RANGE);
    expect(code.meta?.orgId).toBe(otherOrg);
    expect(code.data[0]).toMatchObject({
      ...codeOf(codeEvents(otherOrg)),
      by_user: [expect.objectContaining({ user_id: olga })],
    });
    const costs = await other.getCosts(RANGE);
    expectCosts(costs.data[0], costsOf(counted(otherOrg).filter((e) => e.type === "model_usage")));
    expect((costs.data[0]!.by_user as unknown[]).length).toBe(1);
  });

  it("prices past days when they are rolled up again, not before", async () => {
    const costNow = async () =>
      (await clients.owner.getCosts({ startDate: D1, endDate: D1 })).data[0]!.cost_usd as number;
    const before = await costNow();
    await setModelPrice(database.db, {
      model_id: UNPRICED,
      input_per_million: 2,
      output_per_million: 4,
      cache_read_per_million: 1,
      cache_write_per_million: 1,
    });
    expect(await costNow()).toBe(before);
    await rollupOrganization(database.db, orgId, [D1], { through: D2 });
    // Ben's unpriced usage [500, 50, 7, 3] is priced now; his reported 1.1 stays as it was.
    expect(await costNow()).toBeCloseTo(before + (500 * 2 + 50 * 4 + 7 + 3) / 1e6, 6);
    const day = (await clients.owner.getCosts({ startDate: D1, endDate: D1 })).data[0]!;
    expect(day.unpriced_tokens).toBe(0);
    expect(await removeModelPrice(database.db, UNPRICED)).toBe(true);
    await rollupOrganization(database.db, orgId, [D1], { through: D2 });
    expect(await costNow()).toBeCloseTo(before, 6);
  });
});
