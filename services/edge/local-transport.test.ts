// The in-process transport against createRouterTransport, which it replaces for the edge: the
// same implementation and interceptors behind both, the same calls, and what the edge reads
// (message, forwarded headers, error code, message and metadata) must be the same. Then what only
// the local transport can show: messages are handed over as objects, and signals behave.
import type { OutgoingHttpHeaders } from "node:http";
import { toJson, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import {
  Code,
  ConnectError,
  createContextKey,
  createRouterTransport,
  type ConnectRouter,
  type Interceptor,
  type Transport,
} from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { EdgeTestService } from "../../gen/agentplane/edgetest/v1/edgetest_pb.js";
import { copyResponseMetadata } from "./headers.js";
import { createLocalTransport } from "./local-transport.js";

const kCaller = createContextKey<string>("anonymous", { description: "caller" });
const seen: { order: string[]; signal?: AbortSignal } = { order: [] };

/** Like the server's stack: an outer interceptor that stamps every answer, an inner one that sets a context value or refuses. */
const interceptors: Interceptor[] = [
  (next) => async (req) => {
    seen.order.push("outer");
    try {
      const res = await next(req);
      res.header.set("x-request-id", "rid-1");
      res.header.set("ratelimit-remaining", "41");
      return res;
    } catch (err) {
      const error = ConnectError.from(err);
      error.metadata.set("x-request-id", "rid-1");
      throw error;
    }
  },
  (next) => async (req) => {
    seen.order.push("inner");
    if (req.header.get("authorization") === "Bearer bad")
      throw new ConnectError("invalid API key", Code.Unauthenticated, { "www-authenticate": "Bearer" });
    req.contextValues.set(kCaller, req.header.get("authorization") ?? "none");
    return next(req);
  },
];

const routes = (router: ConnectRouter) => {
  router.service(EdgeTestService, {
    getThing(req, ctx) {
      seen.order.push("impl");
      seen.signal = ctx.signal;
      return { thing: { id: req.thingId, displayName: ctx.values.get(kCaller), sizeBytes: 7n, tags: ["a", "b"] } };
    },
    createThing(req, ctx) {
      ctx.responseHeader.set("x-http-code", "201");
      ctx.responseHeader.set("location", `/v1/things/${req.thing?.id ?? ""}`);
      return { thing: req.thing, shelfId: req.shelfId };
    },
    echoHeaders(_req, ctx) {
      const headers: Record<string, string> = {};
      ctx.requestHeader.forEach((v, k) => {
        headers[k] = v;
      });
      ctx.responseTrailer.set("x-from-trailer", "yes");
      return { headers };
    },
    async fail(req, ctx) {
      ctx.responseHeader.set("x-set-before-failing", "1");
      if (req.sleepMs > 0) {
        await new Promise((resolve) => {
          const t = setTimeout(resolve, req.sleepMs);
          ctx.signal.addEventListener("abort", () => {
            clearTimeout(t);
            resolve(undefined);
          });
        });
        if (ctx.signal.aborted) throw ctx.signal.reason;
      }
      if (req.plainError) throw new Error(req.message);
      throw new ConnectError(
        req.message,
        req.code as Code,
        req.retryAfter ? { "retry-after": req.retryAfter } : undefined,
      );
    },
    async *downloadThing(req, ctx) {
      seen.signal = ctx.signal;
      ctx.responseHeader.set("etag", '"d1"');
      for (let i = 0; i < req.chunks; i++) {
        if (i === req.failAfter) throw new ConnectError(`failed after ${i}`, Code.DataLoss, { "x-chunks": String(i) });
        yield {
          contentType: i === 0 ? "text/plain" : "",
          data: new TextEncoder().encode(`${ctx.values.get(kCaller)}:${i};`),
        };
      }
    },
    // listThings and the others are left out: UNIMPLEMENTED.
  });
};

const local = createLocalTransport(routes, interceptors);
const router = createRouterTransport(routes, { router: { interceptors } });

const method = (name: string) => EdgeTestService.methods.find((m) => m.name === name)! as never;

interface Outcome {
  message?: unknown;
  headers: OutgoingHttpHeaders;
  code?: string;
  error?: string;
}

/** What the edge takes from a call: the JSON message and forwarded headers, or the error. */
async function call(
  transport: Transport,
  rpc: string,
  input: MessageInitShape<DescMessage>,
  header: Record<string, string> = {},
  signal?: AbortSignal,
  timeoutMs?: number,
): Promise<Outcome> {
  const headers: OutgoingHttpHeaders = {};
  try {
    const res = await transport.unary(method(rpc), signal, timeoutMs, header, input as never);
    copyResponseMetadata(res.header, headers);
    copyResponseMetadata(res.trailer, headers);
    return { message: toJson(res.method.output, res.message as never), headers };
  } catch (err) {
    const error = ConnectError.from(err);
    copyResponseMetadata(error.metadata, headers);
    return { headers, code: Code[error.code], error: error.rawMessage };
  }
}

async function both(
  rpc: string,
  input: MessageInitShape<DescMessage>,
  header: Record<string, string> = {},
): Promise<[Outcome, Outcome]> {
  return [await call(local, rpc, input, header), await call(router, rpc, input, header)];
}

describe("local transport: the same answers as the router transport", () => {
  it("a message, through the interceptors, with their headers and a context value", async () => {
    const [a, b] = await both("GetThing", { thingId: "t-9" }, { authorization: "Bearer k" });
    expect(a).toEqual(b);
    expect(a.message).toEqual({ thing: { id: "t-9", displayName: "Bearer k", sizeBytes: "7", tags: ["a", "b"] } });
    expect(a.headers).toMatchObject({ "ratelimit-remaining": "41" });
  });

  it("response headers and trailers the implementation sets (x-http-code included, for the edge to consume)", async () => {
    const [a, b] = await both("CreateThing", { shelfId: "s1", thing: { id: "t2" } });
    expect(a).toEqual(b);
    expect(a.headers).toMatchObject({ location: "/v1/things/t2" });
    const res = await local.unary(method("CreateThing"), undefined, undefined, {}, { shelfId: "s1" } as never);
    expect(res.header.get("x-http-code")).toBe("201");
    const [c, d] = await both("EchoHeaders", {}, { "x-custom": "v" });
    // The router transport's own protocol headers reach the implementation there; nothing else differs.
    const echoed = d.message as { headers: Record<string, string> };
    for (const name of ["connect-protocol-version", "content-type", "user-agent"]) delete echoed.headers[name];
    expect(c).toEqual(d);
    expect(c.headers).toMatchObject({ "x-from-trailer": "yes" });
    expect((c.message as { headers: Record<string, string> }).headers["x-custom"]).toBe("v");
  });

  it("errors: code, message, and metadata from the error, the interceptors and the headers set before failing", async () => {
    const [a, b] = await both("Fail", { code: Code.ResourceExhausted, message: "slow down", retryAfter: "7" });
    expect(a).toEqual(b);
    expect(a).toMatchObject({
      code: "ResourceExhausted",
      error: "slow down",
      headers: { "retry-after": "7", "x-set-before-failing": "1" },
    });
  });

  it("a refusal by an interceptor never reaches the implementation", async () => {
    seen.order = [];
    const [a, b] = await both("GetThing", { thingId: "t" }, { authorization: "Bearer bad" });
    expect(a).toEqual(b);
    expect(a).toMatchObject({
      code: "Unauthenticated",
      error: "invalid API key",
      headers: { "www-authenticate": "Bearer" },
    });
    expect(seen.order).toEqual(["outer", "inner", "outer", "inner"]);
  });

  it("a method left out of the implementation is UNIMPLEMENTED, after the interceptors ran", async () => {
    const [a, b] = await both("ListThings", {});
    expect(a).toEqual(b);
    expect(a.code).toBe("Unimplemented");
  });

  it("a service not registered at all is UNIMPLEMENTED", async () => {
    const empty = createLocalTransport(() => {}, interceptors);
    expect((await call(empty, "GetThing", { thingId: "x" })).code).toBe("Unimplemented");
  });

  it("an exception that is not a ConnectError is INTERNAL with a generic message", async () => {
    const bare = createLocalTransport(routes, []);
    const outcome = await call(bare, "Fail", { plainError: true, message: "secret internals" });
    expect(outcome).toMatchObject({ code: "Internal", error: "internal error" });
  });
});

/** What the edge takes from a server stream: every message's data and the headers, or the error. */
async function streamCall(
  transport: Transport,
  input: MessageInitShape<DescMessage>,
  header: Record<string, string> = {},
): Promise<Outcome & { chunks: string[] }> {
  const headers: OutgoingHttpHeaders = {};
  const chunks: string[] = [];
  try {
    const res = await transport.stream(method("DownloadThing"), undefined, undefined, header, oneInput(input));
    for await (const m of res.message as AsyncIterable<{ contentType: string; data: Uint8Array }>)
      chunks.push(`${m.contentType}|${new TextDecoder().decode(m.data)}`);
    copyResponseMetadata(res.header, headers);
    copyResponseMetadata(res.trailer, headers);
    return { headers, chunks };
  } catch (err) {
    const error = ConnectError.from(err);
    copyResponseMetadata(error.metadata, headers);
    return { headers, chunks, code: Code[error.code], error: error.rawMessage };
  }
}

async function* oneInput<T>(input: T) {
  yield input;
}

describe("local transport: server streams, as the router transport", () => {
  it("the messages in order, through the interceptors, with the headers set", async () => {
    const input = { thingId: "t", chunks: 3, failAfter: -1 };
    const a = await streamCall(local, input, { authorization: "Bearer k" });
    const b = await streamCall(router, input, { authorization: "Bearer k" });
    expect(a).toEqual(b);
    expect(a.chunks).toEqual(["text/plain|Bearer k:0;", "|Bearer k:1;", "|Bearer k:2;"]);
    expect(a.headers).toMatchObject({ etag: '"d1"', "ratelimit-remaining": "41" });
  });

  it("an error thrown before the first message or after some: its code, message and metadata", async () => {
    for (const failAfter of [0, 2]) {
      const input = { thingId: "t", chunks: 3, failAfter };
      const a = await streamCall(local, input);
      const b = await streamCall(router, input);
      expect(a).toEqual(b);
      expect(a).toMatchObject({ code: "DataLoss", error: `failed after ${failAfter}`, headers: { etag: '"d1"' } });
      expect(a.chunks).toHaveLength(failAfter);
    }
  });

  it("a refusal by an interceptor, and a unary method called as a stream", async () => {
    const refused = await streamCall(local, { chunks: 1, failAfter: -1 }, { authorization: "Bearer bad" });
    expect(refused).toEqual(await streamCall(router, { chunks: 1, failAfter: -1 }, { authorization: "Bearer bad" }));
    expect(refused.code).toBe("Unauthenticated");
    await expect(
      local.stream(method("GetThing"), undefined, undefined, {}, oneInput({ thingId: "x" }) as never),
    ).rejects.toMatchObject({ code: Code.Unimplemented });
  });

  it("the handler's signal is aborted once the reader stops early", async () => {
    const res = await local.stream(
      method("DownloadThing"),
      undefined,
      undefined,
      {},
      oneInput({ chunks: 100, failAfter: -1 }) as never,
    );
    for await (const _ of res.message) break;
    expect(seen.signal?.aborted).toBe(true);
  });
});

describe("local transport: objects and signals", () => {
  it("interceptors run outermost first, then the implementation", async () => {
    seen.order = [];
    await call(local, "GetThing", { thingId: "t" });
    expect(seen.order).toEqual(["outer", "inner", "impl"]);
  });

  it("the handler's signal is aborted once the call is over", async () => {
    await call(local, "GetThing", { thingId: "t" });
    expect(seen.signal?.aborted).toBe(true);
    expect(ConnectError.from(seen.signal?.reason).code).toBe(Code.Canceled);
  });

  it("the caller's abort reaches the handler", async () => {
    const abort = new AbortController();
    const pending = call(
      local,
      "Fail",
      { sleepMs: 5_000, code: Code.Internal, message: "not reached" },
      {},
      abort.signal,
    );
    setTimeout(() => abort.abort(new ConnectError("client went away", Code.Canceled)), 20);
    expect(await pending).toMatchObject({ code: "Canceled", error: "client went away" });
  });

  it("a timeout becomes DEADLINE_EXCEEDED", async () => {
    const outcome = await call(
      local,
      "Fail",
      { sleepMs: 5_000, code: Code.Internal, message: "not reached" },
      {},
      undefined,
      30,
    );
    expect(outcome.code).toBe("DeadlineExceeded");
  });

  it("hands the request message object to the implementation and returns the response object unchanged", async () => {
    let received: unknown;
    const echo = createLocalTransport((r) => {
      r.service(EdgeTestService, {
        getThing(req) {
          received = req;
          return { thing: { id: req.thingId } };
        },
      });
    }, []);
    const { create } = await import("@bufbuild/protobuf");
    const { GetThingRequestSchema } = await import("../../gen/agentplane/edgetest/v1/edgetest_pb.js");
    const input = create(GetThingRequestSchema, { thingId: "same" });
    const res = await echo.unary(method("GetThing"), undefined, undefined, {}, input as never);
    expect(received).toBe(input);
    expect((res.message as unknown as { thing: { id: string } }).thing.id).toBe("same");
  });
});
