// Every REST endpoint of docs/interface.md §4, with each path variable, query parameter and body field: how
// to make a value the service must accept ("valid") and one it must refuse ("invalid"), and the
// shape of a correct 2xx body. The fuzzer combines them with hostile values; the isolation
// matrix reuses the method/path list. A test checks that this list and the edge's route table
// name the same endpoints, so a new route cannot escape fuzzing.
import { randomUUID } from "node:crypto";
import fc from "fast-check";
import type { StreamShape } from "./invariants.js";
import type { Org } from "./world.js";

export type Place = "path" | "query" | "body";

export interface Param {
  name: string;
  in: Place;
  required?: boolean;
  /**
   * Values the service accepts (given the rest of the request is valid). Query/path: strings, or
   * a Fresh: a resource made for the one request that consumes it.
   */
  valid: fc.Arbitrary<unknown>;
  /** Values the service must refuse with a 4xx, whatever else the request holds. */
  invalid: fc.Arbitrary<unknown>;
}

export interface Endpoint {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** Path template as docs/interface.md §4 writes it, variables in braces. */
  template: string;
  params: Param[];
  /** The status of a valid request (204: it has no body, which the invariants check). */
  ok: 200 | 201 | 204;
  /** Problem with a 2xx body, or undefined when it has the endpoint's shape. */
  shape(json: any): string | undefined;
  /**
   * Set when a 2xx is a stream that never ends by itself (Server-Sent Events): it is judged by
   * its status, headers and first chunk, and then the client leaves (`shape` is not used).
   */
  stream?: StreamShape;
  /** An OTLP/HTTP route: its own refusals are OTLP's google.rpc.Status (invariants.ts). */
  otlp?: true;
}

/**
 * A valid value that one request uses up: DELETE /sessions/{sessionId} removes the session it
 * names (and interrupting one changes it), so a shared seeded ID would succeed once and then be
 * a 404, and the other endpoints' cases would lose the session they read. Likewise a deleted
 * computer or webhook, a computer whose failed provisioning is retried (it is no longer failed),
 * and a webhook slot: an organization holds at most 20 webhooks, so a webhook URL is valid only
 * with room made for it. A parameter whose
 * valid value is a Fresh gets, in each fuzz case that chose it, a resource made just before that
 * case is sent and used by no other (fuzz-cases.ts `withFreshValues`, called by the runner).
 * This is the one mechanism for consumed values; everything else draws from the seeded world.
 */
export class Fresh {
  constructor(
    /** What is made, for the failure message. */
    readonly what: string,
    readonly make: () => Promise<string>,
  ) {}
}

/** What the endpoints need besides the seeded organization. */
export interface Resources {
  /** A computer that PATCH /computers may rename (the GET-by-name target keeps its name). */
  fuzzComputer: { id: string };
  /** Makes a session of the organization's owner, with a waiting user message (pending). */
  freshSession(): Promise<string>;
  /** Makes a computer no session uses (DELETE /computers/{computerId} may remove it). */
  freshComputer(): Promise<string>;
  /** Makes a computer whose provisioning failed (status error), which may retry it. */
  failedComputer(): Promise<string>;
  /** A computer a pending session waits on: deleting it is a 409. */
  busyComputer: { id: string };
  /** A webhook that no request deletes, for its deliveries. */
  webhook: { id: string };
  /** Makes room for a webhook (see Fresh) and gives a URL that passes the target check. */
  webhookUrl(): Promise<string>;
  /** Makes a webhook (room for it first) that DELETE /webhooks/{webhookId} may remove. */
  freshWebhook(): Promise<string>;
}

/** For a list that makes no requests (the catalog, the isolation matrix's coverage check). */
export const NO_FRESH_RESOURCES = Object.fromEntries(
  (["freshSession", "freshComputer", "failedComputer", "webhookUrl", "freshWebhook"] as const).map((k) => [
    k,
    () => Promise.reject(new Error(`${k}: this endpoint list is not sent`)),
  ]),
) as Pick<Resources, "freshSession" | "freshComputer" | "failedComputer" | "webhookUrl" | "freshWebhook">;

export const id = (e: Pick<Endpoint, "method" | "template">) => `${e.method} ${e.template}`;

const DAY_MS = 86_400_000;
const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
export const EARLIEST = "2026-01-14";
const today = () => dayOf(Date.now());
const yesterday = () => dayOf(Date.now() - DAY_MS);

/** A day from EARLIEST to yesterday. */
const pastDay = fc.integer({ min: Date.parse(EARLIEST), max: Date.now() - DAY_MS }).map(dayOf);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);
function keys(json: any, required: string[]): string | undefined {
  if (!isObject(json)) return "not an object";
  const missing = required.filter((k) => !(k in json));
  return missing.length ? `missing ${missing.join(", ")}` : undefined;
}
function list(json: any, field: string, item: string[]): string | undefined {
  const top = keys(json, [field]);
  if (top) return top;
  if (!Array.isArray(json[field])) return `${field} is not an array`;
  for (const x of json[field]) {
    const wrong = keys(x, item);
    if (wrong) return `${field}[]: ${wrong}`;
  }
  return undefined;
}
const paged = (field: string, item: string[]) => (json: any) =>
  list(json, field, item) ??
  keys(json.pagination, ["hasMore", "nextCursor"]) ??
  (typeof json.pagination.hasMore === "boolean" ? undefined : "pagination.hasMore is not a boolean");
const envelope = (json: any) =>
  keys(json, ["data", "meta"]) ??
  (Array.isArray(json.data) ? undefined : "data is not an array") ??
  keys(json.meta, ["org_id", "start_date", "end_date"]);

const limitString = (): Param[] => [
  {
    name: "limit",
    in: "query",
    valid: fc.integer({ min: 1, max: 100 }).map(String),
    invalid: fc.constantFrom("0", "-1", "101", "1000", "abc", "1.5", "1e2", "0x10"),
  },
];
const NOT_A_CURSOR = fc.constantFrom("x", "garbage-cursor", "A".repeat(32), "a".repeat(300), "../..", "%2F");
const optionalIdParam = (name: string, place: Place): Param => ({
  name,
  in: place,
  // An unknown ID is a filter that matches nothing, not an error.
  valid: fc.stringMatching(/^[a-z0-9-]{1,40}$/),
  invalid: fc.constant("c".repeat(201)),
});

function analytics(
  path: string,
  groupBy: string | readonly string[] | undefined,
  org: Org,
  extra: Param[] = [],
  shape = envelope,
): Endpoint {
  const params: Param[] = [
    {
      name: "startDate",
      in: "query",
      required: true,
      valid: pastDay,
      invalid: fc
        .constantFrom("2026-13-01", "2026-02-30", "2025-12-31", "20260301", "2026-3-1", "tomorrow", "")
        .map((v) => (v === "tomorrow" ? dayOf(Date.now() + DAY_MS) : v)),
    },
    // Yesterday keeps startDate <= endDate for every valid startDate; today is refused (data lags a day).
    {
      name: "endDate",
      in: "query",
      required: true,
      valid: fc.constant(null).map(yesterday),
      invalid: fc.constantFrom("today", "2026-02-30", "2025-01-01", "x").map((v) => (v === "today" ? today() : v)),
    },
  ];
  if (groupBy) {
    const groups = typeof groupBy === "string" ? [groupBy] : groupBy;
    params.push({
      name: "group_by",
      in: "query",
      valid: fc.constantFrom(...groups),
      invalid: fc.constantFrom(
        ...[...groups.flatMap((g) => [g.toUpperCase(), `${g}s`]), "user", "date"].filter((g) => !groups.includes(g)),
      ),
    });
  }
  void org;
  return { method: "GET", template: `/api/v1/analytics/${path}`, params: [...params, ...extra], ok: 200, shape };
}

/** The request fields of sessionSettings (spec 2.8), as PATCH and POST /sessions take them. */
const sessionSettings: Param = {
  name: "sessionSettings",
  in: "body",
  valid: fc.record(
    {
      model: fc.string({ maxLength: 30 }),
      specModeModel: fc.string({ maxLength: 30 }),
      assistantActiveTimeMs: fc.integer({ min: 0, max: 10_000_000 }),
      archivedAt: fc.constantFrom("2026-05-01T00:00:00Z"),
      tags: fc.array(
        fc.record({
          name: fc.stringMatching(/^[a-z]{1,10}$/),
          metadata: fc.dictionary(fc.stringMatching(/^[a-z]{1,5}$/), fc.string({ maxLength: 5 }), {
            maxKeys: 2,
          }),
        }),
        { maxLength: 3 },
      ),
      enabledToolIds: fc.array(fc.stringMatching(/^[a-z]{1,10}$/), { maxLength: 3 }),
      disabledToolIds: fc.array(fc.stringMatching(/^[a-z]{1,10}$/), { maxLength: 3 }),
    },
    { requiredKeys: [] },
  ),
  invalid: fc.constantFrom<unknown>(
    "settings",
    5,
    [],
    { unknownSetting: 1 },
    { tags: "x" },
    { tags: [{ metadata: {} }] },
    { enabledToolIds: [5] },
    { assistantActiveTimeMs: "soon" },
    { model: 5 },
  ),
};

const SESSION_SHAPE = ["sessionId", "status", "messageCount", "createdAt", "updatedAt"];
const messageText = (name: string, required: boolean): Param => ({
  name,
  in: "body",
  required,
  valid: fc.string({ minLength: 1, maxLength: 200 }).filter((s) => s.trim() !== ""),
  invalid: fc.constantFrom<unknown>("", "   ", "\n\t", 5, true, [], {}, "x".repeat(500_001)),
});

/**
 * A problem with the whole Server-Sent Events records after the first chunk (a record cut by
 * the client's leaving is not judged): each is a heartbeat comment, or an event whose data line
 * is a SessionEvent as JSON with the record's id as its eventId.
 */
function sseRecords(text: string): string | undefined {
  const records = text.split("\n\n").slice(0, -1);
  for (const record of records) {
    if (record === ": heartbeat") continue;
    const m = /^id: (\d+)\ndata: (.*)$/s.exec(record);
    if (!m) return `not an SSE record: ${JSON.stringify(record.slice(0, 120))}`;
    let event: any;
    try {
      event = JSON.parse(m[2]!);
    } catch {
      return `event data is not JSON: ${m[2]!.slice(0, 120)}`;
    }
    const wrong = keys(event, ["eventId", "type", "createdAt", "sessionId"]);
    if (wrong) return `event ${m[1]}: ${wrong}`;
    if (event.eventId !== m[1]) return `event id ${m[1]} carries eventId ${event.eventId}`;
  }
  return undefined;
}

/** The docs/interface.md §4 endpoints, with valid values drawn from `org` (whose owner calls them). */
export function endpoints(org: Org, resources: Resources): Endpoint[] {
  const { fuzzComputer, freshSession } = resources;
  const own = org.sessions.owner;
  const fresh = new Fresh("session", freshSession);
  // The computer a session or a message goes to: one of the organization's (absent: none, or
  // the session's); its name, another organization's or no computer's ID is a 400 naming it.
  const computerIdInBody: Param = {
    name: "computerId",
    in: "body",
    valid: fc.constantFrom("", org.computer.id),
    invalid: fc.constantFrom<unknown>("c".repeat(201), randomUUID(), "no-such-computer", org.computer.name, 5),
  };
  const sessionId: Param = {
    name: "sessionId",
    in: "path",
    valid: fc.constantFrom(own, org.sessions.member),
    invalid: fc.constantFrom(randomUUID(), "no-such-session"),
  };
  return [
    analytics("tokens", "model", org),
    analytics("tools", "tool_name", org),
    analytics("activity", "client", org),
    analytics("productivity", undefined, org),
    analytics("code", ["language", "user"], org),
    analytics("costs", ["model", "user"], org),
    analytics(
      "users",
      undefined,
      org,
      [
        {
          name: "limit",
          in: "query",
          valid: fc.integer({ min: 1, max: 100 }).map(String),
          invalid: fc.constantFrom("0", "101", "-5", "abc", "1.5"),
        },
        // A cursor is one of the organization's users (next_cursor); any other ID is refused.
        {
          name: "cursor",
          in: "query",
          valid: fc.constantFrom(org.members.member.userId, org.members.owner.userId, ""),
          invalid: fc.oneof(fc.constantFrom("u".repeat(300), randomUUID()), fc.stringMatching(/^[a-z0-9-]{1,40}$/)),
        },
      ],
      (json) => envelope(json) ?? keys(json.meta, ["has_more", "next_cursor"]),
    ),
    {
      method: "GET",
      template: "/api/organization/maturity-level-reports",
      params: [
        {
          name: "repoId",
          in: "query",
          valid: fc.constantFrom(org.report.repoId),
          invalid: fc.constantFrom(randomUUID(), "nope"),
        },
        {
          name: "limit",
          in: "query",
          valid: fc.integer({ min: 1, max: 100 }).map(String),
          invalid: fc.constantFrom("0", "-1", "101", "abc"),
        },
        {
          name: "startAfter",
          in: "query",
          valid: fc.constantFrom(org.report.id),
          invalid: fc.constantFrom(randomUUID(), "nope"),
        },
      ],
      ok: 200,
      shape: (json) => list(json, "reports", ["reportId", "createdAt", "repoUrl", "apps", "report"]),
    },
    {
      method: "GET",
      template: "/api/v0/sessions",
      params: [
        ...limitString(),
        { name: "cursor", in: "query", valid: fc.constant(""), invalid: NOT_A_CURSOR },
        optionalIdParam("computerId", "query"),
      ],
      ok: 200,
      shape: paged("sessions", ["sessionId", "messageCount", "createdAt", "updatedAt"]),
    },
    {
      method: "POST",
      template: "/api/v0/sessions",
      params: [
        {
          name: "title",
          in: "body",
          valid: fc.string({ maxLength: 500 }),
          invalid: fc.constantFrom<unknown>("t".repeat(501), "é".repeat(501), 5, true, [], {}),
        },
        computerIdInBody,
        sessionSettings,
        messageText("text", false),
      ],
      ok: 201,
      // Idle without text, pending with it (no runner claims it here).
      shape: (json) =>
        keys(json, [...SESSION_SHAPE, "sessionSettings"]) ??
        (["idle", "pending"].includes(json.status) ? undefined : `status ${json.status}`),
    },
    {
      method: "POST",
      template: "/api/v0/sessions/{sessionId}/interrupt",
      // A seeded session (pending after the message fuzz posts to it) or a fresh pending one:
      // interrupting changes the session but leaves it readable, so the seeded ones may take it.
      params: [{ ...sessionId, valid: fc.oneof(sessionId.valid, fc.constant(fresh)) }],
      ok: 200,
      shape: (json) => keys(json, ["status"]) ?? (json.status === "idle" ? undefined : `status ${json.status}`),
    },
    {
      method: "DELETE",
      template: "/api/v0/sessions/{sessionId}",
      // Only fresh sessions: a deleted seeded one would be a 404 for every other endpoint's cases.
      params: [{ ...sessionId, valid: fc.constant(fresh) }],
      ok: 204,
      shape: () => undefined,
    },
    {
      method: "GET",
      template: "/api/v0/sessions/{sessionId}",
      params: [
        sessionId,
        { name: "computerId", in: "query", valid: fc.constant(""), invalid: fc.constant("c".repeat(201)) },
      ],
      ok: 200,
      shape: (json) => keys(json, SESSION_SHAPE),
    },
    {
      method: "PATCH",
      template: "/api/v0/sessions/{sessionId}",
      params: [sessionId, sessionSettings],
      ok: 200,
      shape: (json) => keys(json, [...SESSION_SHAPE, "sessionSettings"]),
    },
    {
      method: "GET",
      template: "/api/v0/sessions/{sessionId}/messages",
      params: [
        sessionId,
        ...limitString(),
        { name: "cursor", in: "query", valid: fc.constant(""), invalid: NOT_A_CURSOR },
        optionalIdParam("computerId", "query"),
        {
          name: "role",
          in: "query",
          valid: fc.constantFrom("user", "assistant", "tool", ""),
          invalid: fc.constantFrom("system", "USER", "admin", "user,assistant"),
        },
      ],
      ok: 200,
      shape: paged("messages", ["id", "content", "createdAt", "updatedAt"]),
    },
    {
      method: "GET",
      template: "/api/v0/sessions/{sessionId}/messages/{messageId}",
      params: [
        { name: "sessionId", in: "path", valid: fc.constant(own), invalid: fc.constantFrom(randomUUID(), "x") },
        {
          name: "messageId",
          in: "path",
          valid: fc.constant(org.messages.owner),
          invalid: fc.constantFrom(randomUUID(), org.messages.member, "x"),
        },
        { name: "computerId", in: "query", valid: fc.constant(""), invalid: fc.constant("c".repeat(201)) },
      ],
      ok: 200,
      shape: (json) => keys(json, ["id", "role", "content", "createdAt", "updatedAt"]),
    },
    {
      method: "POST",
      template: "/api/v0/sessions/{sessionId}/messages",
      params: [
        sessionId,
        messageText("text", true),
        {
          name: "images",
          in: "body",
          valid: fc.constantFrom<unknown>(
            [],
            [
              {
                data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
              },
            ],
          ),
          invalid: fc.constantFrom<unknown>(
            "image",
            [{ data: "not base64!" }],
            [{ data: "aGVsbG8=" }],
            [{ data: 5 }],
            [5],
            Array.from({ length: 21 }, () => ({
              data: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
            })),
          ),
        },
        {
          name: "files",
          in: "body",
          valid: fc.constantFrom<unknown>(
            [],
            [{ data: "hello", name: "a.txt", path: "docs/a.txt" }],
            [{ parsedData: "text", name: "b.pdf" }],
          ),
          invalid: fc.constantFrom<unknown>(
            "file",
            [{ data: 5 }],
            [7],
            [{ name: "a.txt", unknown: 1 }],
            Array.from({ length: 21 }, () => ({ data: "x" })),
          ),
        },
        computerIdInBody,
      ],
      ok: 200,
      shape: (json) =>
        keys(json, ["messageId", "status"]) ??
        (["idle", "pending", "running"].includes(json.status) ? undefined : `status ${json.status}`),
    },
    {
      method: "GET",
      template: "/api/v0/sessions/{sessionId}/events",
      params: [
        sessionId,
        {
          name: "after",
          in: "query",
          // Each seeded session has two events (its message, and pending): "0" replays both, ""
          // is no position (events from now on).
          valid: fc.constantFrom("", "0", "1", "2"),
          // Past the session's last event, or not a whole number: a 400 naming `after`.
          invalid: fc.constantFrom("999999999", "1000000000", "-1", "1.5", "1e2", "0x10", "abc", " 1", "１"),
        },
      ],
      ok: 200,
      shape: () => "an event stream answered as JSON",
      stream: {
        contentType: "text/event-stream",
        firstChunk: ": connected\n\n",
        rest: sseRecords,
      },
    },
    {
      method: "POST",
      template: "/api/v0/computers",
      params: [
        {
          name: "name",
          in: "body",
          required: true,
          valid: fc.constant(null).map(() => `fuzz-${randomUUID()}`),
          invalid: fc.constantFrom<unknown>("", "n".repeat(64), "a/b", "tab\there", 5, null, []),
        },
        {
          name: "remoteUser",
          in: "body",
          required: true,
          valid: fc.stringMatching(/^[a-z_][a-z0-9_-]{0,30}$/),
          invalid: fc.constantFrom<unknown>("", "has space", "a:b", "u".repeat(64), 7, {}),
        },
        {
          name: "provider",
          in: "body",
          valid: fc.constant("byom"),
          invalid: fc.constantFrom<unknown>("aws", "BYOM", 1, []),
        },
        {
          name: "hostId",
          in: "body",
          valid: fc.constant(null).map(() => randomUUID()),
          invalid: fc.constantFrom<unknown>("not-a-uuid", "1234", 5, "00000000-0000-0000-0000-00000000000g"),
        },
        {
          name: "repos",
          in: "body",
          valid: fc
            .array(
              fc.stringMatching(/^[a-z]{1,12}$/).map((r) => `https://github.com/acme/${r}`),
              { maxLength: 3 },
            )
            .map((rs) => [...new Set(rs)]),
          invalid: fc.constantFrom<unknown>(
            "https://github.com/a/b",
            ["file:///etc/passwd"],
            ["not a url"],
            ["ext::sh -c id"],
            Array.from({ length: 21 }, (_, i) => `https://github.com/a/r${i}`),
            [`https://github.com/${"a".repeat(2050)}`],
            ["https://x.test/a", "https://x.test/a"],
            [5],
          ),
        },
        {
          name: "autoInstallDeps",
          in: "body",
          valid: fc.boolean(),
          invalid: fc.constantFrom<unknown>("yes", 2, [], {}),
        },
      ],
      ok: 201,
      shape: (json) => keys(json, ["id", "name", "providerType", "createdAt"]),
    },
    {
      method: "PATCH",
      template: "/api/v0/computers/{computerId}",
      params: [
        {
          name: "computerId",
          in: "path",
          valid: fc.constant(fuzzComputer.id),
          invalid: fc.constantFrom(randomUUID(), "x", org.computer.name),
        },
        {
          name: "name",
          in: "body",
          valid: fc.constant(null).map(() => `fuzz-${randomUUID()}`),
          invalid: fc.constantFrom<unknown>("", "n".repeat(64), "a/b", 5),
        },
        {
          name: "hostId",
          in: "body",
          valid: fc.constant(null).map(() => randomUUID()),
          invalid: fc.constantFrom<unknown>("nope", 3),
        },
        {
          name: "remoteUser",
          in: "body",
          valid: fc.stringMatching(/^[a-z]{1,20}$/),
          invalid: fc.constantFrom<unknown>("", "a b", "a:b", false),
        },
      ],
      ok: 200,
      shape: (json) => keys(json, ["id", "name", "providerType", "createdAt"]),
    },
    {
      method: "GET",
      template: "/api/v0/computers/name/{name}",
      params: [
        {
          name: "name",
          in: "path",
          valid: fc.constant(org.computer.name),
          invalid: fc.constantFrom("no-such-computer", "n".repeat(64), randomUUID()),
        },
      ],
      ok: 200,
      shape: (json) => keys(json, ["id", "name", "providerType", "createdAt"]),
    },
    {
      method: "GET",
      template: "/api/v0/organization/users",
      params: [...limitString(), { name: "cursor", in: "query", valid: fc.constant(""), invalid: NOT_A_CURSOR }],
      ok: 200,
      shape: paged("users", ["id", "email", "createdAt"]),
    },
    {
      method: "PUT",
      template: "/api/v0/organization/usage/limits/users",
      params: [
        {
          name: "users",
          in: "body",
          required: true,
          valid: fc.array(
            fc.record({
              email: fc.constantFrom(org.members.member.email, org.members.guest.email, "nobody@example.test"),
              limit: fc.integer({ min: 0, max: 1_000_000 }),
            }),
            { minLength: 1, maxLength: 5 },
          ),
          invalid: fc.constantFrom<unknown>(
            [],
            "users",
            5,
            {},
            [5],
            [{ email: 5, limit: 1 }],
            [{ email: "a@b.test", limit: "many" }],
            [{ email: "a@b.test", limit: 1, extra: true }],
            Array.from({ length: 101 }, (_, i) => ({ email: `u${i}@x.test`, limit: 1 })),
          ),
        },
      ],
      ok: 200,
      shape: (json) =>
        keys(json, ["updated", "errors"]) ??
        (Array.isArray(json.updated) && Array.isArray(json.errors) ? undefined : "updated/errors are not arrays"),
    },
    ...lifecycle(org, resources),
  ];
}

/**
 * A URL that passes the webhook target check without DNS (there is none here): https and a
 * public IP literal, which is checked as it is. Deliveries to it fail, which no test minds.
 */
export const WEBHOOK_URL = "https://93.184.216.34/hooks";

const COMPUTER_SHAPE = ["id", "name", "providerType", "createdAt", "status"];
const CURSOR: Param = { name: "cursor", in: "query", valid: fc.constant(""), invalid: NOT_A_CURSOR };
const WEBHOOK_EVENTS = ["session.status_changed", "message.created", "computer.status_changed"];

/** Computers, credit limits and webhooks, whole (issue 20, items 3 and 4). */
function lifecycle(org: Org, r: Resources): Endpoint[] {
  const notAComputer = [randomUUID(), "no-such-computer", org.computer.name];
  const webhookId: Param = {
    name: "webhookId",
    in: "path",
    valid: fc.constant(r.webhook.id),
    invalid: fc.constantFrom(randomUUID(), "no-such-webhook", org.computer.id),
  };
  return [
    {
      method: "GET",
      template: "/api/v0/computers",
      params: [...limitString(), CURSOR],
      ok: 200,
      shape: paged("computers", COMPUTER_SHAPE),
    },
    {
      method: "DELETE",
      template: "/api/v0/computers/{computerId}",
      params: [
        {
          name: "computerId",
          in: "path",
          // Only fresh computers: the seeded ones are every other computer endpoint's targets.
          valid: fc.constant(new Fresh("computer", r.freshComputer)),
          // The busy computer is a 409 (a pending session waits on it), and stays so.
          invalid: fc.constantFrom(...notAComputer, r.busyComputer.id),
        },
      ],
      ok: 204,
      shape: () => undefined,
    },
    {
      method: "POST",
      template: "/api/v0/computers/{computerId}/provisioning/retry",
      params: [
        {
          name: "computerId",
          in: "path",
          valid: fc.constant(new Fresh("failed computer", r.failedComputer)),
          // A computer that did not fail (the seeded byom one is provisioning) is a 409.
          invalid: fc.constantFrom(...notAComputer, org.computer.id),
        },
      ],
      ok: 200,
      shape: (json) =>
        keys(json, [...COMPUTER_SHAPE, "provisioningSteps"]) ??
        (json.status === "provisioning" ? undefined : `status ${json.status}`),
    },
    {
      method: "GET",
      template: "/api/v0/organization/usage/limits/users",
      params: [...limitString(), CURSOR],
      ok: 200,
      shape: paged("users", ["email", "usedMonthToDate"]),
    },
    {
      method: "DELETE",
      template: "/api/v0/organization/usage/limits/users/{email}",
      params: [
        {
          name: "email",
          in: "path",
          // Removing a limit that is not there is the outcome asked for: a 204 as well, so the
          // organization's users are valid again and again (case and spaces do not matter).
          valid: fc.constantFrom(
            org.members.member.email,
            org.members.guest.email,
            org.members.manager.email.toUpperCase(),
            ` ${org.members.owner.email}`,
          ),
          invalid: fc.constantFrom("nobody@example.test", "not-an-email", randomUUID(), "e".repeat(300)),
        },
      ],
      ok: 204,
      shape: () => undefined,
    },
    {
      method: "GET",
      template: "/api/v0/organization/usage/limits/me",
      params: [],
      ok: 200,
      shape: (json) => keys(json, ["email", "usedMonthToDate"]),
    },
    {
      method: "POST",
      template: "/api/v0/webhooks",
      params: [
        {
          name: "url",
          in: "body",
          required: true,
          valid: fc.constant(new Fresh("room for a webhook", r.webhookUrl)),
          // Not https, a private, loopback, link-local or metadata address, a fragment, a user.
          invalid: fc.constantFrom<unknown>(
            "",
            "http://93.184.216.34/hooks",
            "https://127.0.0.1/hooks",
            "https://10.1.2.3/hooks",
            "https://192.168.0.1/hooks",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/hooks",
            "https://[::ffff:127.0.0.1]/hooks",
            "https://0.0.0.0/hooks",
            "https://93.184.216.34/hooks#frag",
            "https://user:pw@93.184.216.34/hooks",
            "ftp://93.184.216.34/hooks",
            "not a url",
            `https://93.184.216.34/${"p".repeat(3000)}`,
            5,
            [],
          ),
        },
        {
          name: "events",
          in: "body",
          required: true,
          valid: fc.subarray(WEBHOOK_EVENTS, { minLength: 1 }),
          invalid: fc.constantFrom<unknown>(
            [],
            ["session.created"],
            ["message.created", "message.created"],
            ["MESSAGE.CREATED"],
            "message.created",
            [5],
          ),
        },
        {
          name: "description",
          in: "body",
          valid: fc.string({ maxLength: 500 }),
          invalid: fc.constantFrom<unknown>("d".repeat(501), 5, [], {}),
        },
      ],
      ok: 201,
      shape: (json) =>
        keys(json, ["id", "url", "events", "createdAt", "secret"]) ??
        (String(json.secret).startsWith("whsec_") ? undefined : "the secret is not a whsec_ secret"),
    },
    {
      method: "GET",
      template: "/api/v0/webhooks",
      params: [...limitString(), CURSOR],
      ok: 200,
      shape: (json) =>
        paged("webhooks", ["id", "url", "events", "createdAt"])(json) ??
        (json.webhooks.some((w: any) => "secret" in w) ? "a listed webhook shows its secret" : undefined),
    },
    {
      method: "DELETE",
      template: "/api/v0/webhooks/{webhookId}",
      params: [{ ...webhookId, valid: fc.constant(new Fresh("webhook", r.freshWebhook)) }],
      ok: 204,
      shape: () => undefined,
    },
    {
      method: "GET",
      template: "/api/v0/webhooks/{webhookId}/deliveries",
      params: [webhookId, ...limitString(), CURSOR],
      ok: 200,
      shape: paged("deliveries", ["id", "event", "status", "attempts", "createdAt"]),
    },
    // OTLP/HTTP (docs/otlp.md), fuzzed in its JSON encoding: the answer is the export's
    // response, whose partialSuccess counts what was refused; a body of the wrong shape is a 400.
    otlpEndpoint("/v1/logs", "resourceLogs", "scopeLogs", "logRecords", {
      timeUnixNano: String(BigInt(Date.now()) * 1_000_000n),
      body: { stringValue: "claude_code.user_prompt" },
    }),
    otlpEndpoint("/v1/metrics", "resourceMetrics", "scopeMetrics", "metrics", {
      name: "claude_code.commit.count",
      sum: {
        aggregationTemporality: 1,
        dataPoints: [{ asInt: "1", timeUnixNano: String(BigInt(Date.now()) * 1_000_000n) }],
      },
    }),
    otlpEndpoint("/v1/traces", "resourceSpans", "scopeSpans", "spans", {
      traceId: "5b8efff798038103d269b633813fc60c",
      spanId: "eee19b7ec3c1b174",
      name: "span",
    }),
  ];
}

/** An OTLP/HTTP export endpoint: its one body field holds resources, of scopes, of items. */
function otlpEndpoint(template: string, field: string, scopes: string, items: string, item: object): Endpoint {
  return {
    method: "POST",
    template,
    params: [
      {
        name: field,
        in: "body",
        valid: fc.constantFrom<unknown>([], [{}], [{ [scopes]: [{ [items]: [item] }] }]),
        invalid: fc.constantFrom<unknown>("many", 5, [5], ["x"], { [scopes]: [] }, [{ [scopes]: "x" }]),
      },
    ],
    ok: 200,
    otlp: true,
    shape: (json) =>
      keys(json, ["partialSuccess"]) ?? (isObject(json.partialSuccess) ? undefined : "partialSuccess is not an object"),
  };
}

/** The methods routed for a path template (a method outside it is a wrong method there). */
export function methodsOf(all: readonly Endpoint[], template: string): Set<string> {
  return new Set(all.filter((e) => e.template === template).map((e) => e.method));
}
