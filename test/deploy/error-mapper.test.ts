// The production edge's Lua error mapper (deploy/envoy/error-mapper.lua) against the TypeScript
// edge (services/edge): one list of (request → status, body) cases, each sent to a real
// TypeScript edge and played through the Lua script as Envoy would run it (envoy-model.ts says
// what Envoy's transcoder and router hand the script). Both must answer the same.
import { once } from "node:events";
import { createServer, request as httpRequest, STATUS_CODES, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { create, toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError, createRouterTransport } from "@connectrpc/connect";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CreateThingResponseSchema, EdgeTestService } from "../../gen/agentplane/edgetest/v1/edgetest_pb.js";
import { createRestEdge } from "../../services/edge/edge.js";
import { errorBody } from "../../services/edge/errors.js";
import { CONTENT_TYPES, encodeStatus, type OtlpEncoding } from "../../services/platform/otlp-http.js";
import { redactCredentials } from "../../services/platform/logger.js";
import { GRPC_TO_HTTP_STATUS, reasonPhrase } from "../../services/edge/status.js";
import { parseEnvoyYaml, publicEdge, readEnvoyYaml } from "./envoy-config.js";
import {
  convertedGrpcError,
  ENVOY_GRPC_TO_HTTP,
  grpcPercentEncode,
  localReply,
  unconvertedGrpcError,
} from "./envoy-model.js";
import {
  errorMapperSource,
  loadErrorMapper,
  luaConstantTable,
  luajitAvailable,
  runUnderLuajit,
  type ErrorMapper,
  type HeaderList,
  type LuaRequest,
  type LuaResult,
  type UpstreamResponse,
} from "./lua-mapper.js";

// ---------------------------------------------------------------------------------------------
// The TypeScript edge in front of the test-only EdgeTestService, implemented in memory.

const transport = createRouterTransport(({ service }) => {
  service(EdgeTestService, {
    getThing: (req) => ({ thing: { id: req.thingId } }),
    createThing(req, ctx) {
      ctx.responseHeader.set("x-http-code", "201");
      ctx.responseHeader.set("location", `/v1/things/${req.thing?.id ?? ""}`);
      return { thing: req.thing, shelfId: req.shelfId };
    },
    echoHeaders(req, ctx) {
      ctx.responseHeader.set("etag", '"v1"');
      if (req.httpCode !== "") ctx.responseHeader.set("x-http-code", req.httpCode);
      return { headers: {} };
    },
    // Echoes the raw body's media type: what reached the service. A `fail=CODE` parameter in it
    // makes the call fail with that gRPC code, as credentials, limits or a busy receiver fail
    // the OTLP routes this one stands for.
    async *upload(req) {
      const fail = /fail=(\d+)/.exec(req.contentType);
      if (fail) {
        const code = Number(fail[1]) as Code;
        throw new ConnectError(otlpRefusal(code), code, { "retry-after": "3" });
      }
      yield { contentType: "text/plain", data: new TextEncoder().encode(`received ${req.contentType}`) };
    },
    fail(req) {
      const metadata: Record<string, string> = {};
      if (req.retryAfter !== "") {
        metadata["retry-after"] = req.retryAfter;
        metadata["ratelimit-remaining"] = "0";
      }
      throw new ConnectError(req.message, req.code as Code, metadata);
    },
  });
});

let server: Server;
let port: number;
let mapper: ErrorMapper;
const hcm = publicEdge(parseEnvoyYaml(readEnvoyYaml()))!.hcm;

beforeAll(async () => {
  const handler = createRestEdge({ services: [EdgeTestService], transport, logger: pino({ level: "silent" }) });
  server = createServer((req, res) => void handler(req, res));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  port = (server.address() as AddressInfo).port;
  const vm = await loadErrorMapper();
  // Every exchange is recorded, to be replayed under LuaJIT at the end.
  mapper = {
    exchange(request, upstream) {
      const result = vm.exchange(request, upstream);
      recorded.push([request, upstream, result]);
      return result;
    },
    close: () => vm.close(),
  };
});

const recorded: [LuaRequest, UpstreamResponse | undefined, LuaResult][] = [];

afterAll(() => {
  server?.closeAllConnections();
  server?.close();
  mapper?.close();
});

interface RestRequest {
  readonly method: string;
  readonly path: string;
  readonly headers?: HeaderList;
  readonly body?: string;
}

interface Answer {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
  readonly bytes: Buffer;
}

/** The request through the TypeScript edge (node:http, so no header is added behind our back). */
function viaTypeScriptEdge(req: RestRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = Object.fromEntries(req.headers ?? []);
    if (req.body !== undefined) headers["content-length"] = String(Buffer.byteLength(req.body));
    const r = httpRequest({ host: "127.0.0.1", port, method: req.method, path: req.path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const out = new Map<string, string>();
        for (const [k, v] of Object.entries(res.headers))
          if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(", ") : v);
        const bytes = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: out, body: bytes.toString("utf8"), bytes });
      });
    });
    r.on("error", reject);
    r.end(req.body);
  });
}

/**
 * The request through Envoy's filter chain as far as the Lua script sees it: envoy_on_request on
 * the client's headers (plus the X-Request-Id Envoy's connection manager generates when the client
 * sent none), then envoy_on_response on what the transcoder/router produced.
 */
function viaLuaMapper(
  req: RestRequest,
  upstream: UpstreamResponse | undefined,
  generatedId = "5b0fd4e4-4a8b-4a53-9f4c-3c4b8e1f2a10",
): LuaResult {
  const headers: [string, string][] = (req.headers ?? []).map(([k, v]) => [k.toLowerCase(), v]);
  if (!headers.some(([k]) => k === "x-request-id")) headers.push(["x-request-id", generatedId]);
  if (req.body !== undefined) headers.push(["content-length", String(Buffer.byteLength(req.body))]);
  return mapper.exchange({ method: req.method, path: req.path, headers }, upstream);
}

/** Same status, same body bytes, same content type and request id, on both edges. */
function expectSameAnswer(ts: Answer, lua: LuaResult): void {
  expect({ status: lua.status, body: lua.body }).toEqual({ status: ts.status, body: ts.body });
  expect(lua.headers.get("content-type")).toBe(ts.headers.get("content-type"));
  expect(lua.headers.get("x-request-id")).toBe(ts.headers.get("x-request-id"));
  if (ts.status >= 400) {
    expect(JSON.parse(lua.body).requestId).toBe(lua.headers.get("x-request-id"));
    expect(lua.headers.get("content-length")).toBe(String(Buffer.byteLength(lua.body)));
  }
}

const TRICKY = 'went wrong: "quoted" \\ back <b>&amp; é 😀 100% +plus\nsecond line\ttab';

/** The message of a refused OTLP upload: a long one past 127 bytes (a two-byte protobuf length). */
const otlpRefusal = (code: Code) =>
  code === Code.Unauthenticated
    ? `invalid or revoked service account token ${"x".repeat(120)} (${code})`
    : `refused (${code})`;

/**
 * On an OTLP/HTTP path both edges answer an error with a google.rpc.Status in the request's
 * encoding (docs/otlp.md), the same bytes, content type, request id and Retry-After.
 */
function expectSameOtlpAnswer(ts: Answer, lua: LuaResult, encoding: OtlpEncoding, detail: string): void {
  expect(ts.headers.get("content-type")).toBe(CONTENT_TYPES[encoding]);
  expect(ts.bytes).toEqual(Buffer.from(encodeStatus(detail, encoding)));
  expect({ status: lua.status, body: lua.body }).toEqual({ status: ts.status, body: ts.body });
  expect(lua.headers.get("content-type")).toBe(ts.headers.get("content-type"));
  expect(lua.headers.get("x-request-id")).toBe(ts.headers.get("x-request-id"));
  expect(lua.headers.get("content-length")).toBe(ts.headers.get("content-length"));
}

// ---------------------------------------------------------------------------------------------

describe("the Lua error mapper answers as the TypeScript edge", () => {
  const codes = Object.keys(ENVOY_GRPC_TO_HTTP)
    .map(Number)
    .filter((c) => c !== 0);

  it.each(codes)("gRPC code %i from a service: same status and error body", async (code) => {
    const message = `${TRICKY} (${code})`;
    const req: RestRequest = {
      method: "GET",
      path: `/v1/fail/${code}?message=${encodeURIComponent(message)}`,
      headers: [["X-Request-Id", `fail-${code}`]],
    };
    const ts = await viaTypeScriptEdge(req);
    expect(ts.status).toBe(ENVOY_GRPC_TO_HTTP[code]);
    expectSameAnswer(ts, viaLuaMapper(req, convertedGrpcError(code, message)));
  });

  it("a gRPC error Envoy could not print (grpc-status/grpc-message headers, no body): same answer", async () => {
    const req: RestRequest = {
      method: "GET",
      path: `/v1/fail/${Code.NotFound}?message=${encodeURIComponent(TRICKY)}`,
      headers: [["x-request-id", "unconverted"]],
    };
    const ts = await viaTypeScriptEdge(req);
    const lua = viaLuaMapper(req, unconvertedGrpcError(Code.NotFound, TRICKY));
    expectSameAnswer(ts, lua);
    expect(lua.headers.has("grpc-status")).toBe(false);
    expect(lua.headers.has("grpc-message")).toBe(false);
  });

  it("a 429 keeps the service's Retry-After and rate-limit headers", async () => {
    const req: RestRequest = {
      method: "GET",
      path: `/v1/fail/${Code.ResourceExhausted}?message=slow+down&retryAfter=7`,
      headers: [["x-request-id", "rl-1"]],
    };
    const ts = await viaTypeScriptEdge(req);
    const metadata: HeaderList = [
      ["retry-after", "7"],
      ["ratelimit-remaining", "0"],
    ];
    const lua = viaLuaMapper(req, convertedGrpcError(Code.ResourceExhausted, "slow+down", metadata));
    expectSameAnswer(ts, lua);
    expect(lua.headers.get("retry-after")).toBe(ts.headers.get("retry-after"));
    expect(lua.headers.get("ratelimit-remaining")).toBe(ts.headers.get("ratelimit-remaining"));
  });

  it.each(["/v1/nope", "/v1/nope?x=1", "/v1/things/t1/extra"])(
    "an unknown path (%s): the transcoder's 404, reshaped",
    async (path) => {
      const req: RestRequest = { method: "GET", path, headers: [["x-request-id", "nope-1"]] };
      const ts = await viaTypeScriptEdge(req);
      const text = `Could not resolve ${path.split("?")[0]} to a method.`;
      expectSameAnswer(ts, viaLuaMapper(req, localReply(hcm, 404, text, new Map([["x-request-id", "nope-1"]]))));
    },
  );

  it("a raw gRPC request: refused with 404 on the request path, never proxied", async () => {
    const req: RestRequest = {
      method: "POST",
      path: "/agentplane.edgetest.v1.EdgeTestService/GetThing",
      headers: [
        ["content-type", "application/grpc"],
        ["te", "trailers"],
        ["x-request-id", "grpc-1"],
      ],
      body: "\u0001\u0001\u0001\u0001\u0001",
    };
    const ts = await viaTypeScriptEdge(req);
    const lua = viaLuaMapper(req, undefined);
    expect(lua.responded).toBe(true);
    expectSameAnswer(ts, lua);
  });

  it("OTLP/gRPC to the OpenTelemetry collector services: passed through, and its gRPC answer left as it is", () => {
    const req: RestRequest = {
      method: "POST",
      path: "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
      headers: [
        ["content-type", "application/grpc"],
        ["te", "trailers"],
        ["x-request-id", "otlp-grpc-1"],
      ],
      body: "\u0000\u0000\u0000\u0000\u0000",
    };
    // A trailers-only refusal (grpc-status in the headers) is the exporter's to read, not JSON.
    const lua = viaLuaMapper(req, {
      status: 200,
      headers: [
        ["content-type", "application/grpc"],
        ["grpc-status", "16"],
        ["grpc-message", "missing Authorization header"],
      ],
    });
    expect(lua.responded).toBe(false);
    expect(lua.status).toBe(200);
    expect(lua.headers.get("grpc-status")).toBe("16");
    expect(lua.headers.get("content-type")).toBe("application/grpc");
    expect(lua.body).toBe("");
    // Any other gRPC, internal services' included, is still refused on the request path.
    for (const path of ["/agentplane.analytics.v1.TelemetryService/Ingest", "/opentelemetry.proto.collectorx/Export"]) {
      const other = viaLuaMapper({ ...req, path }, undefined);
      expect(other.responded, path).toBe(true);
      expect(other.status, path).toBe(404);
    }
  });

  it.each([
    ["text/plain", [["content-type", "text/plain"]]],
    ["no content type", []],
    [
      "a compressed body",
      [
        ["content-type", "application/json"],
        ["content-encoding", "gzip"],
      ],
    ],
  ] as [string, [string, string][]][])(
    "a request body that is not plain JSON (%s): the same 415",
    async (_name, headers) => {
      const req: RestRequest = {
        method: "POST",
        path: "/v1/shelves/s1/things",
        headers: [...headers, ["x-request-id", "media-1"]],
        body: '{"thing":{}}',
      };
      const ts = await viaTypeScriptEdge(req);
      expect(ts.status).toBe(415);
      const lua = viaLuaMapper(req, undefined);
      expect(lua.responded).toBe(true);
      expectSameAnswer(ts, lua);
    },
  );

  it.each([
    ["application/x-protobuf", []],
    ["text/plain", []],
    ["application/json, gzip", [["content-encoding", "gzip"]]],
  ] as [string, [string, string][]][])(
    "a raw-body route (google.api.HttpBody, the OTLP routes) with %s: passed on by both edges",
    async (contentType, extra) => {
      const req: RestRequest = {
        method: "POST",
        path: "/v1/logs",
        headers: [["content-type", contentType.split(",")[0]!], ...extra, ["x-request-id", "raw-1"]],
        body: "\u0001\u0002",
      };
      const ts = await viaTypeScriptEdge(req);
      expect(ts.status).toBe(200);
      expect(ts.body).toBe(`received ${contentType.split(",")[0]!}`);
      expect(viaLuaMapper(req, undefined).responded).toBe(false);
    },
  );

  it.each([
    ["application/x-protobuf", "protobuf"],
    ["application/json", "json"],
  ] as const)(
    "a raw-body route with another coding: the same 415, a google.rpc.Status in %s",
    async (type, encoding) => {
      const req: RestRequest = {
        method: "POST",
        path: "/v1/logs",
        headers: [
          ["content-type", type],
          ["content-encoding", "br"],
          ["x-request-id", "raw-2"],
        ],
        body: "x",
      };
      const ts = await viaTypeScriptEdge(req);
      expect(ts.status).toBe(415);
      const lua = viaLuaMapper(req, undefined);
      expect(lua.responded).toBe(true);
      expectSameOtlpAnswer(ts, lua, encoding, 'Unsupported Content-Encoding "br"');
    },
  );

  it.each([
    [Code.Unauthenticated, "application/x-protobuf", "protobuf"],
    [Code.PermissionDenied, "application/json", "json"],
    [Code.ResourceExhausted, "application/x-protobuf; charset=binary", "protobuf"],
    [Code.Unavailable, "application/json; charset=utf-8", "json"],
    [Code.Unauthenticated, "text/plain", "protobuf"],
  ] as const)(
    "an OTLP/HTTP call refused with gRPC code %i (%s): the same status and google.rpc.Status, Retry-After kept",
    async (code, type, encoding) => {
      const req: RestRequest = {
        method: "POST",
        path: "/v1/logs",
        headers: [
          ["content-type", `${type}; fail=${code}`],
          ["x-request-id", `otlp-${code}`],
        ],
        body: "\u0001",
      };
      const ts = await viaTypeScriptEdge(req);
      expect(ts.status).toBe(ENVOY_GRPC_TO_HTTP[code]);
      const lua = viaLuaMapper(req, convertedGrpcError(code, otlpRefusal(code), [["retry-after", "3"]]));
      expectSameOtlpAnswer(ts, lua, encoding, otlpRefusal(code));
      expect(ts.headers.get("retry-after")).toBe("3");
      expect(lua.headers.get("retry-after")).toBe("3");
    },
  );

  it("an unknown route under an OTLP path's name (GET /v1/logs): a 404 with a google.rpc.Status too", async () => {
    const req: RestRequest = { method: "GET", path: "/v1/logs", headers: [["x-request-id", "otlp-get"]] };
    const ts = await viaTypeScriptEdge(req);
    expect(ts.status).toBe(404);
    const lua = viaLuaMapper(
      req,
      localReply(hcm, 404, "Could not resolve /v1/logs to a method.", new Map([["x-request-id", "otlp-get"]])),
    );
    expectSameOtlpAnswer(ts, lua, "protobuf", "Could not resolve /v1/logs to a method.");
  });

  it("a body nested deeper than 100 levels: the transcoder's JSON parser refuses it, reshaped; the same 400", async () => {
    let deep: unknown = {};
    for (let i = 0; i < 100; i++) deep = { deep };
    const req: RestRequest = {
      method: "POST",
      path: "/v1/shelves/s1/things",
      headers: [
        ["content-type", "application/json"],
        ["x-request-id", "deep-1"],
      ],
      body: JSON.stringify({ thing: deep }),
    };
    const ts = await viaTypeScriptEdge(req);
    expect(ts.status).toBe(400);
    // JsonStreamParser::IncrementRecursionDepth, through sendLocalReply and local_reply_config.
    const text = "Message too deep. Max recursion depth reached for key 'deep'";
    expectSameAnswer(ts, viaLuaMapper(req, localReply(hcm, 400, text, new Map([["x-request-id", "deep-1"]]))));
  });

  it("a body field naming the field a path variable binds, with another value: the transcoder's 400, reshaped", async () => {
    const req: RestRequest = {
      method: "POST",
      path: "/v1/shelves/s%201/things",
      headers: [
        ["content-type", "application/json"],
        ["x-request-id", "collide-1"],
      ],
      body: '{"shelf_id":"s2 \\"x\\"","thing":{}}',
    };
    const ts = await viaTypeScriptEdge(req);
    expect(ts.status).toBe(400);
    // RequestWeaver::CollisionCheck (grpc-httpjson-transcoding): both values quoted as they are,
    // the path's percent-decoded, through sendLocalReply and local_reply_config.
    const text = 'The binding value "s 1" of the field shelf_id is conflicting with the value "s2 "x"" in the body.';
    expectSameAnswer(ts, viaLuaMapper(req, localReply(hcm, 400, text, new Map([["x-request-id", "collide-1"]]))));
  });

  it("a JSON body with a charset parameter goes on to the transcoder", async () => {
    const req: RestRequest = {
      method: "POST",
      path: "/v1/shelves/s1/things",
      headers: [
        ["content-type", "Application/JSON; charset=utf-8"],
        ["x-request-id", "ok-1"],
      ],
      body: '{"thing":{"id":"n1"}}',
    };
    const ts = await viaTypeScriptEdge(req);
    expect(ts.status).toBe(201);
    expect(
      viaLuaMapper(req, { status: 200, headers: [["content-type", "application/json"]], body: "{}" }).responded,
    ).toBe(false);
  });

  it("x-http-code 201 becomes the status and is removed; the body and other headers pass", async () => {
    const req: RestRequest = {
      method: "POST",
      path: "/v1/shelves/s1/things",
      headers: [
        ["content-type", "application/json"],
        ["x-request-id", "created-1"],
      ],
      body: '{"thing":{"id":"n1"}}',
    };
    const ts = await viaTypeScriptEdge(req);
    // The transcoder prints the response with always_print_primitive_fields and JSON names.
    const printed = toJsonString(
      CreateThingResponseSchema,
      create(CreateThingResponseSchema, { thing: { id: "n1" }, shelfId: "s1" }),
      { alwaysEmitImplicit: true },
    );
    const lua = viaLuaMapper(req, {
      status: 200,
      headers: [
        ["content-type", "application/json"],
        ["x-http-code", "201"],
        ["location", "/v1/things/n1"],
      ],
      body: printed,
    });
    expectSameAnswer(ts, lua);
    expect(ts.headers.has("x-http-code")).toBe(false);
    expect(lua.headers.has("x-http-code")).toBe(false);
    expect(lua.headers.get("location")).toBe(ts.headers.get("location"));
  });

  it("x-http-code 304: no body, no content type", async () => {
    const req: RestRequest = {
      method: "GET",
      path: "/v1/echo/headers?httpCode=304",
      headers: [["x-request-id", "nm-1"]],
    };
    const ts = await viaTypeScriptEdge(req);
    const lua = viaLuaMapper(req, {
      status: 200,
      headers: [
        ["content-type", "application/json"],
        ["x-http-code", "304"],
        ["etag", '"v1"'],
      ],
      body: '{"headers":{}}',
    });
    expectSameAnswer(ts, lua);
    expect(lua.body).toBe("");
    expect(lua.headers.get("etag")).toBe(ts.headers.get("etag"));
  });

  it("an invalid x-http-code is ignored, with a warning", async () => {
    const req: RestRequest = {
      method: "GET",
      path: "/v1/echo/headers?httpCode=abc",
      headers: [["x-request-id", "bad-code-1"]],
    };
    const ts = await viaTypeScriptEdge(req);
    const lua = viaLuaMapper(req, {
      status: 200,
      headers: [
        ["content-type", "application/json"],
        ["x-http-code", "abc"],
      ],
      body: ts.body,
    });
    expectSameAnswer(ts, lua);
    expect(lua.headers.has("x-http-code")).toBe(false);
    expect(lua.logs).toContainEqual(expect.stringContaining("ignoring invalid x-http-code"));
  });

  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it.each([
    ["too long", "x".repeat(201)],
    ["with a space", "has space"],
    ["with a non-ASCII character", "idé"],
  ])("a client X-Request-Id %s is replaced by a new UUID on both edges", async (_name, id) => {
    const req: RestRequest = {
      method: "GET",
      path: `/v1/fail/${Code.NotFound}?message=gone`,
      headers: [["x-request-id", id]],
    };
    const ts = await viaTypeScriptEdge(req);
    const lua = viaLuaMapper(req, convertedGrpcError(Code.NotFound, "gone"));
    for (const answer of [ts, { ...lua, headers: lua.headers }]) {
      const sent = answer.headers.get("x-request-id") ?? "";
      expect(sent).toMatch(UUID);
      expect(JSON.parse(answer.body).requestId).toBe(sent);
    }
    expect(lua.requestHeaders.get("x-request-id")).toBe(lua.headers.get("x-request-id"));
    // Apart from the fresh id, the answers are the same.
    expect(lua.body.replace(lua.headers.get("x-request-id")!, "ID")).toBe(
      ts.body.replace(ts.headers.get("x-request-id")!, "ID"),
    );
  });

  it("a request without X-Request-Id answers with the one Envoy generated", () => {
    const lua = viaLuaMapper(
      { method: "GET", path: "/v1/fail/5" },
      convertedGrpcError(Code.NotFound, "gone"),
      "0f8fad5b-d9cb-469f-a165-70867728950e",
    );
    expect(lua.headers.get("x-request-id")).toBe("0f8fad5b-d9cb-469f-a165-70867728950e");
    expect(JSON.parse(lua.body)).toEqual({
      title: "Not Found",
      detail: "gone",
      status: 404,
      requestId: "0f8fad5b-d9cb-469f-a165-70867728950e",
    });
  });
});

describe("the access log's path", () => {
  const KEY = `apk_${"Kk0_-".repeat(8)}xyz`;
  const WORKLOAD = `aps_${"Ww9".repeat(14)}w`;
  const JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1In0.c2lnbmF0dXJlLXNpZ25hdHVyZQ";
  it.each([
    ["a key in a query value", `/api/organization/maturity-level-reports?repoId=${KEY}`],
    ["a workload token in a path variable", `/api/v0/sessions/${WORKLOAD}/messages?limit=5`],
    ["a JWT in a query value", `/api/v0/sessions?cursor=${JWT}&limit=2`],
    ["a Bearer value", `/api/v0/organization/users?cursor=Bearer%20${KEY}`],
    ["two credentials", `/api/v0/computers/name/${KEY}?x=${JWT}`],
    ["nothing to hide", "/api/v1/analytics/tokens?startDate=2026-02-01&endDate=2026-02-02"],
  ])("has %s redacted as the TypeScript edge's logger redacts it", (_what, path) => {
    const lua = viaLuaMapper(
      { method: "GET", path },
      { status: 200, headers: [["content-type", "application/json"]], body: "{}" },
    );
    expect(lua.loggedPath).toBe(redactCredentials(path));
    for (const secret of [KEY, WORKLOAD, JWT]) expect(lua.loggedPath).not.toContain(secret.slice(4, 20));
  });

  it("is what envoy.yaml's access log prints as the path", () => {
    const log = hcm.access_log[0].typed_config.log_format.json_format;
    expect(log.path).toBe("%DYNAMIC_METADATA(envoy.filters.http.lua:path)%");
    // No other field prints the client's path or query.
    for (const [field, format] of Object.entries(log))
      if (field !== "path") expect(String(format), field).not.toMatch(/ORIGINAL-PATH|REQ\(:PATH\)|%PATH%/);
  });
});

describe("the Lua error mapper's tables and encoder", () => {
  it("maps gRPC codes as services/edge/status.ts and Envoy's grpcToHttpStatus do", () => {
    expect(GRPC_TO_HTTP_STATUS).toEqual(ENVOY_GRPC_TO_HTTP);
    for (const [code, status] of Object.entries(ENVOY_GRPC_TO_HTTP)) {
      if (code === "0") continue;
      // A gRPC status left in the headers of a 200 response is mapped by the script itself.
      const lua = mapper.exchange(
        { method: "GET", path: "/x", headers: [["x-request-id", "t"]] },
        {
          status: 200,
          headers: [
            ["grpc-status", code],
            ["grpc-message", "m"],
          ],
        },
      );
      expect(lua.status).toBe(status);
    }
  });

  it("carries copies of services/edge/status.ts's table and of Node's reason phrases, entry for entry", () => {
    const source = errorMapperSource();
    expect(luaConstantTable(source, "GRPC_TO_HTTP")).toEqual(GRPC_TO_HTTP_STATUS);
    const reasons = luaConstantTable(source, "REASON");
    const errorStatuses = [
      ...Object.keys(STATUS_CODES)
        .map(Number)
        .filter((s) => s >= 400),
      499,
    ];
    expect(Object.keys(reasons).map(Number)).toEqual(errorStatuses.sort((a, b) => a - b));
    for (const [status, title] of Object.entries(reasons)) expect(title, status).toBe(reasonPhrase(Number(status)));
    // A copy that drifts is caught.
    const drifted = source.replace("[14] = 503, -- UNAVAILABLE", "[14] = 502, -- UNAVAILABLE");
    expect(drifted).not.toBe(source);
    expect(luaConstantTable(drifted, "GRPC_TO_HTTP")).not.toEqual(GRPC_TO_HTTP_STATUS);
  });

  it("titles every error status as the TypeScript edge does (Node's reason phrases, 499, unknown ones)", () => {
    const statuses = [
      ...Object.keys(STATUS_CODES)
        .map(Number)
        .filter((s) => s >= 400),
      499,
      419,
      599,
    ];
    for (const status of statuses) {
      const lua = mapper.exchange(
        { method: "GET", path: "/x", headers: [["x-request-id", "t"]] },
        { status, headers: [["content-type", "text/plain"]], body: "why" },
      );
      expect(lua.body).toBe(errorBody(status, "why", "t"));
      expect(JSON.parse(lua.body).title).toBe(reasonPhrase(status));
    }
  });

  it.each([
    ["control characters and DEL", "a\u0001b\u001fc\u007fd\u0008\u000c"],
    ["quotes, backslashes, slashes", 'say "hi" \\ / \\u0041'],
    ["non-ASCII", "Grüße, 世界, 😀"],
    ["an empty detail", ""],
  ])("writes %s exactly as JSON.stringify does", (_name, detail) => {
    const lua = mapper.exchange(
      { method: "GET", path: "/x", headers: [["x-request-id", "t"]] },
      convertedGrpcError(Code.InvalidArgument, detail),
    );
    expect(lua.body).toBe(errorBody(400, detail, "t"));
  });

  it("decodes the \\u escapes (surrogate pairs included) of the transcoder's JSON", () => {
    const body =
      '{"code":5,"message":"smile \\ud83d\\ude00 \\u00e9\\/\\u003c","details":[{"@type":"type.googleapis.com/x.Y","n":[1,2.5e3,null,true]}]}';
    const lua = mapper.exchange(
      { method: "GET", path: "/x", headers: [["x-request-id", "t"]] },
      { status: 404, headers: [["content-type", "application/json"]], body },
    );
    expect(JSON.parse(lua.body)).toEqual({ title: "Not Found", detail: "smile 😀 é/<", status: 404, requestId: "t" });
  });

  it("reshapes Envoy's own replies: router text, local_reply_config JSON, and a gRPC local reply carrying it", () => {
    const headers = new Map([["x-request-id", "t"]]);
    const text = mapper.exchange(
      { method: "GET", path: "/x", headers: [["x-request-id", "t"]] },
      { status: 503, headers: [["content-type", "text/plain"]], body: "no healthy upstream" },
    );
    expect(text.body).toBe(errorBody(503, "no healthy upstream", "t"));
    const formatted = mapper.exchange(
      { method: "GET", path: "/x", headers: [["x-request-id", "t"]] },
      localReply(hcm, 504, "upstream request timeout", headers),
    );
    expect(formatted.body).toBe(errorBody(504, "upstream request timeout", "t"));
    // For a gRPC request Envoy puts the formatted local reply into grpc-message; the transcoder
    // then prints it as the message of a google.rpc.Status.
    const inner = localReply(hcm, 503, "no healthy upstream", headers).body!.trimEnd();
    const grpc = mapper.exchange(
      { method: "GET", path: "/x", headers: [["x-request-id", "t"]] },
      convertedGrpcError(Code.Unavailable, inner),
    );
    expect(grpc.body).toBe(errorBody(503, "no healthy upstream", "t"));
    const undecoded = mapper.exchange(
      { method: "GET", path: "/x", headers: [["x-request-id", "t"]] },
      {
        status: 200,
        headers: [
          ["grpc-status", "14"],
          ["grpc-message", grpcPercentEncode(inner)],
        ],
      },
    );
    expect(undecoded.body).toBe(errorBody(503, "no healthy upstream", "t"));
  });

  it("leaves a plain success alone apart from X-Request-Id", () => {
    const lua = mapper.exchange(
      { method: "GET", path: "/v1/things/t1", headers: [["x-request-id", "t"]] },
      {
        status: 200,
        headers: [
          ["content-type", "application/json"],
          ["etag", '"1"'],
        ],
        body: '{"thing":{}}',
      },
    );
    expect(lua.status).toBe(200);
    expect(lua.body).toBe('{"thing":{}}');
    expect([...lua.headers]).toEqual([
      ["content-type", "application/json"],
      ["etag", '"1"'],
      ["x-request-id", "t"],
    ]);
  });

  it("applies x-http-code only to a 200 success, like the TypeScript edge", () => {
    const lua = mapper.exchange(
      {
        method: "POST",
        path: "/x",
        headers: [
          ["x-request-id", "t"],
          ["content-type", "application/json"],
          ["content-length", "2"],
        ],
      },
      {
        status: 200,
        headers: [
          ["x-http-code", "404"],
          ["content-type", "application/json"],
        ],
        body: '{"a":1}',
      },
    );
    // A service asking for 404 on a success keeps its own body, as in services/edge/respond.ts.
    expect(lua.status).toBe(404);
    expect(lua.body).toBe('{"a":1}');
    const low = mapper.exchange(
      { method: "GET", path: "/x", headers: [["x-request-id", "t"]] },
      { status: 200, headers: [["x-http-code", "199"]], body: "{}" },
    );
    expect(low.status).toBe(200);
  });
});

describe("under LuaJIT, the Lua that Envoy embeds", () => {
  const UUID_ANYWHERE = /[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}/g;
  const normalise = (r: LuaResult) =>
    JSON.stringify({ ...r, headers: [...r.headers], requestHeaders: [...r.requestHeaders] }).replace(
      UUID_ANYWHERE,
      "UUID",
    );

  // Skipped where no luajit binary is installed (CI); wasmoon (Lua 5.4) ran every case above.
  it.skipIf(!luajitAvailable())("every exchange above gives the same answer", () => {
    expect(recorded.length).toBeGreaterThan(40);
    const results = runUnderLuajit(recorded.map(([req, res]) => [req, res]));
    expect(results.map(normalise)).toEqual(recorded.map(([, , r]) => normalise(r)));
  });
});
