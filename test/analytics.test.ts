// Analytics end to end: telemetry ingested over gRPC (TelemetryService, @grpc/grpc-js), rolled up,
// and read back through the REST edge. Every metric of every endpoint, grouped and not, is checked
// against an independent reference computation over the raw events (analytics-reference.ts).
import { get as httpGet, type IncomingHttpHeaders } from "node:http";
import { gunzipSync, inflateSync } from "node:zlib";
import { fromJson, toJson, type JsonObject } from "@bufbuild/protobuf";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ActivityGroupRowSchema,
  ActivityRowSchema,
  AnalyticsResponseSchema,
  AnalyticsService,
  ProductivityRowSchema,
  TelemetryEventSchema,
  TelemetryService,
  TokensGroupRowSchema,
  TokensRowSchema,
  ToolsGroupRowSchema,
  ToolsRowSchema,
  UsersResponseSchema,
  type IngestResponse,
} from "../gen/agentplane/analytics/v1/analytics_pb.js";
import { setCreditMultiplier } from "../services/analytics/rollup/days.js";
import {
  api,
  createTestOrg,
  createTestUser,
  type TestUser,
  bearer,
  createTestServiceAccount,
} from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";
import {
  daysFrom,
  firstDifference,
  generateEvents,
  MULTIPLIERS,
  Reference,
  type RawEvent,
} from "./analytics-reference.js";

const JWT_SECRET = "analytics-test-secret-0123456789abcdef";
const DAYS = ["2026-02-20", ...daysFrom("2026-03-01", "2026-03-12")];
const QUIET_DAY = "2026-03-06";
// The range read back: the data, the quiet days before and after it, and the decay of WAU/MAU.
const START = "2026-02-20";
const END = "2026-03-20";

let server: TestServer;
let telemetry: GrpcCaller;
let analyticsGrpc: GrpcCaller;
let owner: TestUser;
let manager: TestUser;
let member: TestUser;
let guest: TestUser;
let ownerB: TestUser;
let events: RawEvent[];
let ref: Reference;
let firstIngest: IngestResponse;

const toMessage = (e: RawEvent) => fromJson(TelemetryEventSchema, e as JsonObject);

async function ingest(batch: readonly RawEvent[]): Promise<IngestResponse> {
  return telemetry.call(TelemetryService.method.ingest, { events: batch.map(toMessage) });
}

async function rollup(): Promise<void> {
  await telemetry.call(TelemetryService.method.rollup, { fromDate: DAYS[0]!, toDate: DAYS[DAYS.length - 1]! });
}

function get(path: string, user: TestUser | null = owner, headers: Record<string, string> = {}) {
  return api(server.restUrl, user?.key, `/api/v1/analytics${path}`, { headers });
}

function range(start = START, end = END) {
  return `startDate=${start}&endDate=${end}`;
}

function expectSame(actual: unknown, expected: unknown) {
  const diff = firstDifference(actual, expected);
  expect(diff, diff).toBeUndefined();
}

beforeAll(async () => {
  server = await startTestServer({ JWT_SECRET });
  const db = server.platform.db;
  const orgA = await createTestOrg(db, "Analytics A");
  owner = await createTestUser(db, orgA, "owner");
  manager = await createTestUser(db, orgA, "manager");
  member = await createTestUser(db, orgA, "member");
  guest = await createTestUser(db, orgA, "guest");
  const more = [];
  for (let i = 0; i < 4; i++) more.push(await createTestUser(db, orgA, "member"));
  const users = [owner, manager, member, guest, ...more];
  const orgB = await createTestOrg(db, "Analytics B");
  ownerB = await createTestUser(db, orgB, "owner");

  for (const [model, m] of Object.entries(MULTIPLIERS)) await setCreditMultiplier(db, model, m);
  telemetry = grpcClient(
    TelemetryService,
    server.internalGrpcUrl,
    bearer(await createTestServiceAccount(server.platform.db)),
  );
  analyticsGrpc = grpcClient(AnalyticsService, server.grpcUrl);

  events = generateEvents(
    orgA,
    users.map((u) => ({ id: u.userId, email: u.email })),
    DAYS,
    QUIET_DAY,
  );
  const eventsB = generateEvents(orgB, [{ id: ownerB.userId, email: ownerB.email }], ["2026-03-02"], "", 7);
  // The first batch mixes in events that must be rejected, each with its index and reason.
  const bad: RawEvent[] = [
    { ...events[0]!, event_id: "bad-1", type: "teleport" },
    { ...events[0]!, event_id: "bad-2", time: "yesterday" },
    { ...events[0]!, event_id: "bad-3", user_id: ownerB.userId },
    {
      ...events[0]!,
      event_id: "bad-4",
      type: "model_usage",
      model_id: "x",
      model_tier: "standard",
      input_tokens: 1.5,
      output_tokens: 0,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
    },
    { ...events[0]!, event_id: "bad-5", client: "emacs" },
  ];
  const first = [...events.slice(0, 100), ...bad];
  firstIngest = await ingest(first);
  for (let i = 100; i < events.length; i += 500) {
    const res = await ingest(events.slice(i, i + 500));
    expect(res.rejected).toEqual([]);
    expect(res.accepted).toBe(Math.min(500, events.length - i));
  }
  expect((await ingest(eventsB)).accepted).toBe(eventsB.length);
  await rollup();
  ref = new Reference(events, new Map(users.map((u) => [u.userId, u.email])));
}, 120_000);

afterAll(async () => {
  telemetry?.close();
  analyticsGrpc?.close();
  await server?.close();
});

describe("ingest", () => {
  it("accepts the valid events and rejects the others with their index and reason", () => {
    expect(firstIngest.accepted).toBe(100);
    expect(firstIngest.duplicates).toBe(0);
    expect(firstIngest.rejected.map((r) => r.index)).toEqual([100, 101, 102, 103, 104]);
    const reasons = firstIngest.rejected.map((r) => r.reason);
    expect(reasons[0]).toMatch(/^type: /);
    expect(reasons[1]).toMatch(/^time: .*RFC 3339/);
    expect(reasons[2]).toMatch(/^user_id: .*does not belong/);
    expect(reasons[3]).toMatch(/^input_tokens: must be an integer/);
    expect(reasons[4]).toMatch(/^client: must be one of/);
  });
});

describe("endpoints against the reference computation", () => {
  it("/tokens, by day and by model", async () => {
    const res = await get(`/tokens?${range()}`);
    expect(res.status).toBe(200);
    expect(res.json.meta).toEqual({ org_id: owner.orgId, start_date: START, end_date: END });
    expectSame(res.json.data, ref.tokens(START, END));
    for (const row of res.json.data) fromJson(TokensRowSchema, row);
    // The data really exercises the metric: credits with multipliers, several models, several users.
    const busy = res.json.data.find((r: { date: string }) => r.date === "2026-03-02");
    expect(busy.by_model.length).toBeGreaterThan(1);
    expect(busy.by_user.length).toBeGreaterThan(1);

    const grouped = await get(`/tokens?${range()}&group_by=model`);
    expect(grouped.status).toBe(200);
    expectSame(grouped.json.data, ref.tokensByModel(START, END));
    for (const row of grouped.json.data) fromJson(TokensGroupRowSchema, row);
  });

  it("/tools, by day and by tool name", async () => {
    const res = await get(`/tools?${range()}`);
    expect(res.status).toBe(200);
    expectSame(res.json.data, ref.tools(START, END));
    for (const row of res.json.data) fromJson(ToolsRowSchema, row);
    const busy = res.json.data.find((r: { date: string }) => r.date === "2026-03-02");
    expect(busy.mcp_by_server.length).toBeGreaterThan(0);
    expect(busy.autonomy_ratio_p90).toBeGreaterThan(0);

    const grouped = await get(`/tools?${range()}&group_by=tool_name`);
    expectSame(grouped.json.data, ref.toolsByName(START, END));
    for (const row of grouped.json.data) fromJson(ToolsGroupRowSchema, row);
  });

  it("/activity, by day and by client, with exact weekly and monthly active users", async () => {
    const res = await get(`/activity?${range()}`);
    expect(res.status).toBe(200);
    expectSame(res.json.data, ref.activity(START, END));
    for (const row of res.json.data) fromJson(ActivityRowSchema, row);
    // A day without events keeps its trailing counts.
    const quiet = res.json.data.find((r: { date: string }) => r.date === QUIET_DAY);
    expect(quiet.daily_active_users).toBe(0);
    expect(quiet.weekly_active_users).toBeGreaterThan(0);

    const grouped = await get(`/activity?${range()}&group_by=client`);
    expectSame(grouped.json.data, ref.activityByClient(START, END));
    for (const row of grouped.json.data) fromJson(ActivityGroupRowSchema, row);
  });

  it("/productivity", async () => {
    const res = await get(`/productivity?${range()}`);
    expect(res.status).toBe(200);
    expectSame(res.json.data, ref.productivity(START, END));
    for (const row of res.json.data) fromJson(ProductivityRowSchema, row);
  });

  it("/users, one row per user and active day", async () => {
    const res = await get(`/users?${range()}&limit=100`);
    expect(res.status).toBe(200);
    expect(res.json.meta).toEqual({
      org_id: owner.orgId,
      start_date: START,
      end_date: END,
      has_more: false,
      next_cursor: "",
    });
    const expected = ref.users(START, END);
    expectSame(res.json.data, expected);
    // The planted cases are there: a tie of session modes, the earlier-mode fallback, no mode at all.
    expect(new Set(expected.map((r) => r.delegation_level)).size).toBeGreaterThan(2);
  });

  it("pages /users at limit 1, 7 and 100: every (user, day) row exactly once, in order", async () => {
    const expected = ref.users(START, END);
    const userCount = new Set(expected.map((r) => r.user_id)).size;
    for (const limit of [1, 7, 100]) {
      const rows: Array<{ user_id: string; date: string }> = [];
      let cursor = "";
      let pages = 0;
      for (;;) {
        const res = await get(
          `/users?${range()}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
        );
        expect(res.status).toBe(200);
        pages++;
        const pageUsers = new Set(res.json.data.map((r: { user_id: string }) => r.user_id));
        expect(pageUsers.size).toBeLessThanOrEqual(limit);
        rows.push(...res.json.data);
        if (!res.json.meta.has_more) {
          expect(res.json.meta.next_cursor).toBe("");
          break;
        }
        expect(res.json.meta.next_cursor).toBe(res.json.data[res.json.data.length - 1].user_id);
        cursor = res.json.meta.next_cursor;
        expect(pages).toBeLessThan(100);
      }
      expect(pages).toBe(Math.max(1, Math.ceil(userCount / limit)));
      expect(rows.map((r) => `${r.user_id}/${r.date}`)).toEqual(expected.map((r) => `${r.user_id}/${r.date}`));
    }
  });

  it("a shorter range reads the same rows", async () => {
    const res = await get(`/activity?${range("2026-03-03", "2026-03-04")}`);
    expectSame(res.json.data, ref.activity("2026-03-03", "2026-03-04"));
  });
});

describe("access", () => {
  it("serves owners and managers; members and guests get 403", async () => {
    expect((await get(`/tokens?${range()}`, manager)).status).toBe(200);
    for (const user of [member, guest]) {
      const res = await get(`/tokens?${range()}`, user);
      expect(res.status).toBe(403);
      expect(res.json).toMatchObject({
        title: expect.any(String),
        status: 403,
        requestId: res.headers.get("x-request-id"),
      });
    }
  });

  it("accepts API keys only: a JWT or no credential is a 401", async () => {
    const jwt = await new SignJWT({ org_id: owner.orgId })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject(owner.userId)
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode(JWT_SECRET));
    const withJwt = await api(server.restUrl, jwt, `/api/v1/analytics/tokens?${range()}`);
    expect(withJwt.status).toBe(401);
    expect((await get(`/tokens?${range()}`, null)).status).toBe(401);
  });

  it("shows each organization only its own data", async () => {
    const res = await get(`/activity?${range("2026-03-01", "2026-03-03")}`, ownerB);
    expect(res.status).toBe(200);
    expect(res.json.meta.org_id).toBe(ownerB.orgId);
    expect(res.json.data.map((r: { daily_active_users: number }) => r.daily_active_users)).toEqual([0, 1, 0]);
    const users = await get(`/users?${range()}`, ownerB);
    expect(new Set(users.json.data.map((r: { user_id: string }) => r.user_id))).toEqual(new Set([ownerB.userId]));
  });
});

describe("errors", () => {
  const today = new Date().toISOString().slice(0, 10);
  const shift = (n: number) => new Date(Date.now() + n * 86_400_000).toISOString().slice(0, 10);
  const cases: Array<[string, string, RegExp]> = [
    ["today", `/tokens?startDate=${shift(-3)}&endDate=${today}`, /lags by 24 hours/],
    ["a future day", `/tools?startDate=${shift(2)}&endDate=${shift(3)}`, /^startDate: is in the future/],
    [
      "before 2026-01-14",
      `/activity?startDate=2026-01-13&endDate=2026-01-20`,
      /^startDate: must not be before 2026-01-14/,
    ],
    [
      "start after end",
      `/productivity?startDate=2026-03-05&endDate=2026-03-01`,
      /^startDate: must not be after endDate/,
    ],
    [
      "a malformed date",
      `/users?startDate=2026-3-1&endDate=2026-03-05`,
      /^startDate: must be a date written YYYY-MM-DD/,
    ],
    ["an impossible date", `/users?startDate=2026-02-30&endDate=2026-03-05`, /^startDate: must be a date/],
    ["a missing date", `/tokens?endDate=2026-03-05`, /^startDate: is required/],
    // (More than 366 days cannot be asked for before 2027: analytics-handlers.test.ts pins the clock.)
    ["another group_by on /tokens", `/tokens?${range()}&group_by=user`, /^group_by: must be "model"/],
    ["another group_by on /tools", `/tools?${range()}&group_by=model`, /^group_by: must be "tool_name"/],
    ["another group_by on /activity", `/activity?${range()}&group_by=tool_name`, /^group_by: must be "client"/],
    ["limit 0", `/users?${range()}&limit=0`, /^limit: /],
    ["limit 101", `/users?${range()}&limit=101`, /^limit: /],
  ];
  it.each(cases)("%s is a 400 with the error body", async (_name, path, detail) => {
    const res = await get(path);
    expect(res.status).toBe(400);
    expect(res.json).toEqual({
      title: expect.any(String),
      detail: expect.stringMatching(detail),
      status: 400,
      requestId: res.headers.get("x-request-id"),
    });
  });

  it("a /users cursor that is no user of the organization is a 400 naming cursor, another organization's user alike", async () => {
    const detail = (id: string) =>
      `cursor: must be a user ID from meta.next_cursor; no user ${JSON.stringify(id)} in your organization`;
    // Before the first user ID, after the last, between two, and another organization's user.
    for (const cursor of ["0", "~", "zzzz-no-such-user", ownerB.userId]) {
      const res = await get(`/users?${range()}&limit=2&cursor=${encodeURIComponent(cursor)}`);
      expect(res.status).toBe(400);
      expect(res.json).toEqual({
        title: "Bad Request",
        detail: detail(cursor),
        status: 400,
        requestId: res.headers.get("x-request-id"),
      });
      const grpc = await analyticsGrpc
        .call(
          AnalyticsService.method.getUsers,
          { startDate: START, endDate: END, limit: 2, cursor },
          { authorization: `Bearer ${owner.key}` },
        )
        .then(
          () => undefined,
          (e: { code: number; details: string }) => e,
        );
      expect(grpc?.code).toBe(3);
      expect(decodeURIComponent(grpc!.details)).toBe(detail(cursor));
    }
    // Every user of the organization is a cursor, active in the range or not.
    const quiet = await createTestUser(server.platform.db, owner.orgId, "member");
    expect((await get(`/users?${range()}&cursor=${quiet.userId}`)).status).toBe(200);
    expect((await get(`/users?${range()}&cursor=${member.userId}`)).status).toBe(200);
  });

  it("a non-numeric limit is a 400 too", async () => {
    expect((await get(`/users?${range()}&limit=abc`)).status).toBe(400);
  });

  it("checks the role before the dates", async () => {
    expect((await get(`/tokens?startDate=bad&endDate=bad`, member)).status).toBe(403);
  });
});

describe("caching", () => {
  it("sends ETag and Cache-Control, and answers a matching If-None-Match with a bodiless 304", async () => {
    for (const path of [`/tokens?${range()}`, `/tools?${range()}&group_by=tool_name`, `/users?${range()}&limit=7`]) {
      const first = await get(path);
      const etag = first.headers.get("etag");
      // fetch takes gzip: /tokens and /users (streamed, compressed to the client's
      // Accept-Encoding) then carry a weak validator.
      expect(etag).toMatch(path.startsWith("/tools") ? /^"[\w-]+"$/ : /^W\/"[\w-]+"$/);
      expect(first.headers.get("cache-control")).toContain("private");
      const again = await get(path, owner, { "if-none-match": etag! });
      expect(again.status).toBe(304);
      expect(again.text).toBe("");
      expect(again.headers.get("etag")).toBe(etag);
      const stale = await get(path, owner, { "if-none-match": '"something-else"' });
      expect(stale.status).toBe(200);
    }
    // Different parameters, different representations.
    const a = (await get(`/activity?${range("2026-03-01", "2026-03-02")}`)).headers.get("etag");
    const b = (await get(`/activity?${range("2026-03-01", "2026-03-03")}`)).headers.get("etag");
    expect(a).not.toBe(b);
  });
});

/** The raw response, not decoded: what the client receives on the wire. */
function raw(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = httpGet(
      `${server.restUrl}/api/v1/analytics${path}`,
      { headers: { authorization: `Bearer ${owner.key}`, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
  });
}

describe("pre-rendered responses", () => {
  type Raw = Awaited<ReturnType<typeof raw>>;

  /** A compressed answer: in `coding`, the plain answer's bytes once decoded, under its weak ETag. */
  function expectEncoded(packed: Raw, plain: Raw, coding: "deflate" | "gzip"): void {
    expect(packed.status).toBe(200);
    expect(packed.headers["content-encoding"]).toBe(coding);
    expect(packed.headers["vary"]).toBe("Accept-Encoding");
    // Streamed as it is read (HttpBody chunks): no Content-Length, as behind Envoy.
    expect(packed.headers["content-length"]).toBeUndefined();
    expect(packed.body.length).toBeLessThan(plain.body.length / 3);
    expect((coding === "gzip" ? gunzipSync : inflateSync)(packed.body).equals(plain.body)).toBe(true);
    expect(packed.headers["etag"]).toBe(`W/${plain.headers["etag"]}`);
  }

  it("sends /tokens compressed to a client that prefers deflate: the same bytes once inflated", async () => {
    const path = `/tokens?${range()}`;
    const plain = await raw(path, {});
    expect(plain.status).toBe(200);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.headers["vary"]).toBe("Accept-Encoding");
    expect(plain.headers["content-length"]).toBeUndefined();
    expect(plain.headers["content-type"]).toBe("application/json");
    const packed = await raw(path, { "accept-encoding": "gzip;q=0.5, deflate" });
    expectEncoded(packed, plain, "deflate");
    // Either validator revalidates either representation.
    const revalidated = await raw(path, { "accept-encoding": "deflate", "if-none-match": plain.headers["etag"]! });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers["vary"]).toBe("Accept-Encoding");
    expect((await raw(path, { "if-none-match": packed.headers["etag"]! })).status).toBe(304);
    // Refusing both codings gets the text.
    expect(
      (await raw(path, { "accept-encoding": "deflate;q=0, gzip;q=0, *" })).headers["content-encoding"],
    ).toBeUndefined();
  });

  it("sends /tokens as gzip to a browser and to a client that takes gzip alone (Go's net/http, OkHttp): the same bytes once gunzipped", async () => {
    const path = `/tokens?${range()}`;
    const plain = await raw(path, {});
    for (const accept of ["gzip, deflate, br, zstd", "gzip", "deflate;q=0, *"])
      expectEncoded(await raw(path, { "accept-encoding": accept }), plain, "gzip");
    expect((await raw(path, { "accept-encoding": "gzip", "if-none-match": plain.headers["etag"]! })).status).toBe(304);
  });

  it("prints the rendered rows compactly, numbers in their shortest form, as the edge prints messages", async () => {
    for (const path of [`/tokens?${range()}`, `/users?${range()}&limit=100`]) {
      const text = (await raw(path, {})).body.toString();
      expect(text).toBe(JSON.stringify(JSON.parse(text)));
    }
  });

  it("prints the same JSON as the messages a gRPC client gets", async () => {
    const client = grpcClient(AnalyticsService, server.grpcUrl);
    const auth = { authorization: `Bearer ${owner.key}` };
    try {
      const tokens = await client.call(AnalyticsService.method.getTokens, { startDate: START, endDate: END }, auth);
      const rest = await raw(`/tokens?${range()}`, {});
      expect(JSON.parse(rest.body.toString())).toEqual(
        toJson(AnalyticsResponseSchema, tokens, { alwaysEmitImplicit: true }),
      );
      const users = await client.call(
        AnalyticsService.method.getUsers,
        { startDate: START, endDate: END, limit: 3 },
        auth,
      );
      const restUsers = await raw(`/users?${range()}&limit=3`, {});
      expect(JSON.parse(restUsers.body.toString())).toEqual(
        toJson(UsersResponseSchema, users, { alwaysEmitImplicit: true }),
      );
      expect(users.data.length).toBeGreaterThan(3);
    } finally {
      client.close();
    }
  });
});

describe("the REST bodies of /tokens and /users (StreamTokens, StreamUsers)", () => {
  it("compresses for a client that takes gzip, except a text answer under 8 KiB", async () => {
    // (services/analytics/read/http-body.test.ts tests the threshold on text of either side of it.)
    const large = `/tokens?${range()}`;
    const plain = await raw(large, { "accept-encoding": "identity" });
    expect(plain.status, plain.body.toString().slice(0, 300)).toBe(200);
    expect(plain.body.length).toBeGreaterThan(8192);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    const packed = await raw(large, { "accept-encoding": "gzip" });
    expect(packed.headers["content-encoding"]).toBe("gzip");
    expect(packed.headers["vary"]).toBe("Accept-Encoding");
    expect(gunzipSync(packed.body).equals(plain.body)).toBe(true);
    const small = await raw(`/tokens?${range()}&group_by=model`, { "accept-encoding": "gzip" });
    expect(small.status).toBe(200);
    expect(small.body.length).toBeLessThan(8192);
    expect(small.headers["content-encoding"]).toBeUndefined();
    expect(small.headers["vary"]).toBe("Accept-Encoding");
    expect(JSON.parse(small.body.toString()).data.length).toBeGreaterThan(0);
  });

  it("are served to gRPC callers too: HttpBody chunks whose data is the REST body", async () => {
    const client = grpcClient(AnalyticsService, server.grpcUrl);
    try {
      const auth = { authorization: `Bearer ${owner.key}` };
      // @grpc/grpc-js sends `accept-encoding: identity` with every call (its own, whatever the
      // metadata says): the body comes as text.
      const { messages, header } = await client.serverStream(
        AnalyticsService.method.streamTokens,
        { startDate: START, endDate: END },
        auth,
      );
      expect(header.get("content-encoding")).toEqual([]);
      expect(header.get("etag")).toHaveLength(1);
      expect(messages[0]!.contentType).toBe("application/json");
      expect(messages.every((m) => m.data.length <= 64 * 1024)).toBe(true);
      const body = Buffer.concat(messages.map((m) => m.data));
      expect(body.equals((await raw(`/tokens?${range()}`, { "accept-encoding": "identity" })).body)).toBe(true);
      const plain = await client.serverStream(
        AnalyticsService.method.streamUsers,
        { startDate: START, endDate: END, limit: 100 },
        auth,
      );
      expect(plain.header.get("content-encoding")).toEqual([]);
      const users = Buffer.concat(plain.messages.map((m) => m.data));
      expect(users.equals((await raw(`/users?${range()}&limit=100`, { "accept-encoding": "identity" })).body)).toBe(
        true,
      );
      // Validation errors come before any message, as status codes.
      await expect(
        client.serverStream(AnalyticsService.method.streamUsers, { startDate: START, endDate: END, limit: 0 }, auth),
      ).rejects.toMatchObject({ code: 3, details: expect.stringMatching(/^limit/) });
    } finally {
      client.close();
    }
  });
});

describe("gRPC", () => {
  it("serves the public RPCs to a @grpc/grpc-js client with an API key", async () => {
    const client = grpcClient(AnalyticsService, server.grpcUrl);
    try {
      const res = await client.call(
        AnalyticsService.method.getActivity,
        { startDate: "2026-03-01", endDate: "2026-03-02" },
        { authorization: `Bearer ${owner.key}` },
      );
      expectSame(res.data, ref.activity("2026-03-01", "2026-03-02"));
      await expect(
        client.call(AnalyticsService.method.getActivity, { startDate: "2026-03-01", endDate: "2026-03-02" }),
      ).rejects.toMatchObject({ code: 16 });
    } finally {
      client.close();
    }
  });
});

describe("idempotency", () => {
  it("re-ingesting the same events and rolling up again changes nothing", async () => {
    const paths = [
      `/tokens?${range()}`,
      `/tokens?${range()}&group_by=model`,
      `/tools?${range()}`,
      `/tools?${range()}&group_by=tool_name`,
      `/activity?${range()}`,
      `/activity?${range()}&group_by=client`,
      `/productivity?${range()}`,
      `/users?${range()}&limit=100`,
    ];
    const before = await Promise.all(paths.map((p) => get(p)));
    let duplicates = 0;
    for (let i = 0; i < events.length; i += 1000) {
      const res = await ingest(events.slice(i, i + 1000));
      expect(res.accepted).toBe(0);
      duplicates += res.duplicates;
    }
    expect(duplicates).toBe(events.length);
    await rollup();
    const after = await Promise.all(paths.map((p) => get(p)));
    for (const [i, res] of after.entries()) {
      expect(res.status).toBe(200);
      expect(res.json).toEqual(before[i]!.json);
      expect(res.headers.get("etag")).toBe(before[i]!.headers.get("etag"));
    }
  });
});
