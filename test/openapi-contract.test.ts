// Contract test of the generated OpenAPI document (gen/openapi/openapi.json): real requests to
// a running server, through the REST edge, for every documented operation; each answer's status
// must be documented for its operation, its Content-Type among that status's media types, and
// its JSON body valid against the documented schema (ajv, JSON Schema 2020-12). Errors are
// provoked too (401, 400, 403, 404, 409, 415), so their bodies are checked as well. The last test
// fails unless every documented operation was answered with its documented success status.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TelemetryEventSchema, TelemetryService } from "../gen/agentplane/analytics/v1/analytics_pb.js";
import { ReportSubmissionService } from "../gen/agentplane/readiness/v1/readiness_pb.js";
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { daysFrom, generateEvents } from "./analytics-reference.js";
import { bearer, createTestOrg, createTestServiceAccount, createTestUser, type TestUser } from "./support/fixtures.js";
import { grpcClient } from "./support/grpc.js";
import { loadOpenApi, openApiValidators, operationOf, responseOf, type Schema } from "./support/openapi.js";
import { startTestServer, type TestServer } from "./support/server.js";

const doc = loadOpenApi();
const validator = openApiValidators(doc);
const DAYS = daysFrom("2026-03-01", "2026-03-04");
const RANGE = `startDate=${DAYS[0]}&endDate=${DAYS[DAYS.length - 1]}`;
const today = new Date().toISOString().slice(0, 10);

let server: TestServer;
let owner: TestUser;
let member: TestUser;
/** "<method> <path template>" → the statuses it answered. */
const answered = new Map<string, Set<number>>();

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

interface Send {
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
  /** The bearer key; the owner's by default, none with null. */
  key?: string | null;
}

/** One request through the REST edge, its answer checked against the document's operation. */
async function call(method: string, template: string, path: string, init: Send = {}): Promise<Answer> {
  const op = operationOf(doc, method.toLowerCase(), template);
  expect(op, `${method} ${template} is documented`).toBeDefined();
  const headers: Record<string, string> = { ...init.headers };
  const key = init.key === undefined ? owner.key : init.key;
  if (key !== null) headers.authorization = `Bearer ${key}`;
  let body: string | undefined;
  if (init.body !== undefined) {
    headers["content-type"] = init.contentType ?? "application/json";
    body = typeof init.body === "string" ? init.body : JSON.stringify(init.body);
  }
  const res = await fetch(server.restUrl + path, { method, headers, body });
  const text = await res.text();
  let json: any;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  const answer = { status: res.status, headers: res.headers, text, json };
  conforms(op!, answer, `${method} ${path}`);
  const key2 = `${method.toLowerCase()} ${template}`;
  answered.set(key2, (answered.get(key2) ?? new Set()).add(res.status));
  return answer;
}

/** The answer's status, media type and JSON body are the document's for the operation. */
function conforms(op: Schema, res: Answer, where: string): void {
  const response = responseOf(doc, op, res.status);
  expect(response, `${where}: status ${res.status} is documented (${res.text.slice(0, 200)})`).toBeDefined();
  if (response!.content === undefined) {
    expect(res.text, `${where}: no body`).toBe("");
    return;
  }
  const type = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
  expect(Object.keys(response!.content), `${where}: ${res.status} as ${type}`).toContain(type);
  if (type === "application/json") {
    const validate = validator(response!.content[type].schema);
    expect(validate(res.json), `${where}: ${JSON.stringify(validate.errors?.slice(0, 3))}`).toBe(true);
  }
}

beforeAll(async () => {
  server = await startTestServer({ WEBHOOK_ALLOW_PRIVATE_TARGETS: "true" });
  const db = server.platform.db;
  const org = await createTestOrg(db, "OpenAPI contract");
  owner = await createTestUser(db, org, "owner");
  member = await createTestUser(db, org, "member");
  const internal = bearer(await createTestServiceAccount(db));
  const telemetry = grpcClient(TelemetryService, server.internalGrpcUrl, internal);
  const users = [owner, member].map((u) => ({ id: u.userId, email: u.email }));
  const base = { org_id: org, user_id: member.userId, client: "web", session_id: "contract-session" };
  const events = [
    ...generateEvents(org, users, DAYS, DAYS[2]!),
    // /code: lines changed and an edit decision (the generator has none).
    { ...base, time: `${DAYS[1]}T09:00:00Z`, type: "lines_changed", lines_added: 3, lines_removed: 1, language: "go" },
    { ...base, time: `${DAYS[1]}T09:01:00Z`, type: "edit_decision", decision: "accept", tool: "Edit", language: "go" },
  ];
  const ingested = await telemetry.call(TelemetryService.method.ingest, {
    events: events.map((e) => fromJson(TelemetryEventSchema, e as JsonObject)),
  });
  expect(ingested.rejected).toEqual([]);
  await telemetry.call(TelemetryService.method.rollup, { fromDate: DAYS[0]!, toDate: DAYS[DAYS.length - 1]! });
  telemetry.close();
  const submission = grpcClient(ReportSubmissionService, server.internalGrpcUrl, internal);
  for (const [i, repoUrl] of ["https://github.com/acme/api", "https://github.com/acme/web"].entries()) {
    await submission.call(ReportSubmissionService.method.submitReport, {
      orgId: org,
      report: fromJson(
        (ReportSubmissionService.method.submitReport.input.fields.find((f) => f.name === "report") as any).message,
        {
          reportId: randomUUID(),
          createdAt: Date.now() - (i + 1) * 3_600_000,
          repoUrl,
          apps: { "apps/web": { description: "site" } },
          report: { lint: { numerator: 1, denominator: 1, rationale: "configured" } },
          branch: "main",
          modelUsed: { id: "model-a", reasoningEffort: "high" },
          droidVersion: "1.0.0",
        },
      ) as never,
    });
  }
  submission.close();
});

afterAll(() => server?.close());

describe("analytics", () => {
  const GROUPS: Record<string, string[]> = {
    tokens: ["model"],
    tools: ["tool_name"],
    activity: ["client"],
    productivity: [],
    code: ["language", "user"],
    costs: ["model", "user"],
    users: [],
  };
  for (const [endpoint, groups] of Object.entries(GROUPS)) {
    const template = `/api/v1/analytics/${endpoint}`;
    it(`/${endpoint}: the envelope, each grouping, an export, a 304, a 400, a 401 and a 403`, async () => {
      const first = await call("GET", template, `${template}?${RANGE}`);
      expect(first.status).toBe(200);
      expect(first.json.data.length).toBeGreaterThan(0);
      for (const group of groups) {
        const grouped = await call("GET", template, `${template}?${RANGE}&group_by=${group}`);
        expect(grouped.status).toBe(200);
        expect(grouped.json.data.length).toBeGreaterThan(0);
      }
      expect((await call("GET", template, `${template}?${RANGE}&format=csv`)).status).toBe(200);
      expect((await call("GET", template, `${template}?${RANGE}&format=ndjson`)).status).toBe(200);
      const etag = first.headers.get("etag")!;
      const again = await call("GET", template, `${template}?${RANGE}`, { headers: { "if-none-match": etag } });
      expect(again.status).toBe(304);
      expect((await call("GET", template, `${template}?startDate=${today}&endDate=${today}`)).status).toBe(400);
      expect((await call("GET", template, `${template}?${RANGE}`, { key: null })).status).toBe(401);
      expect((await call("GET", template, `${template}?${RANGE}`, { key: member.key })).status).toBe(403);
    });
  }

  it("/users pages with limit and cursor", async () => {
    const page = await call("GET", "/api/v1/analytics/users", `/api/v1/analytics/users?${RANGE}&limit=1`);
    expect(page.json.meta.has_more).toBe(true);
    const next = await call(
      "GET",
      "/api/v1/analytics/users",
      `/api/v1/analytics/users?${RANGE}&limit=1&cursor=${page.json.meta.next_cursor}`,
    );
    expect(next.json.data.length).toBeGreaterThan(0);
    expect((await call("GET", "/api/v1/analytics/users", `/api/v1/analytics/users?${RANGE}&limit=0`)).status).toBe(400);
  });
});

describe("readiness", () => {
  const path = "/api/organization/maturity-level-reports";
  it("lists reports and pages; a bad limit is a 400", async () => {
    const all = await call("GET", path, path);
    expect(all.json.reports).toHaveLength(2);
    const page = await call("GET", path, `${path}?limit=1`);
    const next = await call("GET", path, `${path}?limit=1&startAfter=${page.json.reports[0].reportId}`);
    expect(next.json.reports).toHaveLength(1);
    expect((await call("GET", path, `${path}?limit=0`)).status).toBe(400);
    expect((await call("GET", path, path, { key: null })).status).toBe(401);
  });
});

describe("sessions", () => {
  it("create, list, read, update, post, interrupt, watch and delete", async () => {
    const created = await call("POST", "/api/v0/sessions", "/api/v0/sessions", {
      body: { title: "contract", text: "hello" },
    });
    expect(created.status).toBe(201);
    const id = created.json.sessionId as string;
    const one = `/api/v0/sessions/${id}`;
    expect((await call("GET", "/api/v0/sessions", "/api/v0/sessions?limit=5")).json.sessions.length).toBe(1);
    expect((await call("GET", "/api/v0/sessions/{sessionId}", one)).json.status).toBe("pending");
    const patched = await call("PATCH", "/api/v0/sessions/{sessionId}", one, {
      body: {
        sessionSettings: {
          model: "model-a",
          tags: [{ name: "t", metadata: { a: 1 } }],
          enabledToolIds: ["Edit"],
          childInclusiveTokenUsageBySessionId: { "outside-1": { inputTokens: 5 } },
        },
      },
    });
    expect(patched.status).toBe(200);
    const posted = await call("POST", "/api/v0/sessions/{sessionId}/messages", `${one}/messages`, {
      body: { text: "more" },
    });
    expect(posted.status).toBe(200);
    const messages = await call("GET", "/api/v0/sessions/{sessionId}/messages", `${one}/messages?role=user`);
    expect(messages.json.messages).toHaveLength(2);
    const messageId = messages.json.messages[0].id;
    const message = await call(
      "GET",
      "/api/v0/sessions/{sessionId}/messages/{messageId}",
      `${one}/messages/${messageId}`,
    );
    expect(message.json.role).toBe("user");
    expect(
      (await call("POST", "/api/v0/sessions/{sessionId}/interrupt", `${one}/interrupt`, { body: {} })).status,
    ).toBe(200);
    await watchEvents(id);
    expect((await call("POST", "/api/v0/sessions/{sessionId}/messages", `${one}/messages`, { body: {} })).status).toBe(
      400,
    );
    expect((await call("DELETE", "/api/v0/sessions/{sessionId}", one)).status).toBe(204);
    expect((await call("GET", "/api/v0/sessions/{sessionId}", one)).status).toBe(404);
  });

  /** The SSE route: text/event-stream, each event's data a documented SessionEvent. */
  async function watchEvents(sessionId: string): Promise<void> {
    const template = "/api/v0/sessions/{sessionId}/events";
    const op = operationOf(doc, "get", template)!;
    const media = responseOf(doc, op, 200)!.content["text/event-stream"];
    const validate = validator(media.schema["x-event-data"]);
    const abort = new AbortController();
    const res = await fetch(`${server.restUrl}/api/v0/sessions/${sessionId}/events?after=0`, {
      headers: { authorization: `Bearer ${owner.key}` },
      signal: abort.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = "";
    const events: unknown[] = [];
    const deadline = Date.now() + 10_000;
    while (events.length < 3 && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      const lines = text.split("\n");
      text = lines.pop()!;
      for (const line of lines) if (line.startsWith("data: ")) events.push(JSON.parse(line.slice(6)));
    }
    abort.abort();
    expect(events.length).toBeGreaterThanOrEqual(3);
    for (const event of events) expect(validate(event), JSON.stringify(validate.errors)).toBe(true);
    answered.set(`get ${template}`, new Set([200]));
  }
});

describe("computers", () => {
  it("create, conflict, update, read by name, list, retry refused, delete", async () => {
    const created = await call("POST", "/api/v0/computers", "/api/v0/computers", {
      body: { name: "contract-box", remoteUser: "dev", provider: "byom", hostId: randomUUID() },
    });
    expect(created.status).toBe(201);
    const again = await call("POST", "/api/v0/computers", "/api/v0/computers", {
      body: { name: "contract-box", remoteUser: "dev" },
    });
    expect(again.status).toBe(409);
    const bad = await call("POST", "/api/v0/computers", "/api/v0/computers", { body: { name: "", remoteUser: "dev" } });
    expect(bad.status).toBe(400);
    const one = `/api/v0/computers/${created.json.id}`;
    expect((await call("PATCH", "/api/v0/computers/{computerId}", one, { body: { remoteUser: "dev2" } })).status).toBe(
      200,
    );
    expect((await call("GET", "/api/v0/computers/name/{name}", "/api/v0/computers/name/contract-box")).status).toBe(
      200,
    );
    expect((await call("GET", "/api/v0/computers/name/{name}", "/api/v0/computers/name/nothing")).status).toBe(404);
    expect((await call("GET", "/api/v0/computers", "/api/v0/computers")).json.computers).toHaveLength(1);
    const retry = await call("POST", "/api/v0/computers/{computerId}/provisioning/retry", `${one}/provisioning/retry`, {
      body: {},
    });
    expect(retry.status).toBe(409);
    expect((await call("DELETE", "/api/v0/computers/{computerId}", one)).status).toBe(204);
  });

  it("retry of a computer in error answers the computer", async () => {
    const created = await call("POST", "/api/v0/computers", "/api/v0/computers", {
      body: { name: "contract-e2b", remoteUser: "dev", provider: "e2b" },
    });
    expect(created.status).toBe(201);
    await server.platform.db
      .updateTable("computers" as never)
      .set({ status: "error" } as never)
      .where("id" as never, "=", created.json.id as never)
      .execute();
    const retry = await call(
      "POST",
      "/api/v0/computers/{computerId}/provisioning/retry",
      `/api/v0/computers/${created.json.id}/provisioning/retry`,
      { body: {} },
    );
    expect(retry.status).toBe(200);
  });
});

describe("organization", () => {
  it("users, credit limits and webhooks", async () => {
    expect((await call("GET", "/api/v0/organization/users", "/api/v0/organization/users?limit=1")).status).toBe(200);
    const limits = "/api/v0/organization/usage/limits/users";
    const set = await call("PUT", limits, limits, {
      body: {
        users: [
          { email: member.email, limit: 100 },
          { email: "nobody@example.test", limit: 5 },
        ],
      },
    });
    expect(set.json.updated).toHaveLength(1);
    expect(set.json.errors).toHaveLength(1);
    expect((await call("PUT", limits, limits, { body: { users: [] } })).status).toBe(400);
    expect((await call("PUT", limits, limits, { body: { users: [] }, key: member.key })).status).toBe(403);
    expect((await call("GET", limits, limits)).json.users).toHaveLength(1);
    expect(
      (await call("GET", "/api/v0/organization/usage/limits/me", "/api/v0/organization/usage/limits/me")).status,
    ).toBe(200);
    const del = `${limits}/${encodeURIComponent(member.email)}`;
    expect((await call("DELETE", `${limits}/{email}`, del)).status).toBe(204);
    expect((await call("DELETE", `${limits}/{email}`, `${limits}/nobody%40example.test`)).status).toBe(404);

    const hook = await call("POST", "/api/v0/webhooks", "/api/v0/webhooks", {
      body: { url: "https://127.0.0.1:9/hook", events: ["message.created"], description: "contract" },
    });
    expect(hook.status).toBe(201);
    expect((await call("GET", "/api/v0/webhooks", "/api/v0/webhooks")).json.webhooks).toHaveLength(1);
    const one = `/api/v0/webhooks/${hook.json.id}`;
    expect((await call("GET", "/api/v0/webhooks/{webhookId}/deliveries", `${one}/deliveries`)).status).toBe(200);
    expect((await call("DELETE", "/api/v0/webhooks/{webhookId}", one)).status).toBe(204);
  });
});

describe("OTLP/HTTP", () => {
  for (const [path, body] of [
    ["/v1/logs", { resourceLogs: [] }],
    ["/v1/metrics", { resourceMetrics: [] }],
    ["/v1/traces", { resourceSpans: [] }],
  ] as const) {
    it(`${path}: OTLP/JSON in, the Export*ServiceResponse or a google.rpc.Status out`, async () => {
      expect((await call("POST", path, path, { body })).status).toBe(200);
      expect((await call("POST", path, path, { body: "{", contentType: "application/json" })).status).toBe(400);
      expect((await call("POST", path, path, { body: "hello", contentType: "text/plain" })).status).toBe(415);
      expect((await call("POST", path, path, { body, key: null })).status).toBe(401);
    });
  }
});

it("answered every documented operation with its documented success status", () => {
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item as Record<string, Schema>)) {
      const success = Object.keys(op.responses).find((s) => /^2/.test(s));
      expect([...(answered.get(`${method} ${path}`) ?? [])], `${method} ${path}`).toContain(Number(success));
    }
  }
});
