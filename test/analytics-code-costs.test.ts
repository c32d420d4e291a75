// /code and /costs end to end: the code and cost fields of telemetry ingested over gRPC
// (TelemetryService, @grpc/grpc-js, as snake_case JSON lines decode), rolled up over gRPC, read
// back through the REST edge and over the public gRPC port. Each row must decode as the typed row
// message analytics.proto declares for it (its json_names), and REST and gRPC must agree.
// (The metrics against values computed from the events: services/analytics/code-costs.test.ts.)
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AnalyticsService,
  CodeGroupRowSchema,
  CodeRowSchema,
  CostsGroupRowSchema,
  CostsRowSchema,
  TelemetryEventSchema,
  TelemetryService,
} from "../gen/agentplane/analytics/v1/analytics_pb.js";
import { setModelPrice } from "../services/analytics/rollup/days.js";
import {
  api,
  bearer,
  createTestOrg,
  createTestServiceAccount,
  createTestUser,
  type TestUser,
} from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";

const DAY = "2026-03-02";
const RANGE = `startDate=${DAY}&endDate=2026-03-03`;

let server: TestServer;
let telemetry: GrpcCaller;
let owner: TestUser;
let member: TestUser;

const get = (path: string, user: TestUser = owner) => api(server.restUrl, user.key, `/api/v1/analytics${path}`);

beforeAll(async () => {
  server = await startTestServer();
  const db = server.platform.db;
  const org = await createTestOrg(db, "Code and costs e2e");
  owner = await createTestUser(db, org, "owner");
  member = await createTestUser(db, org, "member");
  await setModelPrice(db, {
    model_id: "priced",
    input_per_million: 2,
    output_per_million: 10,
    cache_read_per_million: 0.2,
    cache_write_per_million: 2.5,
  });
  telemetry = grpcClient(TelemetryService, server.internalGrpcUrl, bearer(await createTestServiceAccount(db)));
  const common = { time: `${DAY}T10:00:00Z`, org_id: org, client: "terminal-ui" };
  const lines: JsonObject[] = [
    { ...common, user_id: owner.userId, type: "lines_changed", lines_added: 40, lines_removed: 4, language: "go" },
    { ...common, user_id: member.userId, type: "lines_changed", lines_removed: 9, path: "a/b.PY" },
    { ...common, user_id: owner.userId, type: "edit_decision", decision: "accept", tool: "Edit", language: "go" },
    { ...common, user_id: owner.userId, type: "edit_decision", decision: "reject", tool: "Write" },
    {
      ...common,
      user_id: owner.userId,
      type: "model_usage",
      model_id: "priced",
      model_tier: "standard",
      input_tokens: 1_000_000,
      output_tokens: 100_000,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
    },
    {
      ...common,
      user_id: member.userId,
      type: "model_usage",
      model_id: "reported",
      model_tier: "thinking",
      input_tokens: 10,
      output_tokens: 10,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      cost_usd: 0.75,
    },
    {
      ...common,
      user_id: member.userId,
      type: "model_usage",
      model_id: "unknown",
      model_tier: "standard",
      input_tokens: 300,
      output_tokens: 20,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
    },
  ];
  const res = await telemetry.call(TelemetryService.method.ingest, {
    events: lines.map((l) => fromJson(TelemetryEventSchema, l)),
  });
  expect(res.rejected).toEqual([]);
  await telemetry.call(TelemetryService.method.rollup, { fromDate: DAY, toDate: DAY });
}, 60_000);

afterAll(async () => {
  telemetry?.close();
  await server?.close();
});

describe("REST", () => {
  it("answers /code with rows of CodeRow, grouped rows of CodeGroupRow", async () => {
    const res = await get(`/code?${RANGE}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("etag")).toBeTruthy();
    const [day, quiet] = res.json.data as JsonObject[];
    fromJson(CodeRowSchema, day!);
    fromJson(CodeRowSchema, quiet!);
    expect(day).toMatchObject({
      date: DAY,
      lines_added: 40,
      lines_removed: 13,
      edits_accepted: 1,
      edits_rejected: 1,
      edit_acceptance_rate: 0.5,
    });
    expect((day!.by_language as JsonObject[]).map((l) => l.language)).toEqual(["", "go"]);
    for (const groupBy of ["language", "user"]) {
      const grouped = await get(`/code?${RANGE}&group_by=${groupBy}`);
      expect(grouped.status).toBe(200);
      expect(grouped.json.data).toHaveLength(2);
      for (const row of grouped.json.data as JsonObject[]) fromJson(CodeGroupRowSchema, row);
    }
  });

  it("answers /costs with rows of CostsRow, grouped rows of CostsGroupRow", async () => {
    const res = await get(`/costs?${RANGE}`);
    expect(res.status).toBe(200);
    const [day] = res.json.data as JsonObject[];
    fromJson(CostsRowSchema, day!);
    // priced: 1M input at $2 + 100k output at $10; reported: $0.75; unknown: unpriced.
    expect(day).toMatchObject({ date: DAY, cost_usd: 3.75, reported_cost_usd: 0.75, unpriced_tokens: 320 });
    expect((day!.by_model as JsonObject[]).map((m) => [m.model_id, m.cost_usd])).toEqual([
      ["priced", 3],
      ["reported", 0.75],
      ["unknown", 0],
    ]);
    for (const groupBy of ["model", "user"]) {
      const grouped = await get(`/costs?${RANGE}&group_by=${groupBy}`);
      expect(grouped.status).toBe(200);
      for (const row of grouped.json.data as JsonObject[]) fromJson(CostsGroupRowSchema, row);
    }
  });

  it("answers a bad group_by with a 400 naming it, and a member with a 403", async () => {
    const bad = await get(`/code?${RANGE}&group_by=model`);
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toMatch(/group_by/);
    const badCosts = await get(`/costs?${RANGE}&group_by=language`);
    expect(badCosts.status).toBe(400);
    expect(badCosts.json.detail).toMatch(/group_by/);
    expect((await get(`/code?${RANGE}`, member)).status).toBe(403);
    expect((await get(`/costs?${RANGE}`, member)).status).toBe(403);
  });
});

describe("gRPC", () => {
  it("serves GetCode and GetCosts with the REST answers' rows", async () => {
    const client = grpcClient(AnalyticsService, server.grpcUrl);
    try {
      const auth = { authorization: `Bearer ${owner.key}` };
      const req = { startDate: DAY, endDate: "2026-03-03", groupBy: "" };
      const code = await client.call(AnalyticsService.method.getCode, req, auth);
      expect(code.data).toEqual((await get(`/code?${RANGE}`)).json.data);
      const costs = await client.call(AnalyticsService.method.getCosts, { ...req, groupBy: "user" }, auth);
      expect(costs.data).toEqual((await get(`/costs?${RANGE}&group_by=user`)).json.data);
    } finally {
      client.close();
    }
  });
});
