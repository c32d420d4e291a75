// Exports of the analytics endpoints (format=csv, format=ndjson) through the REST edge and over
// gRPC: every endpoint and grouping gives the rows of its JSON answer, read back here with a
// small RFC 4180 parser of the test's own; names with commas, quotes and line breaks survive;
// auth, errors and caching are the JSON answer's. The JSON answers of the routes that moved to
// HttpBody streams keep their bytes.
import { get as httpGet, type IncomingHttpHeaders } from "node:http";
import { gunzipSync } from "node:zlib";
import { fromJson, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  AnalyticsResponseSchema,
  AnalyticsService,
  TelemetryEventSchema,
  TelemetryService,
} from "../gen/agentplane/analytics/v1/analytics_pb.js";
import { printedMessage } from "../services/platform/printed-json.js";
import { bearer, createTestOrg, createTestServiceAccount, createTestUser, type TestUser } from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { startTestServer, type TestServer } from "./support/server.js";
import { daysFrom, generateEvents, type RawEvent } from "./analytics-reference.js";

const DAYS = daysFrom("2026-03-01", "2026-03-08");
const START = "2026-02-27";
const END = "2026-03-10";
const RANGE = `startDate=${START}&endDate=${END}`;
// Names a CSV writer must quote: a comma, quotes, CRLF and a lone LF, and non-ASCII text.
const ODD_TOOL = 'Edit, "fast"\r\nmode';
const ODD_SERVER = "srv\nline";
const CR_TOOL = "cr\ronly";
const ODD_MODEL = 'model,"x"';
const ODD_LANGUAGE = 'c, "plus"';
const ODD_EMAIL = '"o\'brien, ""jr"""@example.test';

let server: TestServer;
let owner: TestUser;
let member: TestUser;
let analyticsGrpc: GrpcCaller;

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The response as received, not decoded. */
function raw(path: string, headers: Record<string, string> = {}, user: TestUser | null = owner): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const auth: Record<string, string> = user ? { authorization: `Bearer ${user.key}` } : {};
    const req = httpGet(`${server.restUrl}/api/v1/analytics${path}`, { headers: { ...auth, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
  });
}

/**
 * RFC 4180, written for this test alone: records end with CRLF; a field is plain or quoted, a
 * quoted one may hold commas, CR, LF and doubled quotes. Anything else (a bare LF or CR outside
 * quotes, a quote inside a plain field, a missing final CRLF) is an error.
 */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let i = 0;
  for (;;) {
    let field = "";
    if (text[i] === '"') {
      i++;
      for (;;) {
        const q = text.indexOf('"', i);
        if (q === -1) throw new Error("unterminated quoted field");
        field += text.slice(i, q);
        if (text[q + 1] === '"') {
          field += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
    } else {
      while (i < text.length && text[i] !== "," && text[i] !== "\r" && text[i] !== "\n") {
        if (text[i] === '"') throw new Error(`a quote inside a plain field at ${i}`);
        field += text[i++];
      }
    }
    record.push(field);
    if (text[i] === ",") {
      i++;
      continue;
    }
    if (text.startsWith("\r\n", i)) {
      records.push(record);
      record = [];
      i += 2;
      if (i === text.length) return records;
      continue;
    }
    throw new Error(`expected a comma or CRLF at ${i}, found ${JSON.stringify(text.slice(i, i + 10))}`);
  }
}

/** The JSON row a CSV record stands for, typed after the JSON row it should equal. */
function rowOfRecord(header: string[], record: string[], like: JsonObject): JsonObject {
  expect(record.length).toBe(header.length);
  const out: JsonObject = {};
  header.forEach((name, i) => {
    const path = name.split(".");
    let expected: JsonValue | undefined = like;
    for (const key of path) expected = (expected as JsonObject | undefined)?.[key];
    const cell = record[i]!;
    let value: JsonValue;
    if (expected === undefined) throw new Error(`column ${name} is not in the JSON row`);
    if (expected === null) value = cell === "" ? null : cell;
    else if (typeof expected === "number") value = Number(cell);
    else if (typeof expected === "string") value = cell;
    else value = JSON.parse(cell) as JsonValue;
    let at = out;
    for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as JsonObject;
    at[path[path.length - 1]!] = value;
  });
  return out;
}

/** The JSON rows of an endpoint's answer (/users: every page). */
async function jsonRows(path: string): Promise<JsonObject[]> {
  const res = await raw(path);
  expect(res.status).toBe(200);
  return (JSON.parse(res.body.toString()) as { data: JsonObject[] }).data;
}

beforeAll(async () => {
  server = await startTestServer();
  const db = server.platform.db;
  const org = await createTestOrg(db, "Exports");
  owner = await createTestUser(db, org, "owner");
  const manager = await createTestUser(db, org, "manager");
  member = await createTestUser(db, org, "member");
  const odd = await createTestUser(db, org, "member", ODD_EMAIL);
  const users = [owner, manager, member, odd];
  const telemetry = grpcClient(TelemetryService, server.internalGrpcUrl, bearer(await createTestServiceAccount(db)));
  analyticsGrpc = grpcClient(AnalyticsService, server.grpcUrl);
  const base = { org_id: org, user_id: odd.userId, client: "web", session_id: "odd-session" };
  const events: RawEvent[] = [
    ...generateEvents(
      org,
      users.map((u) => ({ id: u.userId, email: u.email })),
      DAYS,
      "2026-03-05",
    ),
    { ...base, time: "2026-03-02T10:00:00Z", type: "tool_call", tool: ODD_TOOL, autonomy_level: "manual" },
    {
      ...base,
      time: "2026-03-02T10:01:00Z",
      type: "tool_call",
      tool: "ünïcode ✓",
      autonomy_level: "auto-high",
      mcp_server: ODD_SERVER,
    },
    { ...base, time: "2026-03-02T10:02:00Z", type: "tool_call", tool: CR_TOOL, autonomy_level: "manual" },
    {
      ...base,
      time: "2026-03-03T10:00:00Z",
      type: "model_usage",
      model_id: ODD_MODEL,
      model_tier: "standard",
      input_tokens: 10,
      output_tokens: 5,
      cache_read_tokens: 0,
      cache_write_tokens: 0,
      cost_usd: 0.25,
    },
    // /code and /costs: lines, edit decisions (a language with a comma) and reported cost.
    ...users.flatMap((u, i) => [
      {
        ...base,
        user_id: u.userId,
        time: "2026-03-04T09:00:00Z",
        type: "lines_changed",
        lines_added: 10 + i,
        lines_removed: i,
        language: ODD_LANGUAGE,
      },
      {
        ...base,
        user_id: u.userId,
        time: "2026-03-04T09:01:00Z",
        type: "lines_changed",
        lines_added: 3,
        language: "go",
      },
      {
        ...base,
        user_id: u.userId,
        time: "2026-03-04T09:02:00Z",
        type: "edit_decision",
        decision: i % 2 ? "reject" : "accept",
        tool: "Edit",
        language: "go",
      },
      {
        ...base,
        user_id: u.userId,
        time: "2026-03-06T09:00:00Z",
        type: "model_usage",
        model_id: "beta-small",
        model_tier: "standard",
        input_tokens: 100,
        output_tokens: 10,
        cache_read_tokens: 0,
        cache_write_tokens: 0,
        cost_usd: 0.5 + i,
      },
    ]),
  ];
  try {
    for (let i = 0; i < events.length; i += 500) {
      const batch = events.slice(i, i + 500).map((e) => fromJson(TelemetryEventSchema, e as JsonObject));
      const res = await telemetry.call(TelemetryService.method.ingest, { events: batch });
      expect(res.rejected).toEqual([]);
    }
    await telemetry.call(TelemetryService.method.rollup, { fromDate: DAYS[0]!, toDate: DAYS[DAYS.length - 1]! });
  } finally {
    telemetry.close();
  }
}, 120_000);

afterAll(async () => {
  analyticsGrpc?.close();
  await server?.close();
});

// Each endpoint and grouping, its file name, and the breakdown objects that are one JSON cell.
const ENDPOINTS: Array<[string, string]> = [
  [`/tokens?${RANGE}`, `agentplane-tokens-${START}-to-${END}`],
  [`/tokens?${RANGE}&group_by=model`, `agentplane-tokens-by-model-${START}-to-${END}`],
  [`/tools?${RANGE}`, `agentplane-tools-${START}-to-${END}`],
  [`/tools?${RANGE}&group_by=tool_name`, `agentplane-tools-by-tool_name-${START}-to-${END}`],
  [`/activity?${RANGE}`, `agentplane-activity-${START}-to-${END}`],
  [`/activity?${RANGE}&group_by=client`, `agentplane-activity-by-client-${START}-to-${END}`],
  [`/productivity?${RANGE}`, `agentplane-productivity-${START}-to-${END}`],
  [`/code?${RANGE}`, `agentplane-code-${START}-to-${END}`],
  [`/code?${RANGE}&group_by=language`, `agentplane-code-by-language-${START}-to-${END}`],
  [`/code?${RANGE}&group_by=user`, `agentplane-code-by-user-${START}-to-${END}`],
  [`/costs?${RANGE}`, `agentplane-costs-${START}-to-${END}`],
  [`/costs?${RANGE}&group_by=model`, `agentplane-costs-by-model-${START}-to-${END}`],
  [`/costs?${RANGE}&group_by=user`, `agentplane-costs-by-user-${START}-to-${END}`],
  [`/users?${RANGE}`, `agentplane-users-${START}-to-${END}`],
];
const JSON_CELL_OBJECTS = new Set(["daily_active_users_by_client"]);

/** The column names a JSON row flattens to: nested objects dotted, breakdowns one column. */
function flatNames(row: JsonObject, prefix = ""): string[] {
  return Object.entries(row).flatMap(([key, value]) =>
    value !== null && typeof value === "object" && !Array.isArray(value) && !JSON_CELL_OBJECTS.has(key)
      ? flatNames(value, `${prefix}${key}.`)
      : [`${prefix}${key}`],
  );
}

describe("format=csv", () => {
  it.each(ENDPOINTS)("%s: one header row and the JSON answer's rows, RFC 4180", async (path, file) => {
    const expected = await jsonRows(path.startsWith("/users") ? `${path}&limit=100` : path);
    expect(expected.length).toBeGreaterThan(0);
    const res = await raw(`${path}&format=csv`);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("text/csv; charset=utf-8; header=present");
    expect(res.headers["content-disposition"]).toBe(`attachment; filename="${file}.csv"`);
    expect(res.headers["content-encoding"]).toBeUndefined();
    const text = res.body.toString("utf8");
    expect(Buffer.from(text, "utf8").equals(res.body)).toBe(true); // valid UTF-8
    const [header, ...records] = parseCsv(text);
    expect(header).toEqual(flatNames(expected[0]!));
    expect(records.length).toBe(expected.length);
    expect(records.map((record, i) => rowOfRecord(header!, record, expected[i]!))).toEqual(expected);
  });

  it("quotes names with commas, quotes and line breaks, and they read back as they were", async () => {
    const tools = await raw(`/tools?${RANGE}&group_by=tool_name&format=csv`);
    const text = tools.body.toString("utf8");
    expect(text).toContain(`2026-03-02,"Edit, ""fast""\r\nmode",1\r\n`);
    expect(text).toContain("2026-03-02,ünïcode ✓,1\r\n");
    const names = parseCsv(text).map((r) => r[1]);
    expect(names).toContain(ODD_TOOL);
    expect(names).toContain(CR_TOOL);
    // A breakdown cell holding the odd names is quoted JSON: the names survive two encodings.
    const [header, ...days] = parseCsv((await raw(`/tools?${RANGE}&format=csv`)).body.toString("utf8"));
    const day = days.find((r) => r[0] === "2026-03-02")!;
    const servers = JSON.parse(day[header!.indexOf("mcp_by_server")]!) as Array<{ server: string }>;
    expect(servers.map((s) => s.server)).toContain(ODD_SERVER);
    const models = parseCsv((await raw(`/tokens?${RANGE}&group_by=model&format=csv`)).body.toString("utf8"));
    expect(models.map((r) => r[1])).toContain(ODD_MODEL);
    const languages = parseCsv((await raw(`/code?${RANGE}&group_by=language&format=csv`)).body.toString("utf8"));
    expect(languages.map((r) => r[1])).toContain(ODD_LANGUAGE);
    const users = parseCsv((await raw(`/users?${RANGE}&format=csv`)).body.toString("utf8"));
    expect(users.map((r) => r[1])).toContain(ODD_EMAIL);
    expect((await raw(`/users?${RANGE}&format=csv`)).body.toString()).toContain(
      `"""o'brien, """"jr""""""@example.test"`,
    );
  });

  it("writes the header row of an answer with no rows", async () => {
    const res = await raw(`/tools?startDate=2026-02-01&endDate=2026-02-02&group_by=tool_name&format=csv`);
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe("date,group_key,tool_calls\r\n");
    const users = await raw(`/users?startDate=2026-02-01&endDate=2026-02-02&format=csv`);
    expect(parseCsv(users.body.toString())).toHaveLength(1);
  });
});

describe("format=ndjson", () => {
  it.each(ENDPOINTS)("%s: one JSON row per line, the JSON answer's rows", async (path, file) => {
    const expected = await jsonRows(path.startsWith("/users") ? `${path}&limit=100` : path);
    const res = await raw(`${path}&format=ndjson`);
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toBe("application/x-ndjson");
    expect(res.headers["content-disposition"]).toBe(`attachment; filename="${file}.ndjson"`);
    const text = res.body.toString("utf8");
    expect(text.endsWith("\n")).toBe(true);
    const lines = text.slice(0, -1).split("\n");
    expect(lines.map((l) => JSON.parse(l))).toEqual(expected);
  });
});

describe("the same rules as the JSON answer", () => {
  it("refuses an unknown format with a 400 naming format", async () => {
    for (const format of ["xml", "CSV", "csv%20"]) {
      const res = await raw(`/tools?${RANGE}&format=${format}`);
      expect(res.status).toBe(400);
      const body = JSON.parse(res.body.toString());
      expect(body.detail).toMatch(/^format: must be "json", "csv" or "ndjson"/);
      expect(body.status).toBe(400);
    }
    // The dates and group_by are checked as for JSON.
    const late = await raw(`/activity?startDate=2026-03-05&endDate=2026-03-01&format=csv`);
    expect(late.status).toBe(400);
    expect(JSON.parse(late.body.toString()).detail).toMatch(/^startDate: /);
    const group = await raw(`/tokens?${RANGE}&group_by=user&format=ndjson`);
    expect(JSON.parse(group.body.toString()).detail).toMatch(/^group_by: /);
  });

  it("exports every user of the range: limit and cursor with a format are a 400 naming them", async () => {
    const limit = await raw(`/users?${RANGE}&limit=10&format=csv`);
    expect(limit.status).toBe(400);
    expect(JSON.parse(limit.body.toString()).detail).toBe(
      "limit: is not used with format=csv: an export holds every user of the range",
    );
    const cursor = await raw(`/users?${RANGE}&cursor=${owner.userId}&format=ndjson`);
    expect(cursor.status).toBe(400);
    expect(JSON.parse(cursor.body.toString()).detail).toMatch(/^cursor: is not used with format=ndjson/);
  });

  it("serves owners and managers only: a member gets 403, no key 401", async () => {
    for (const format of ["csv", "ndjson"]) {
      expect((await raw(`/users?${RANGE}&format=${format}`, {}, member)).status).toBe(403);
      expect((await raw(`/tools?${RANGE}&format=${format}`, {}, member)).status).toBe(403);
      expect((await raw(`/tokens?${RANGE}&format=${format}`, {}, null)).status).toBe(401);
    }
    // The role before the format, as before the dates.
    expect((await raw(`/tools?${RANGE}&format=xml`, {}, member)).status).toBe(403);
  });

  it("has an ETag of its own, Cache-Control, and a bodiless 304 for a matching If-None-Match", async () => {
    for (const path of [`/tokens?${RANGE}`, `/tools?${RANGE}&group_by=tool_name`, `/users?${RANGE}`]) {
      const json = await raw(path);
      const etags = new Set([json.headers.etag]);
      for (const format of ["csv", "ndjson"]) {
        const first = await raw(`${path}&format=${format}`);
        expect(first.headers.etag).toMatch(/^"[\w-]+"$/);
        expect(first.headers["cache-control"]).toBe("private, max-age=300");
        etags.add(first.headers.etag);
        const again = await raw(`${path}&format=${format}`, { "if-none-match": first.headers.etag! });
        expect(again.status).toBe(304);
        expect(again.body.length).toBe(0);
        expect(again.headers.etag).toBe(first.headers.etag);
        // The same export again: the same validator (nothing rolled up meanwhile).
        expect((await raw(`${path}&format=${format}`)).headers.etag).toBe(first.headers.etag);
        expect((await raw(`${path}&format=${format}`, { "if-none-match": '"other"' })).status).toBe(200);
      }
      expect(etags.size).toBe(3); // JSON, CSV and NDJSON are different representations
    }
  });

  it("compresses a large export for a client that takes gzip: the same text, a weak ETag", async () => {
    const path = `/tokens?${RANGE}&format=csv`;
    const plain = await raw(path);
    expect(plain.body.length).toBeGreaterThan(8192);
    const packed = await raw(path, { "accept-encoding": "gzip" });
    expect(packed.headers["content-encoding"]).toBe("gzip");
    expect(packed.headers.vary).toBe("Accept-Encoding");
    expect(packed.headers.etag).toBe(`W/${plain.headers.etag}`);
    expect(packed.headers["content-type"]).toBe("text/csv; charset=utf-8; header=present");
    expect(gunzipSync(packed.body).equals(plain.body)).toBe(true);
    // A small one goes as it is.
    const small = await raw(`/activity?${RANGE}&group_by=client&format=csv`, { "accept-encoding": "gzip" });
    expect(small.body.length).toBeLessThan(8192);
    expect(small.headers["content-encoding"]).toBeUndefined();
  });

  it("format=json is the default answer, byte for byte", async () => {
    for (const path of [`/tokens?${RANGE}`, `/tools?${RANGE}`, `/users?${RANGE}&limit=2`]) {
      const plain = await raw(path);
      const json = await raw(`${path}&format=json`);
      expect(json.body.equals(plain.body)).toBe(true);
      expect(json.headers.etag).toBe(plain.headers.etag);
    }
  });
});

describe("the JSON answers of /tools, /activity, /productivity, /code and /costs (now HttpBody streams: StreamTools, ...)", () => {
  const auth = () => ({ authorization: `Bearer ${owner.key}` });
  /** A typed Get* method of the same request and envelope shape as GetTools. */
  type Typed = typeof AnalyticsService.method.getTools;
  const cases: ReadonlyArray<readonly [string, Typed, { groupBy?: string }]> = [
    ["/tools", AnalyticsService.method.getTools, { groupBy: "" }],
    ["/tools", AnalyticsService.method.getTools, { groupBy: "tool_name" }],
    ["/activity", AnalyticsService.method.getActivity as unknown as Typed, { groupBy: "" }],
    ["/activity", AnalyticsService.method.getActivity as unknown as Typed, { groupBy: "client" }],
    ["/productivity", AnalyticsService.method.getProductivity as unknown as Typed, {}],
    ["/code", AnalyticsService.method.getCode as unknown as Typed, { groupBy: "" }],
    ["/code", AnalyticsService.method.getCode as unknown as Typed, { groupBy: "language" }],
    ["/costs", AnalyticsService.method.getCosts as unknown as Typed, { groupBy: "" }],
    ["/costs", AnalyticsService.method.getCosts as unknown as Typed, { groupBy: "user" }],
  ];

  it("are the bytes the edge printed from the unary answer, with its headers", async () => {
    for (const [path, method, extra] of cases) {
      const message = await analyticsGrpc.call(method, { startDate: START, endDate: END, ...extra }, auth());
      const printed = printedMessage(AnalyticsResponseSchema, message);
      const group = extra.groupBy ? `&group_by=${extra.groupBy}` : "";
      const res = await raw(`${path}?${RANGE}${group}`, { "accept-encoding": "identity" });
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe("application/json");
      expect(res.body.toString("utf8")).toBe(printed);
      expect(res.headers.etag).toMatch(/^"[\w-]+"$/);
      expect(res.headers["content-disposition"]).toBeUndefined();
      // Envoy's compressor rules: Vary from 8 KiB on, gzip and a weakened ETag for a client
      // that takes it; under 8 KiB neither.
      const gz = await raw(`${path}?${RANGE}${group}`, { "accept-encoding": "gzip, deflate" });
      if (printed.length >= 8192) {
        expect(res.headers.vary).toBe("Accept-Encoding");
        expect(gz.headers["content-encoding"]).toBe("gzip");
        expect(gz.headers.etag).toBe(`W/${res.headers.etag}`);
        expect(gunzipSync(gz.body).toString("utf8")).toBe(printed);
      } else {
        expect(res.headers.vary).toBeUndefined();
        expect(gz.headers["content-encoding"]).toBeUndefined();
        expect(gz.headers.etag).toBe(res.headers.etag);
        expect(gz.body.toString("utf8")).toBe(printed);
      }
      // A 304 carries the strong validator, as the compressor left it on a bodiless answer.
      const revalidated = await raw(`${path}?${RANGE}${group}`, {
        "accept-encoding": "gzip",
        "if-none-match": gz.headers.etag!,
      });
      expect(revalidated.status).toBe(304);
      expect(revalidated.headers.etag).toBe(res.headers.etag);
    }
    // At least one answer is past 8 KiB, so both branches above ran.
    const tools = await raw(`/tools?${RANGE}`, { "accept-encoding": "gzip" });
    expect(tools.headers["content-encoding"]).toBe("gzip");
  });
});

describe("gRPC", () => {
  const auth = () => ({ authorization: `Bearer ${owner.key}` });

  it("serves the exports on the Stream* methods: HttpBody chunks whose data is the REST body", async () => {
    const { messages, header } = await analyticsGrpc.serverStream(
      AnalyticsService.method.streamTools,
      { startDate: START, endDate: END, format: "csv" },
      auth(),
    );
    expect(messages[0]!.contentType).toBe("text/csv; charset=utf-8; header=present");
    expect(header.get("content-disposition")).toEqual([
      `attachment; filename="agentplane-tools-${START}-to-${END}.csv"`,
    ]);
    const body = Buffer.concat(messages.map((m) => m.data));
    expect(body.equals((await raw(`/tools?${RANGE}&format=csv`)).body)).toBe(true);
    const users = await analyticsGrpc.serverStream(
      AnalyticsService.method.streamUsers,
      { startDate: START, endDate: END, format: "ndjson" },
      auth(),
    );
    const usersBody = Buffer.concat(users.messages.map((m) => m.data));
    expect(usersBody.equals((await raw(`/users?${RANGE}&format=ndjson`)).body)).toBe(true);
  });

  it("answers messages on the typed Get* methods: a format there is INVALID_ARGUMENT naming the Stream* method", async () => {
    type Typed = typeof AnalyticsService.method.getTools;
    const methods: Array<[Typed, string]> = [
      [AnalyticsService.method.getTools, "StreamTools"],
      [AnalyticsService.method.getTokens as unknown as Typed, "StreamTokens"],
      [AnalyticsService.method.getUsers as unknown as Typed, "StreamUsers"],
    ];
    for (const [method, stream] of methods) {
      const err = await analyticsGrpc.call(method, { startDate: START, endDate: END, format: "csv" }, auth()).then(
        () => undefined,
        (e: { code: number; details: string }) => e,
      );
      expect(err?.code).toBe(3);
      expect(decodeURIComponent(err!.details)).toMatch(new RegExp(`^format: "csv" is served by ${stream}`));
    }
    const ok = await analyticsGrpc.call(
      AnalyticsService.method.getProductivity,
      { startDate: START, endDate: END, format: "json" },
      auth(),
    );
    expect(ok.data.length).toBeGreaterThan(0);
  });
});
