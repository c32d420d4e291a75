// What the benchmark measures: each case is one request shape against one server, and a check
// that a single request of that shape answers correctly before any load is put on it (a fast
// error page would otherwise look like a fast endpoint).
import { connect as connectH2 } from "node:http2";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { GetSessionRequestSchema, SessionSchema } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Dataset } from "./dataset.js";
import type { LoadTarget } from "./load.js";

export interface Endpoints {
  restUrl: string;
  /** host:port of the service's gRPC listener. */
  grpcAddress: string;
  bareUrl: string;
  /** The bare handler's HTTP/2 (cleartext) listener. */
  bareH2Url: string;
  /** The REST edge of the split topology: its own process (SERVICES=edge), over gRPC to a services process. */
  splitUrl: string;
}

/**
 * The processes a case's request runs through, each with its CPU time per request:
 * `service` runs every module with the in-process edge (and serves direct gRPC); `bare` is the
 * floor handler (bench/bare-server.ts, HTTP/1 and HTTP/2); `split-edge` and `split-services` are
 * the deployed shape, the edge alone (SERVICES=edge, EDGE_UPSTREAM_URL) and the modules without it.
 */
export type ServerRole = "service" | "bare" | "split-edge" | "split-services";

export interface CaseContext {
  endpoints: Endpoints;
  dataset: Dataset;
  /** 90 days ending yesterday (analytics data lags a day). */
  analyticsRange: { startDate: string; endDate: string };
  grpcChannels: number;
}

export interface BenchCase {
  id: string;
  label: string;
  /** Reads are held to the p99 target. */
  read: boolean;
  /** The processes that serve it (for their CPU time per request), in the order of the request. */
  servers: ServerRole[];
  /** A floor (no platform code): its p99 is shown, not held to the target. */
  floor?: boolean;
  target(ctx: CaseContext): LoadTarget;
  /** Throws unless one request answers as it should. */
  check(ctx: CaseContext): Promise<void>;
}

const POST_TEXT = "Benchmark: summarise what changed in the last commit and list any failing tests.";

/** What browsers send (and curl --compressed, and fetch, by default). */
const BROWSER_ENCODINGS = "gzip, deflate, br";

function bearer(ctx: CaseContext): Record<string, string> {
  return { authorization: `Bearer ${ctx.dataset.apiKey}` };
}

/** The session ids the reads and writes rotate through (every top-level session). */
function sessionPaths(ctx: CaseContext, prefix: string, suffix = ""): string[] {
  return ctx.dataset.sessionIds.map((id) => `${prefix}${encodeURIComponent(id)}${suffix}`);
}

async function fetchJson(url: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
  const res = await fetch(url, init);
  const text = await res.text();
  if (res.status !== 200)
    throw new Error(`${init.method ?? "GET"} ${url} answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as Record<string, unknown>;
}

function expect(condition: boolean, what: string): void {
  if (!condition) throw new Error(`check failed: ${what}`);
}

/** A 90-day /tokens read whose client sends this Accept-Encoding (and gets this Content-Encoding). */
function tokensCase(id: string, label: string, acceptEncoding: string, contentEncoding: string | null): BenchCase {
  const path = (ctx: CaseContext) =>
    `/api/v1/analytics/tokens?startDate=${ctx.analyticsRange.startDate}&endDate=${ctx.analyticsRange.endDate}`;
  const headers = (ctx: CaseContext) => ({ ...bearer(ctx), "accept-encoding": acceptEncoding });
  return {
    id,
    label,
    read: true,
    servers: ["service"],
    target: (ctx) => ({
      kind: "http",
      url: ctx.endpoints.restUrl,
      method: "GET",
      paths: [path(ctx)],
      headers: headers(ctx),
    }),
    async check(ctx) {
      const res = await fetch(ctx.endpoints.restUrl + path(ctx), { headers: headers(ctx) });
      expect(res.status === 200, `tokens answers 200, not ${res.status}`);
      const encoding = res.headers.get("content-encoding");
      expect(
        encoding === contentEncoding,
        `the tokens answer comes with Content-Encoding ${contentEncoding}, not ${encoding} (Accept-Encoding: ${acceptEncoding})`,
      );
      const body = JSON.parse(await res.text()) as Record<string, unknown>; // fetch inflates it
      const data = body.data as Record<string, unknown>[];
      expect(
        Array.isArray(data) && data.length > 0 && data.some((row) => Number(row.billable_tokens) > 0),
        "90 days of token rows with usage",
      );
    },
  };
}

/** GET /api/v0/sessions/{id} through a REST edge at `url`. */
function edgeGetCase(id: string, label: string, servers: ServerRole[], url: (e: Endpoints) => string): BenchCase {
  return {
    id,
    label,
    read: true,
    servers,
    target: (ctx) => ({
      kind: "http",
      url: url(ctx.endpoints),
      method: "GET",
      paths: sessionPaths(ctx, "/api/v0/sessions/"),
      headers: bearer(ctx),
    }),
    async check(ctx) {
      const sessionId = ctx.dataset.sessionIds[0]!;
      const body = await fetchJson(`${url(ctx.endpoints)}/api/v0/sessions/${sessionId}`, { headers: bearer(ctx) });
      expect(
        body.sessionId === sessionId && typeof body.status === "string",
        `${id}: the edge returns the requested session with its status`,
      );
    },
  };
}

/** One GET over HTTP/2 (node:http2), the body parsed as JSON. */
function h2GetJson(url: string, path: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const session = connectH2(url);
    session.once("error", reject);
    const stream = session.request({ ":method": "GET", ":path": path });
    const chunks: Buffer[] = [];
    let status = 0;
    stream.once("response", (headers) => {
      status = Number(headers[":status"]);
    });
    stream.on("data", (d: Buffer) => chunks.push(d));
    stream.once("error", reject);
    stream.once("end", () => {
      session.close();
      const text = Buffer.concat(chunks).toString("utf8");
      if (status !== 200) reject(new Error(`GET ${url}${path} over HTTP/2 answered ${status}: ${text.slice(0, 300)}`));
      else resolve(JSON.parse(text) as Record<string, unknown>);
    });
  });
}

/** One GetSession over gRPC (@grpc/grpc-js) returns the requested session. */
async function grpcGetCheck(ctx: CaseContext): Promise<void> {
  const id = ctx.dataset.sessionIds[0]!;
  const client = new grpc.Client(ctx.endpoints.grpcAddress, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", bearer(ctx).authorization!);
  try {
    const session = await new Promise<ReturnType<typeof fromBinary<typeof SessionSchema>>>((resolve, reject) =>
      client.makeUnaryRequest(
        "/agentplane.sessions.v1alpha1.SessionService/GetSession",
        (m: Buffer) => m,
        (b: Buffer) => fromBinary(SessionSchema, b),
        Buffer.from(toBinary(GetSessionRequestSchema, create(GetSessionRequestSchema, { sessionId: id }))),
        metadata,
        (err, res) => (err || !res ? reject(err ?? new Error("no response")) : resolve(res)),
      ),
    );
    expect(session.sessionId === id, "gRPC GetSession returns the requested session");
  } finally {
    client.close();
  }
}

export const CASES: BenchCase[] = [
  edgeGetCase("edge-get", "GET /api/v0/sessions/{id} (REST edge, in process)", ["service"], (e) => e.restUrl),
  // The deployed shape: the edge in a process of its own calls the services process over gRPC
  // (the TypeScript edge standing in for Envoy).
  edgeGetCase(
    "split-get",
    "same GET, edge process → gRPC → services process",
    ["split-edge", "split-services"],
    (e) => e.splitUrl,
  ),
  {
    id: "grpc-get",
    label: "GetSession over gRPC (@grpc/grpc-js)",
    read: true,
    servers: ["service"],
    target: (ctx) => ({
      kind: "grpc",
      address: ctx.endpoints.grpcAddress,
      service: "agentplane.sessions.v1alpha1.SessionService",
      method: "GetSession",
      requests: ctx.dataset.sessionIds.map((sessionId) => ({ sessionId })),
      metadata: bearer(ctx),
      channels: ctx.grpcChannels,
    }),
    check: (ctx) => grpcGetCheck(ctx),
  },
  {
    // The same calls from a load generator on raw node:http2 (pre-encoded frames, answers not
    // decoded), so that @grpc/grpc-js's own client cost does not bound the server's throughput.
    id: "grpc-h2-get",
    label: "GetSession over gRPC (raw node:http2 client)",
    read: true,
    servers: ["service"],
    target: (ctx) => ({
      kind: "grpc-h2",
      url: `http://${ctx.endpoints.grpcAddress}`,
      service: "agentplane.sessions.v1alpha1.SessionService",
      method: "GetSession",
      requests: ctx.dataset.sessionIds.map((sessionId) => ({ sessionId })),
      metadata: bearer(ctx),
      channels: ctx.grpcChannels,
    }),
    check: (ctx) => grpcGetCheck(ctx),
  },
  {
    id: "bare-get",
    label: "same read, bare node:http + pg (HTTP/1 floor)",
    read: true,
    servers: ["bare"],
    floor: true,
    target: (ctx) => ({
      kind: "http",
      url: ctx.endpoints.bareUrl,
      method: "GET",
      paths: sessionPaths(ctx, "/sessions/"),
      headers: {},
    }),
    async check(ctx) {
      const id = ctx.dataset.sessionIds[0]!;
      const body = await fetchJson(`${ctx.endpoints.bareUrl}/sessions/${id}`);
      expect(body.sessionId === id, "the bare handler returns the requested session");
    },
  },
  {
    id: "bare-h2-get",
    label: "same read, bare node:http2 + pg (HTTP/2 floor)",
    read: true,
    servers: ["bare"],
    floor: true,
    target: (ctx) => ({
      kind: "h2",
      url: ctx.endpoints.bareH2Url,
      paths: sessionPaths(ctx, "/sessions/"),
      headers: {},
      channels: ctx.grpcChannels,
    }),
    async check(ctx) {
      const id = ctx.dataset.sessionIds[0]!;
      const body = await h2GetJson(ctx.endpoints.bareH2Url, `/sessions/${id}`);
      expect(body.sessionId === id, "the bare HTTP/2 handler returns the requested session");
    },
  },
  {
    id: "edge-list",
    label: "GET /api/v0/sessions?limit=100",
    read: true,
    servers: ["service"],
    target: (ctx) => ({
      kind: "http",
      url: ctx.endpoints.restUrl,
      method: "GET",
      paths: ["/api/v0/sessions?limit=100"],
      headers: bearer(ctx),
    }),
    async check(ctx) {
      const body = await fetchJson(`${ctx.endpoints.restUrl}/api/v0/sessions?limit=100`, { headers: bearer(ctx) });
      const sessions = body.sessions as unknown[];
      expect(
        Array.isArray(sessions) && sessions.length === Math.min(100, ctx.dataset.sessions),
        `a full page of ${Math.min(100, ctx.dataset.sessions)} sessions (got ${sessions?.length})`,
      );
    },
  },
  {
    id: "edge-post",
    label: "POST /api/v0/sessions/{id}/messages",
    read: false,
    servers: ["service"],
    target: (ctx) => ({
      kind: "http",
      url: ctx.endpoints.restUrl,
      method: "POST",
      paths: sessionPaths(ctx, "/api/v0/sessions/", "/messages"),
      headers: bearer(ctx),
      body: JSON.stringify({ text: POST_TEXT }),
    }),
    async check(ctx) {
      // The last session in the rotation, so the check adds no message the load would not.
      const id = ctx.dataset.sessionIds[ctx.dataset.sessionIds.length - 1]!;
      const body = await fetchJson(`${ctx.endpoints.restUrl}/api/v0/sessions/${id}/messages`, {
        method: "POST",
        headers: { ...bearer(ctx), "content-type": "application/json" },
        body: JSON.stringify({ text: POST_TEXT }),
      });
      expect(
        typeof body.messageId === "string" && ["pending", "running", "idle"].includes(body.status as string),
        "POST returns a messageId and a status",
      );
    },
  },
  // As a browser, curl --compressed or fetch asks for it: the answer is the rollup's compressed
  // day rows, sent as they are stored (README, "Analytics"), in gzip since 78c4f64: the edge gives
  // equal preference to gzip (services/edge/accept-encoding.ts).
  tokensCase("edge-tokens", "GET /api/v1/analytics/tokens (90 days, gzip)", BROWSER_ENCODINGS, "gzip"),
  // Not in the default set: a client that takes deflate alone, the answer the figures in
  // BENCHMARKS.md before 78c4f64 measured (the browser's header got deflate then).
  tokensCase("edge-tokens-deflate", "GET /api/v1/analytics/tokens (90 days, deflate)", "deflate", "deflate"),
  // Not in the default set: the same read by a client that does not take compression.
  tokensCase("edge-tokens-text", "GET /api/v1/analytics/tokens (90 days, as text)", "identity", null),
  {
    // Not in the default set: the organization service's user list, which is how the harness
    // was first validated and a second, simpler edge path to compare with.
    id: "edge-users",
    label: "GET /api/v0/organization/users",
    read: true,
    servers: ["service"],
    target: (ctx) => ({
      kind: "http",
      url: ctx.endpoints.restUrl,
      method: "GET",
      paths: ["/api/v0/organization/users"],
      headers: bearer(ctx),
    }),
    async check(ctx) {
      const body = await fetchJson(`${ctx.endpoints.restUrl}/api/v0/organization/users`, { headers: bearer(ctx) });
      expect(Array.isArray(body.users) && (body.users as unknown[]).length > 0, "a page of users");
    },
  },
];

/** The paths of one request (GetSession) the targets compare, the in-process edge first. */
export const PATH_CASES = ["edge-get", "split-get", "grpc-get", "grpc-h2-get", "bare-get", "bare-h2-get"];

export const DEFAULT_CASES = [...PATH_CASES, "edge-list", "edge-post", "edge-tokens"];
