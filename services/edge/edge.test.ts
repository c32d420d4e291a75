// End-to-end tests of the REST edge: a real node:http server on port 0 in front of the test-only
// EdgeTestService, implemented in memory with createRouterTransport, driven with fetch (and
// node:http where fetch cannot express the request).
import { once } from "node:events";
import { STATUS_CODES, createServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { gunzipSync } from "node:zlib";
import { toJson, type DescMessage, type Message } from "@bufbuild/protobuf";
import { Code, ConnectError, createRouterTransport, type HandlerContext, type Transport } from "@connectrpc/connect";
import { pino, type Logger } from "pino";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { Color, EdgeTestService, type ListThingsRequest } from "../../gen/agentplane/edgetest/v1/edgetest_pb.js";
import { createRestEdge, type RestEdgeOptions } from "./edge.js";

// ---------------------------------------------------------------------------------------------
// The in-memory service: every method records what it received.

interface Received {
  rpc: string;
  req: Message;
  headers: Headers;
}
let received: Received | undefined;
let cancelSeen: Promise<boolean> | undefined;

function record(rpc: string, req: Message, ctx: HandlerContext): void {
  received = { rpc, req, headers: new Headers(ctx.requestHeader) };
}

function lastRequest<T>(): T {
  if (received === undefined) throw new Error("the service was not called");
  return received.req as T;
}

function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

const sampleThing = {
  id: "t1",
  displayName: "Thing One",
  sizeBytes: 12345678901234n,
  createdAt: 1700000000000,
  archived: false,
  color: Color.GREEN,
  tags: [],
  count: 0,
};

const transport = createRouterTransport(({ service }) => {
  service(EdgeTestService, {
    listThings(req, ctx) {
      record("ListThings", req, ctx);
      return { things: [] };
    },
    getThing(req, ctx) {
      record("GetThing", req, ctx);
      return { thing: { ...sampleThing, id: req.thingId } };
    },
    getSpecialThing(req, ctx) {
      record("GetSpecialThing", req, ctx);
      return { thing: { id: "special" } };
    },
    deleteThing(req, ctx) {
      record("DeleteThing", req, ctx);
      return {};
    },
    createThing(req, ctx) {
      record("CreateThing", req, ctx);
      ctx.responseHeader.set("x-http-code", "201");
      ctx.responseHeader.set("location", `/v1/things/${req.thing?.id ?? ""}`);
      return { thing: req.thing, shelfId: req.shelfId };
    },
    updateThing(req, ctx) {
      record("UpdateThing", req, ctx);
      return { thing: req.thing };
    },
    setThingLimit(req, ctx) {
      record("SetThingLimit", req, ctx);
      return { thingId: req.thingId, limit: req.limit };
    },
    archiveThing(req, ctx) {
      record("ArchiveThing", req, ctx);
      return { thing: { id: req.thingId, archived: true } };
    },
    searchThings(req, ctx) {
      record("SearchThings", req, ctx);
      return { things: [{ id: req.query }] };
    },
    getFile(req, ctx) {
      record("GetFile", req, ctx);
      return { path: req.path, shelf: req.shelf };
    },
    echoHeaders(req, ctx) {
      record("EchoHeaders", req, ctx);
      const headers: Record<string, string> = {};
      ctx.requestHeader.forEach((v, k) => {
        headers[k] = v;
      });
      ctx.responseHeader.set("ratelimit-limit", "100");
      ctx.responseHeader.set("ratelimit-remaining", "99");
      ctx.responseHeader.set("ratelimit-reset", "30");
      ctx.responseHeader.set("etag", '"v1"');
      ctx.responseHeader.set("cache-control", "no-store");
      ctx.responseTrailer.set("x-from-trailer", "yes");
      if (req.httpCode !== "") ctx.responseHeader.set("x-http-code", req.httpCode);
      return { headers };
    },
    async fail(req, ctx) {
      record("Fail", req, ctx);
      if (req.sleepMs > 0) {
        cancelSeen = sleep(req.sleepMs, ctx.signal);
        await cancelSeen;
      }
      if (req.plainError) throw new Error(req.message);
      if (req.code !== 0) {
        const metadata: Record<string, string> = {};
        if (req.retryAfter !== "") {
          metadata["retry-after"] = req.retryAfter;
          metadata["ratelimit-remaining"] = "0";
        }
        throw new ConnectError(req.message, req.code as Code, metadata);
      }
      return { cancelled: ctx.signal.aborted };
    },
    async *downloadThing(req, ctx) {
      record("DownloadThing", req, ctx);
      ctx.responseHeader.set("etag", '"d1"');
      if (req.thingId === "created") ctx.responseHeader.set("x-http-code", "201");
      for (let i = 0; i < req.chunks; i++) {
        if (i === req.failAfter) throw new ConnectError(`failed after ${i} chunks`, Code.Internal);
        if (i > 0 && req.pauseMs > 0) {
          cancelSeen = sleep(req.pauseMs, ctx.signal);
          if (await cancelSeen) return;
        }
        yield { contentType: i === 0 ? "text/csv" : "", data: Buffer.alloc(req.chunkBytes, 97 + (i % 26)) };
      }
      if (req.failAfter === req.chunks) throw new ConnectError(`failed after ${req.chunks} chunks`, Code.Internal);
    },
  });
});

// ---------------------------------------------------------------------------------------------
// Servers: the edge under test, plus helpers.

const logLines: Record<string, unknown>[] = [];
const logger: Logger = pino(
  { level: "debug" },
  new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString("utf8").split("\n"))
        if (line) logLines.push(JSON.parse(line) as Record<string, unknown>);
      cb();
    },
  }),
);

async function startEdge(opts: Partial<RestEdgeOptions> = {}): Promise<{ server: Server; base: string }> {
  const handler = createRestEdge({ services: [EdgeTestService], transport, logger, maxBodyBytes: 4096, ...opts });
  const server = createServer((req, res) => void handler(req, res));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return { server, base: `http://127.0.0.1:${port}` };
}

let server: Server;
let base: string;
beforeAll(async () => {
  ({ server, base } = await startEdge());
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});
beforeEach(() => {
  received = undefined;
  cancelSeen = undefined;
});

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function call(path: string, init: RequestInit = {}): Promise<Reply> {
  const res = await fetch(base + path, init);
  const text = await res.text();
  let json: unknown;
  try {
    json = text === "" ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

function postJson(path: string, body: unknown, method = "POST"): Promise<Reply> {
  return call(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

/** node:http request, for what fetch cannot send (raw paths, chunked bodies, odd headers). */
function raw(options: {
  method: string;
  path: string;
  headers?: Record<string, string | number>;
  body?: Buffer | string[];
  /** Another edge than the shared one. */
  base?: string;
}): Promise<Reply & { bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const url = new URL(options.base ?? base);
    const req = httpRequest(
      { host: url.hostname, port: url.port, method: options.method, path: options.path, headers: options.headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") headers.set(k, v);
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers, text, json, bytes: Buffer.concat(chunks) });
        });
      },
    );
    req.on("error", reject);
    if (Array.isArray(options.body)) {
      for (const part of options.body) req.write(part);
      req.end();
    } else {
      req.end(options.body);
    }
  });
}

function expectErrorBody(r: Reply, status: number, detail?: string | RegExp): void {
  expect(r.status).toBe(status);
  expect(r.headers.get("content-type")).toBe("application/json");
  expect(Object.keys(r.json as object)).toEqual(["title", "detail", "status", "requestId"]);
  expect(r.json.status).toBe(status);
  expect(r.json.title).toBe(STATUS_CODES[status] ?? "Client Closed Request");
  expect(r.json.requestId).toBe(r.headers.get("x-request-id"));
  expect(r.json.requestId).toBeTruthy();
  if (typeof detail === "string") expect(r.json.detail).toBe(detail);
  else if (detail) expect(r.json.detail).toMatch(detail);
}

function json(schema: DescMessage, msg: Message): unknown {
  return toJson(schema, msg);
}

// ---------------------------------------------------------------------------------------------

describe("path templates", () => {
  it("binds a single-segment variable", async () => {
    const r = await call("/v1/shelves/s1/things");
    expect(r.status).toBe(200);
    expect(received?.rpc).toBe("ListThings");
    expect(lastRequest<ListThingsRequest>().shelfId).toBe("s1");
  });

  it("lets a literal segment win over a variable for the same method", async () => {
    const r = await call("/v1/things/special");
    expect(r.status).toBe(200);
    expect(received?.rpc).toBe("GetSpecialThing");
    await call("/v1/things/other");
    expect(received?.rpc).toBe("GetThing");
  });

  it("falls back to the variable when the literal has no route for the method", async () => {
    const r = await call("/v1/things/special", { method: "DELETE" });
    expect(r.status).toBe(200);
    expect(received?.rpc).toBe("DeleteThing");
    expect(lastRequest<{ thingId: string }>().thingId).toBe("special");
  });

  it("percent-decodes a single-segment variable fully, %2F included, and keeps '+'", async () => {
    await call("/v1/things/a%2Fb%20c+d%E2%82%AC");
    expect(lastRequest<{ thingId: string }>().thingId).toBe("a/b c+d€");
  });

  it("answers 400 for invalid percent-encoding or invalid UTF-8 in a path variable", async () => {
    expectErrorBody(await raw({ method: "GET", path: "/v1/things/a%zz" }), 400, /path parameter "thing_id"/);
    expectErrorBody(await raw({ method: "GET", path: "/v1/things/%FF" }), 400, /path parameter "thing_id"/);
    expectErrorBody(await raw({ method: "GET", path: "/v1/things/%4" }), 400, /percent-encoding/);
    expect(received).toBeUndefined();
  });

  it("binds {var=**} across segments, keeping %2F encoded", async () => {
    await call("/v1/files/a/b/c.txt");
    expect(json(EdgeTestService.method.getFile.input, lastRequest())).toEqual({ path: "a/b/c.txt" });
    await call("/v1/files/dir%2Fname/x%20y");
    expect(lastRequest<{ path: string }>().path).toBe("dir%2Fname/x y");
    await call("/v1/files");
    expect(received?.rpc).toBe("GetFile");
    expect(lastRequest<{ path: string }>().path).toBe("");
  });

  it("binds {var=shelves/*} (an additional binding) including its literal", async () => {
    await call("/v1/shelves/s9/files/a/b");
    expect(received?.rpc).toBe("GetFile");
    expect(json(EdgeTestService.method.getFile.input, lastRequest())).toEqual({ path: "a/b", shelf: "shelves/s9" });
  });

  it("binds a nested field path {thing.id}", async () => {
    const r = await postJson("/v1/things/t7", { displayName: "seven" }, "PATCH");
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ thing: { id: "t7", displayName: "seven" } });
  });

  it("routes custom verbs and custom HTTP methods", async () => {
    const r = await postJson("/v1/things/t1:archive", { reason: "old" });
    expect(r.status).toBe(200);
    expect(received?.rpc).toBe("ArchiveThing");
    expect(json(EdgeTestService.method.archiveThing.input, lastRequest())).toEqual({ thingId: "t1", reason: "old" });
    // ':other' is not a declared verb, so it stays part of the id.
    await call("/v1/things/t1:other");
    expect(received?.rpc).toBe("GetThing");
    expect(lastRequest<{ thingId: string }>().thingId).toBe("t1:other");
    // A declared verb with a method it does not have.
    expectErrorBody(await call("/v1/things/t1:archive"), 404);
    const s = await call("/v1/things?query=abc", { method: "SEARCH" });
    expect(s.status).toBe(200);
    expect(s.json).toEqual({ things: [expect.objectContaining({ id: "abc" })] });
  });

  it("ignores trailing slashes, as Envoy does", async () => {
    await call("/v1/things/abc/");
    expect(received?.rpc).toBe("GetThing");
    expect(lastRequest<{ thingId: string }>().thingId).toBe("abc");
  });

  it("answers 404 with the error body for an unknown path or method", async () => {
    expectErrorBody(await call("/v1/nope"), 404, "Could not resolve /v1/nope to a method.");
    expectErrorBody(
      await call("/v1/things/abc", { method: "PUT", body: "{}", headers: { "content-type": "application/json" } }),
      404,
    );
    expect((await call("/v1/things/abc", { method: "HEAD" })).status).toBe(404);
    expectErrorBody(await call("/v1/things/abc/extra"), 404);
    expectErrorBody(await call("/"), 404);
    // A method without google.api.http is not routed, not even under its RPC path.
    expectErrorBody(await postJson("/agentplane.edgetest.v1.EdgeTestService/Unrouted", {}), 404);
    expect(received).toBeUndefined();
  });
});

describe("query parameters", () => {
  it("bind every scalar kind by JSON name or proto name, '+' staying '+'", async () => {
    const q = [
      "pageToken=a+b%20c%2B",
      "page_size=25",
      "minSize=-9007199254740993",
      "max_count=4294967295",
      "maxSize=18446744073709551615",
      "includeArchived=true",
      "minScore=1.5",
      "ratio=0.25",
      "color=COLOR_RED",
      "tags=x&tags=y",
      "ids=1&ids=-2",
      "colors=COLOR_GREEN&colors=1",
      "filter.ownerEmail=a%40b.c",
      "filter.range.min=1&filter.range.max=2e3",
      "limit=7",
      "note=hi",
      "blob=aGk%3D",
      "since=2024-01-02T03%3A04%3A05Z",
      "cursor=",
      "offset=-3",
      "checksum=42",
      "flag=false",
      "scores=0.5&scores=NaN",
    ].join("&");
    const r = await call(`/v1/shelves/s1/things?${q}`);
    expect(r.status).toBe(200);
    const req = lastRequest<ListThingsRequest>();
    expect(req.pageToken).toBe("a+b c+");
    expect(req.pageSize).toBe(25);
    expect(req.minSize).toBe(-9007199254740993n);
    expect(req.maxCount).toBe(4294967295);
    expect(req.maxSize).toBe(18446744073709551615n);
    expect(req.includeArchived).toBe(true);
    expect(req.minScore).toBe(1.5);
    expect(req.ratio).toBe(0.25);
    expect(req.color).toBe(Color.RED);
    expect(req.tags).toEqual(["x", "y"]);
    expect(req.ids).toEqual([1, -2]);
    expect(req.colors).toEqual([Color.GREEN, Color.RED]);
    expect(req.filter?.ownerEmail).toBe("a@b.c");
    expect(req.filter?.range).toMatchObject({ min: 1, max: 2000 });
    expect(req.limit).toBe(7);
    expect(req.note).toBe("hi");
    expect(new TextDecoder().decode(req.blob)).toBe("hi");
    expect(req.since?.seconds).toBe(BigInt(Date.UTC(2024, 0, 2, 3, 4, 5) / 1000));
    expect(req.cursor).toBe(""); // explicit presence: set, and empty
    expect(req.offset).toBe(-3);
    expect(req.checksum).toBe(42n);
    expect(req.flag).toBe(false);
    expect(req.scores[0]).toBe(0.5);
    expect(req.scores[1]).toBeNaN();
  });

  it("accepts both spellings of a nested name", async () => {
    await call("/v1/shelves/s1/things?filter.owner_email=x&filter.range.min=-1.5");
    const req = lastRequest<ListThingsRequest>();
    expect(req.filter?.ownerEmail).toBe("x");
    expect(req.filter?.range?.min).toBe(-1.5);
  });

  it("ignores a parameter without '=', as Envoy's parser does", async () => {
    const r = await call("/v1/shelves/s1/things?bogus&includeArchived");
    expect(r.status).toBe(200);
    expect(lastRequest<ListThingsRequest>().includeArchived).toBe(false);
  });

  it.each([
    ["pageSize=abc", "pageSize", "an integer from -2147483648 to 2147483647"],
    ["pageSize=2147483648", "pageSize", "an integer from -2147483648 to 2147483647"],
    ["pageSize=1.5", "pageSize", "an integer from -2147483648 to 2147483647"],
    ["pageSize=", "pageSize", "an integer from -2147483648 to 2147483647"],
    ["maxCount=-1", "maxCount", "an integer from 0 to 4294967295"],
    ["minSize=9223372036854775808", "minSize", "an integer from -9223372036854775808 to 9223372036854775807"],
    ["maxSize=-1", "maxSize", "an integer from 0 to 18446744073709551615"],
    ["includeArchived=maybe", "includeArchived", "bool"],
    ["minScore=abc", "minScore", "a number"],
    ["minScore=1e999", "minScore", "a number"],
    ["ratio=1e39", "ratio", "a number from -3\\.4028234663852886e\\+38 to 3\\.4028234663852886e\\+38"],
    ["color=PURPLE", "color", "enum agentplane.edgetest.v1.Color"],
    ["colors=COLOR_RED&colors=nope", "colors", "enum agentplane.edgetest.v1.Color"],
    ["color=7", "color", "enum agentplane.edgetest.v1.Color"],
    ["color=color_red", "color", "enum agentplane.edgetest.v1.Color"],
    ["limit=x", "limit", "an integer from -2147483648 to 2147483647"],
    ["since=yesterday", "since", "google.protobuf.Timestamp"],
    ["blob=***", "blob", "bytes"],
    ["filter.range.max=wide", "filter.range.max", "a number"],
  ])("answers 400 naming the parameter for a bad value: %s", async (q, name, expected) => {
    const r = await call(`/v1/shelves/s1/things?${q}`);
    expectErrorBody(r, 400, new RegExp(`query parameter "${name.replace(/\./g, "\\.")}": expected ${expected}$`));
    expect(received).toBeUndefined();
  });

  it.each([
    ["bogus=1", 'Unknown query parameter "bogus"'],
    ["filter.bogus=1", 'Unknown query parameter "filter.bogus"'],
    ["pageToken.x=1", 'Unknown query parameter "pageToken.x"'],
    ["PageSize=1", 'Unknown query parameter "PageSize"'],
    ["filters.ownerEmail=x", 'Unknown query parameter "filters.ownerEmail"'],
    ["filters=x", 'Query parameter "filters" names a field that cannot be set from a query string'],
    ["labels=x", 'Query parameter "labels" names a field that cannot be set from a query string'],
    ["filter=x", 'Query parameter "filter" names a field that cannot be set from a query string'],
    ["shelfId=s2", 'Query parameter "shelfId" is not allowed: that field comes from the request path'],
    ["shelf_id=s2", 'Query parameter "shelf_id" is not allowed: that field comes from the request path'],
  ])("answers 400 for a parameter that binds nothing: %s", async (q, detail) => {
    expectErrorBody(await call(`/v1/shelves/s1/things?${q}`), 400, detail);
    expect(received).toBeUndefined();
  });

  it('binds no query parameter when body is "*"', async () => {
    const r = await call("/v1/shelves/s1/things?validateOnly=true", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expectErrorBody(r, 400, 'Unknown query parameter "validateOnly"');
  });

  it("binds the fields outside the body field when body names one", async () => {
    const r = await call("/v1/things/t1?updateMask=displayName,tags&validate_only=true", {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ displayName: "n" }),
    });
    expect(r.status).toBe(200);
    expect(json(EdgeTestService.method.updateThing.input, lastRequest())).toEqual({
      thing: { id: "t1", displayName: "n" },
      updateMask: "displayName,tags",
      validateOnly: true,
    });
    const bad = await call("/v1/things/t1?thing.displayName=x", {
      method: "PATCH",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expectErrorBody(bad, 400, /"thing.displayName" is not allowed: that field comes from the request body/);
  });

  it("keeps an invalid %-sequence in a query value literally, as Envoy does, but rejects bad UTF-8", async () => {
    await call("/v1/shelves/s1/things?pageToken=100%25%zz%");
    expect(lastRequest<ListThingsRequest>().pageToken).toBe("100%%zz%");
    expectErrorBody(await call("/v1/shelves/s1/things?pageToken=%FF"), 400, /"pageToken" is not valid UTF-8/);
  });
});

describe("request body", () => {
  it('body "*": parses the whole request, accepting proto names, with a charset parameter', async () => {
    const r = await call("/v1/shelves/s1/things", {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8" },
      body: JSON.stringify({
        thing: { id: "n1", display_name: "New", sizeBytes: "5", tags: ["a"] },
        validateOnly: true,
      }),
    });
    expect(r.status).toBe(201);
    expect(json(EdgeTestService.method.createThing.input, lastRequest())).toEqual({
      shelfId: "s1",
      thing: { id: "n1", displayName: "New", sizeBytes: "5", tags: ["a"] },
      validateOnly: true,
    });
  });

  it("a body field for a field the path binds: another value under its proto name is Envoy's 400; any other spelling gives way to the path", async () => {
    // reject_binding_body_field_collisions: the proto name with another value.
    expectErrorBody(
      await postJson("/v1/shelves/s1/things", { shelf_id: "other" }),
      400,
      'The binding value "s1" of the field shelf_id is conflicting with the value "other" in the body.',
    );
    expectErrorBody(
      await postJson("/v1/shelves/s1/things", { shelf_id: "" }),
      400,
      'The binding value "s1" of the field shelf_id is conflicting with the value "" in the body.',
    );
    expectErrorBody(
      await postJson("/v1/things/from-path", { id: "from-body", displayName: "x" }, "PATCH"),
      400,
      'The binding value "from-path" of the field id is conflicting with the value "from-body" in the body.',
    );
    expect(received).toBeUndefined();
    // The same value (compared with the decoded path segment) is no collision.
    expect((await postJson("/v1/shelves/s1/things", { shelf_id: "s1" })).status).toBe(201);
    expect(lastRequest<{ shelfId: string }>().shelfId).toBe("s1");
    await postJson("/v1/things/a%20b", { id: "a b", displayName: "x" }, "PATCH");
    expect(lastRequest<{ thing: { id: string } }>().thing.id).toBe("a b");
    // The JSON name, or null, is written before the path's value, which wins.
    expect((await postJson("/v1/shelves/s1/things", { shelfId: "from-body" })).status).toBe(201);
    expect(lastRequest<{ shelfId: string }>().shelfId).toBe("s1");
    await postJson("/v1/shelves/s1/things", { shelf_id: null });
    expect(lastRequest<{ shelfId: string }>().shelfId).toBe("s1");
    await postJson("/v1/things/from-path", { displayName: "x" }, "PATCH");
    expect(lastRequest<{ thing: { id: string } }>().thing.id).toBe("from-path");
  });

  it("body naming a scalar field", async () => {
    const r = await postJson("/v1/things/t1/limit", 12.5, "PUT");
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ thingId: "t1", limit: 12.5 });
  });

  it("builds the message from path and query alone when a body rule gets no body", async () => {
    const r = await call("/v1/shelves/s1/things", { method: "POST" });
    expect(r.status).toBe(201);
    expect(json(EdgeTestService.method.createThing.input, lastRequest())).toEqual({ shelfId: "s1" });
  });

  it("answers 400 naming an unknown body field", async () => {
    const r = await postJson("/v1/shelves/s1/things", { thing: { id: "x", bogus: 1 } });
    expectErrorBody(r, 400, /^thing\.bogus: unknown field$/);
    const top = await postJson("/v1/shelves/s1/things", { wrong: 1 });
    expectErrorBody(top, 400, /^wrong: unknown field$/);
    expect(received).toBeUndefined();
  });

  it("answers 400 for a value of the wrong type", async () => {
    // Named by the JSON path the client wrote, with the JSON type it should have been.
    expectErrorBody(
      await postJson("/v1/shelves/s1/things", { validateOnly: "yes" }),
      400,
      /^validateOnly: must be true or false$/,
    );
  });

  it("answers 400 for a body nested deeper than 100 objects and arrays, in the words of Envoy's JSON parser", async () => {
    const nest = (levels: number, wrap: (v: unknown) => unknown) => {
      let v: unknown = 1;
      for (let i = 0; i < levels; i++) v = wrap(v);
      return v;
    };
    // The body is level 1; the value of thing takes levels 2 to 101.
    expectErrorBody(
      await postJson("/v1/shelves/s1/things", { thing: nest(100, (v) => ({ deep: v })) }),
      400,
      "Message too deep. Max recursion depth reached for key 'deep'",
    );
    expectErrorBody(
      await postJson("/v1/shelves/s1/things", { thing: { tags: nest(99, (v) => [v]) } }),
      400,
      "Message too deep. Max recursion depth reached in array",
    );
    expect(received).toBeUndefined();
    // 100 levels pass on to the message reader, which finds the unknown field.
    expectErrorBody(
      await postJson("/v1/shelves/s1/things", { thing: nest(99, (v) => ({ deep: v })) }),
      400,
      /^thing\.deep: unknown field$/,
    );
  });

  it("answers 400 for malformed JSON", async () => {
    const r = await call("/v1/shelves/s1/things", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"thing": ',
    });
    expectErrorBody(r, 400, /^Malformed JSON in request body/);
  });

  it("answers 415 for a body that is not application/json", async () => {
    expectErrorBody(
      await call("/v1/shelves/s1/things", { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" }),
      415,
      /Unsupported Content-Type "text\/plain"/,
    );
    expectErrorBody(
      await raw({
        method: "POST",
        path: "/v1/shelves/s1/things",
        headers: { "content-length": 2 },
        body: Buffer.from("{}"),
      }),
      415,
      /Missing Content-Type/,
    );
    expectErrorBody(
      await raw({
        method: "POST",
        path: "/v1/shelves/s1/things",
        headers: { "content-type": "application/json", "content-encoding": "gzip", "content-length": 2 },
        body: Buffer.from("{}"),
      }),
      415,
      /Content-Encoding/,
    );
    expect(received).toBeUndefined();
  });

  it("ignores the body of a method without a body rule", async () => {
    const r = await call("/v1/things/t1", {
      method: "DELETE",
      headers: { "content-type": "text/plain" },
      body: "not json",
    });
    expect(r.status).toBe(200);
    expect(received?.rpc).toBe("DeleteThing");
    // The connection stays usable afterwards.
    expect((await call("/v1/things/t2")).status).toBe(200);
  });

  it("answers 413 for a declared Content-Length over the limit without reading the body", async () => {
    const big = JSON.stringify({ thing: { displayName: "x".repeat(5000) } });
    const r = await postJson("/v1/shelves/s1/things", JSON.parse(big));
    expectErrorBody(r, 413, "Request body exceeds 4096 bytes");
    expect(received).toBeUndefined();
  });

  it("answers 413 for a chunked body that grows over the limit, and stops reading", async () => {
    const chunk = "x".repeat(1000);
    const parts = ['{"thing":{"displayName":"', chunk, chunk, chunk, chunk, chunk, '"}}'];
    const r = await raw({
      method: "POST",
      path: "/v1/shelves/s1/things",
      headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
      body: parts,
    });
    expectErrorBody(r, 413);
    expect(r.headers.get("connection")).toBe("close");
    expect(received).toBeUndefined();
  });
});

describe("headers", () => {
  it("forwards end-to-end request headers as metadata and drops hop-by-hop ones", async () => {
    const r = await raw({
      method: "GET",
      path: "/v1/echo/headers",
      headers: {
        authorization: "Bearer k1",
        "idempotency-key": "idem-1",
        "x-custom": "c",
        connection: "keep-alive, x-hop",
        "x-hop": "hop",
        "keep-alive": "timeout=5",
        "grpc-timeout": "1S",
        "accept-encoding": "br",
      },
    });
    expect(r.status).toBe(200);
    const headers = (r.json as { headers: Record<string, string> }).headers;
    expect(headers).toMatchObject({ authorization: "Bearer k1", "idempotency-key": "idem-1", "x-custom": "c" });
    expect(headers["x-request-id"]).toBe(r.headers.get("x-request-id"));
    for (const dropped of ["host", "connection", "x-hop", "keep-alive", "content-length"]) {
      expect(headers).not.toHaveProperty(dropped);
    }
    expect(headers["grpc-timeout"]).not.toBe("1S");
  });

  it("keeps a valid client X-Request-Id and replaces an invalid one", async () => {
    const kept = await call("/v1/echo/headers", { headers: { "x-request-id": "req-123_abc" } });
    expect(kept.headers.get("x-request-id")).toBe("req-123_abc");
    expect(received?.headers.get("x-request-id")).toBe("req-123_abc");
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    for (const bad of ["has space", "x".repeat(201), "tab\there"]) {
      const r = await call("/v1/echo/headers", { headers: { "x-request-id": bad } });
      expect(r.headers.get("x-request-id")).toMatch(uuid);
      expect(received?.headers.get("x-request-id")).toBe(r.headers.get("x-request-id"));
    }
    expect((await call("/v1/echo/headers")).headers.get("x-request-id")).toMatch(uuid);
    expect(
      (await call("/v1/echo/headers", { headers: { "x-request-id": "x".repeat(200) } })).headers.get("x-request-id"),
    ).toBe("x".repeat(200));
    const err = await call("/v1/nope", { headers: { "x-request-id": "err-1" } });
    expect(err.json.requestId).toBe("err-1");
  });

  it("forwards the service's response headers and trailers, not transport headers", async () => {
    const r = await call("/v1/echo/headers");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(r.headers.get("ratelimit-limit")).toBe("100");
    expect(r.headers.get("ratelimit-remaining")).toBe("99");
    expect(r.headers.get("ratelimit-reset")).toBe("30");
    expect(r.headers.get("etag")).toBe('"v1"');
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.headers.get("x-from-trailer")).toBe("yes");
    for (const [name] of r.headers) expect(name).not.toMatch(/^(grpc-|connect-|x-http-code$)/);
  });
});

describe("compression, as envoy.yaml's compressor filter (platform/compressor.ts)", () => {
  it("gzips a JSON answer of 8 KiB or more for a client that takes gzip, and only then", async () => {
    const { server: s2, base: b2 } = await startEdge({ maxBodyBytes: 65536 });
    try {
      const thing = { id: "big", displayName: "x".repeat(10_000) };
      const send = (acceptEncoding: string) =>
        raw({
          method: "POST",
          path: "/v1/shelves/s1/things",
          headers: { "content-type": "application/json", "accept-encoding": acceptEncoding },
          body: [JSON.stringify({ thing })],
          base: b2,
        });
      const packed = await send("gzip, deflate");
      expect(packed.status).toBe(201);
      expect(packed.headers.get("content-encoding")).toBe("gzip");
      expect(packed.headers.get("vary")).toBe("Accept-Encoding");
      expect(JSON.parse(gunzipSync(packed.bytes).toString()).thing.displayName).toBe(thing.displayName);
      const plain = await send("identity");
      expect(plain.headers.get("content-encoding")).toBeNull();
      expect(plain.headers.get("vary")).toBe("Accept-Encoding");
      expect(plain.json.thing.displayName).toBe(thing.displayName);
      const small = await postJson("/v1/shelves/s1/things", { thing: { id: "small" } });
      expect(small.headers.get("content-encoding")).toBeNull();
    } finally {
      s2.closeAllConnections();
      s2.close();
    }
  });
});

describe("success responses", () => {
  it("prints every implicit field with JSON names, int64 as string, whole doubles as integers", async () => {
    const r = await call("/v1/things/t1");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("application/json");
    expect(r.text).toBe(
      '{"thing":{"id":"t1","displayName":"Thing One","sizeBytes":"12345678901234","createdAt":1700000000000,' +
        '"archived":false,"color":"COLOR_GREEN","tags":[],"count":0}}',
    );
    const empty = await call("/v1/things/x", { method: "DELETE" });
    expect(empty.text).toBe("{}");
  });

  it("uses x-http-code as the status and does not forward it", async () => {
    const r = await postJson("/v1/shelves/s1/things", { thing: { id: "n1" } });
    expect(r.status).toBe(201);
    expect(r.headers.get("x-http-code")).toBeNull();
    expect(r.headers.get("location")).toBe("/v1/things/n1");
    expect(r.json).toMatchObject({ shelfId: "s1", thing: { id: "n1" } });
  });

  it("sends 304 without a body", async () => {
    const r = await call("/v1/echo/headers?httpCode=304");
    expect(r.status).toBe(304);
    expect(r.text).toBe("");
    expect(r.headers.get("etag")).toBe('"v1"');
    expect(r.headers.get("x-request-id")).toBeTruthy();
  });

  it("ignores an invalid x-http-code", async () => {
    const r = await call("/v1/echo/headers?httpCode=abc");
    expect(r.status).toBe(200);
    expect(logLines.some((l) => l.msg === "ignoring invalid x-http-code from service")).toBe(true);
  });
});

describe("errors", () => {
  const expected: [Code, number][] = [
    [Code.Canceled, 499],
    [Code.Unknown, 500],
    [Code.InvalidArgument, 400],
    [Code.DeadlineExceeded, 504],
    [Code.NotFound, 404],
    [Code.AlreadyExists, 409],
    [Code.PermissionDenied, 403],
    [Code.ResourceExhausted, 429],
    [Code.FailedPrecondition, 400],
    [Code.Aborted, 409],
    [Code.OutOfRange, 400],
    [Code.Unimplemented, 501],
    [Code.Internal, 500],
    [Code.Unavailable, 503],
    [Code.DataLoss, 500],
    [Code.Unauthenticated, 401],
  ];

  it.each(expected)("maps gRPC code %i to HTTP %i with the error body", async (code, status) => {
    const r = await call(`/v1/fail/${code}?message=${encodeURIComponent(`went wrong ${code}`)}`, {
      headers: { "x-request-id": `fail-${code}` },
    });
    expectErrorBody(r, status, `went wrong ${code}`);
    expect(r.json.requestId).toBe(`fail-${code}`);
  });

  it("forwards retry-after and other metadata carried by the error", async () => {
    const r = await call(`/v1/fail/${Code.ResourceExhausted}?message=slow+down&retryAfter=7`);
    expectErrorBody(r, 429, "slow+down");
    expect(r.headers.get("retry-after")).toBe("7");
    expect(r.headers.get("ratelimit-remaining")).toBe("0");
  });

  it("maps a plain exception in the service to 500 without a stack", async () => {
    const r = await call("/v1/fail/0?plainError=true&message=kaput");
    expectErrorBody(r, 500);
    expect(r.text).not.toMatch(/\bat .*\.ts:\d+/);
  });

  it("answers 500 with a generic detail and logs an unexpected exception in the edge", async () => {
    const broken: Transport = {
      unary: () => Promise.reject(new TypeError("secret internals")),
      stream: () => Promise.reject(new TypeError("secret internals")),
    };
    const { server: s2, base: b2 } = await startEdge({ transport: broken });
    try {
      const res = await fetch(`${b2}/v1/things/t1`);
      const body = (await res.json()) as { detail: string; requestId: string };
      expect(res.status).toBe(500);
      expect(body.detail).toBe("Internal error in the REST edge");
      expect(JSON.stringify(body)).not.toContain("secret");
      const logged = logLines.find(
        (l) => l.msg === "unexpected error in the REST edge" && l.requestId === body.requestId,
      );
      expect(logged).toBeDefined();
      expect(logged?.level).toBe(50);
    } finally {
      s2.closeAllConnections();
      s2.close();
    }
  });

  it("answers 504 when the per-call deadline passes", async () => {
    const { server: s2, base: b2 } = await startEdge({ timeoutMs: 50 });
    try {
      const res = await fetch(`${b2}/v1/fail/0?sleepMs=5000`);
      const body = (await res.json()) as { status: number; title: string };
      expect(res.status).toBe(504);
      expect(body).toMatchObject({ status: 504, title: "Gateway Timeout" });
      expect(await cancelSeen).toBe(true);
    } finally {
      s2.closeAllConnections();
      s2.close();
    }
  });

  it("aborts the RPC when the client disconnects, logging 499", async () => {
    const ctl = new AbortController();
    const pending = fetch(`${base}/v1/fail/0?sleepMs=5000`, {
      signal: ctl.signal,
      headers: { "x-request-id": "gone-1" },
    });
    while (cancelSeen === undefined) await new Promise((r) => setTimeout(r, 5));
    ctl.abort();
    await expect(pending).rejects.toThrow();
    expect(await cancelSeen).toBe(true);
    await expect.poll(() => logLines.find((l) => l.requestId === "gone-1")).toMatchObject({ status: 499 });
  });
});

describe("google.api.HttpBody streams", () => {
  const download = (query: string) => `/v1/things/t1:download?failAfter=-1&${query}`;

  it("sends the chunks' data as the body, the first chunk's content type, the status from x-http-code, no Content-Length", async () => {
    const res = await fetch(base + download("chunks=40&chunkBytes=65536"));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv");
    expect(res.headers.get("content-length")).toBeNull();
    expect(res.headers.get("etag")).toBe('"d1"');
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.length).toBe(40 * 65536);
    expect(body.subarray(39 * 65536, 39 * 65536 + 3).toString()).toBe("nnn");
    const created = await call("/v1/things/created:download?failAfter=-1&chunks=1&chunkBytes=3");
    expect(created.status).toBe(201);
    expect(created.text).toBe("aaa");
  });

  it("answers an error before the first chunk as any error", async () => {
    const res = await call("/v1/things/t1:download?chunks=3&chunkBytes=10&failAfter=0");
    expect(res.status).toBe(500);
    expect(res.json).toMatchObject({ status: 500, detail: "failed after 0 chunks" });
  });

  it("cuts the connection on an error after the first chunk: the body never looks complete", async () => {
    // The headers may have left or not when the connection closes: either way the client fails.
    const read = fetch(`${base}/v1/things/t1:download?chunks=3&chunkBytes=10&failAfter=2`).then((r) => r.arrayBuffer());
    await expect(read).rejects.toThrow(/terminated|fetch failed/);
  });

  it("stops the stream when the client goes away", async () => {
    const ctl = new AbortController();
    const res = await fetch(`${base}${download("chunks=1000&chunkBytes=1024&pauseMs=20")}`, { signal: ctl.signal });
    expect(res.status).toBe(200);
    while (cancelSeen === undefined) await new Promise((r) => setTimeout(r, 5));
    ctl.abort();
    // The pause under way when the abort arrives ends early (true); on a loaded machine the abort
    // may land after a pause or two that ended on time (false), so the latest pause is polled. A
    // stream that never stopped would keep ending its pauses on time until the poll times out.
    await expect.poll(async () => await cancelSeen, { timeout: 5000 }).toBe(true);
  });
});

describe("construction", () => {
  it("reads the route table once from the annotations", () => {
    const handler = createRestEdge({ services: [EdgeTestService], transport, logger });
    expect(typeof handler).toBe("function");
    const routes = logLines.find((l) => l.msg === "REST edge routes")?.routes as string[];
    expect(routes).toContain("GET /v1/things/{thing_id}");
    expect(routes).toContain("SEARCH /v1/things");
    expect(routes).toContain("GET /v1/{shelf=shelves/*}/files/{path=**}");
    expect(routes.some((r) => r.includes("Unrouted"))).toBe(false);
  });
});
