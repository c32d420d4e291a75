// The unary gRPC fast path (services/platform/grpc-unary.ts) answers what Connect's handler
// answers: two real servers on one database and one key-value store, one with the fast path
// (the default) and one without (GRPC_UNARY_FAST_PATH=false), get the same raw HTTP/2 requests,
// and their answers are compared: status, headers, trailers and body, for a success and every
// kind of error. Then real clients (@grpc/grpc-js and connect-node) against the fast path.
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { IncomingHttpHeaders } from "node:http2";
import { brotliCompressSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  GetSessionRequestSchema,
  ListSessionsRequestSchema,
  PostMessageRequestSchema,
  SessionRunnerService,
  SessionSchema,
  SessionService,
  UpdateSessionRequestSchema,
} from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import type { Database } from "../services/database.js";
import { migrations } from "../services/migrations.js";
import { setOrganizationRateLimit } from "../services/organization/queries.js";
import type { KeyValueStore } from "../services/platform/kv.js";
import { createLogger } from "../services/platform/logger.js";
import { MAX_REQUEST_BODY_BYTES, type RunningServer, startServer } from "../services/server.js";
import { envelope, H2Client, type H2Response } from "./reliability/support/raw-h2.js";
import { createTestDatabase, type TestDatabase } from "./support/database.js";
import { bearer, createTestOrg, createTestServiceAccount, createTestUser, type TestUser } from "./support/fixtures.js";
import { grpcClient } from "./support/grpc.js";
import { createTestKv } from "./support/kv.js";
import { testServerConfig } from "./support/server.js";

const GET_SESSION = `/${SessionService.typeName}/GetSession`;
const LIST_SESSIONS = `/${SessionService.typeName}/ListSessions`;
const UPDATE_SESSION = `/${SessionService.typeName}/UpdateSession`;
const POST_MESSAGE = `/${SessionService.typeName}/PostMessage`;
const TIMEOUT_MS = 10_000;

const getSession = (sessionId: string) =>
  Buffer.from(toBinary(GetSessionRequestSchema, create(GetSessionRequestSchema, { sessionId })));

/**
 * An answer without what legitimately differs between two calls made one after the other: the
 * date, the request id, the rate limit's clock and count (both servers share one budget: `both`
 * checks that the second call's remaining count is the first's less one).
 */
function comparable(res: H2Response) {
  const strip = (h: IncomingHttpHeaders) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(h)) {
      if (k === "date") continue;
      if (k === "x-request-id") out[k] = typeof v === "string" && v.length > 0 ? "<request id>" : v;
      else if (k === "ratelimit-reset" || k === "retry-after") out[k] = Number(v) > 0 ? "<seconds>" : v;
      else if (k === "ratelimit-remaining" && Number(v) > 0) out[k] = "<count>";
      // The rate limiter's refusal names the seconds left in its window.
      else if (k === "grpc-message" && typeof v === "string")
        out[k] = v.replace(/after%20\d+%20s/, "after%20<seconds>%20s");
      else out[k] = v;
    }
    return out;
  };
  return {
    status: res.status,
    headers: strip(res.headers),
    trailers: strip(res.trailers),
    body: res.body.toString("hex"),
    resetCode: res.resetCode,
  };
}

/** The status of a gRPC answer, from its trailers or (trailers-only) its headers. */
function grpcStatus(res: H2Response): [string, string] {
  const from = res.trailers["grpc-status"] === undefined ? res.headers : res.trailers;
  return [String(from["grpc-status"]), decodeURIComponent(String(from["grpc-message"] ?? ""))];
}

describe("the unary gRPC fast path answers as Connect's handler", () => {
  let database: TestDatabase<Database>;
  let kv: KeyValueStore;
  let fast: RunningServer;
  let connect: RunningServer;
  let fastClient: H2Client;
  let connectClient: H2Client;
  let owner: TestUser;
  let guest: TestUser;
  let limited: TestUser;
  let sessionId: string;

  beforeAll(async () => {
    database = await createTestDatabase<Database>(migrations);
    kv = await createTestKv();
    const logger = createLogger("silent");
    fast = await startServer(testServerConfig(), logger, { database, kv, workers: false });
    connect = await startServer(testServerConfig({ GRPC_UNARY_FAST_PATH: "false" }), logger, {
      database,
      kv,
      workers: false,
    });
    fastClient = new H2Client(fast.grpcUrl);
    connectClient = new H2Client(connect.grpcUrl);
    const orgId = await createTestOrg(database.db, "Fast path");
    owner = await createTestUser(database.db, orgId, "owner");
    guest = await createTestUser(database.db, orgId, "guest");
    const limitedOrg = await createTestOrg(database.db, "Rate limited");
    limited = await createTestUser(database.db, limitedOrg, "owner");
    await setOrganizationRateLimit(database.db, limitedOrg, 1);
    const runner = grpcClient(
      SessionRunnerService,
      fast.internalGrpcUrl,
      bearer(await createTestServiceAccount(database.db)),
    );
    try {
      const create = (init: Record<string, unknown>) =>
        runner.call(SessionRunnerService.method.createSession, { orgId, userId: owner.userId, ...init });
      sessionId = (await create({ title: "fast path" })).sessionId;
      // A list past 1 KiB, which Connect compresses for a client that accepts it.
      for (let i = 0; i < 4; i++) await create({ title: "y".repeat(500) });
    } finally {
      runner.close();
    }
  });

  afterAll(async () => {
    fastClient?.close();
    connectClient?.close();
    await fast?.stop();
    await connect?.stop();
    await kv?.close();
    await database?.drop();
  });

  /** The same request to both servers; their answers, comparable. */
  async function both(
    path: string,
    headers: Record<string, string>,
    body: Buffer[],
    keepOpen = false,
  ): Promise<[H2Response, H2Response]> {
    const req = { path, headers: { "content-type": "application/grpc", te: "trailers", ...headers }, body, keepOpen };
    const a = await fastClient.request(req, TIMEOUT_MS);
    const b = await connectClient.request(req, TIMEOUT_MS);
    expect(comparable(a)).toEqual(comparable(b));
    const remaining = (r: H2Response) => Number(r.headers["ratelimit-remaining"] ?? r.trailers["ratelimit-remaining"]);
    if (remaining(a) > 0) expect(remaining(b)).toBe(remaining(a) - 1);
    return [a, b];
  }

  it("a success: the same headers, message and trailers", async () => {
    const [res] = await both(GET_SESSION, bearer(owner.key), [envelope(0, getSession(sessionId))]);
    expect(grpcStatus(res)).toEqual(["0", ""]);
    expect(res.headers["content-type"]).toBe("application/grpc+proto");
    expect(res.headers["x-request-id"]).toBeTruthy();
    expect(res.headers["ratelimit-limit"]).toBeTruthy();
    const session = fromBinary(SessionSchema, res.body.subarray(5));
    expect(session.sessionId).toBe(sessionId);
  });

  it("content type application/grpc+proto, a body in several DATA frames, and a caller's request id", async () => {
    const frame = envelope(0, getSession(sessionId));
    const [res] = await both(
      GET_SESSION,
      { ...bearer(owner.key), "content-type": "application/grpc+proto", "x-request-id": "fast-path-test-1" },
      [frame.subarray(0, 3), frame.subarray(3, 9), frame.subarray(9)],
    );
    expect(res.headers["x-request-id"]).toBe("fast-path-test-1");
    expect(fromBinary(SessionSchema, res.body.subarray(5)).sessionId).toBe(sessionId);
  });

  it("unauthenticated, before the body", async () => {
    const [res] = await both(GET_SESSION, {}, [envelope(0, getSession(sessionId))]);
    expect(grpcStatus(res)[0]).toBe(String(Code.Unauthenticated));
  });

  it("permission denied, with the rate-limit headers and the request id", async () => {
    const update = Buffer.from(toBinary(UpdateSessionRequestSchema, create(UpdateSessionRequestSchema, { sessionId })));
    const [res] = await both(UPDATE_SESSION, bearer(guest.key), [envelope(0, update)]);
    expect(grpcStatus(res)[0]).toBe(String(Code.PermissionDenied));
    expect(res.trailers["ratelimit-limit"]).toBeTruthy();
    expect(res.trailers["x-request-id"]).toBeTruthy();
  });

  it("not found, and invalid argument", async () => {
    const [missing] = await both(GET_SESSION, bearer(owner.key), [
      envelope(0, getSession("5f0c6c47-1b7e-4d2a-9a53-8d2f7a1f0c11")),
    ]);
    expect(grpcStatus(missing)[0]).toBe(String(Code.NotFound));
    const badLimit = Buffer.from(
      toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, { limit: "many" })),
    );
    const [invalid] = await both(LIST_SESSIONS, bearer(owner.key), [envelope(0, badLimit)]);
    expect(grpcStatus(invalid)[0]).toBe(String(Code.InvalidArgument));
  });

  it("rate limited: RESOURCE_EXHAUSTED with the rate-limit headers and retry-after", async () => {
    const req = {
      path: GET_SESSION,
      headers: { "content-type": "application/grpc", te: "trailers", ...bearer(limited.key) },
      body: [envelope(0, getSession(sessionId))],
    };
    // The budget (1 a minute, shared through the store) is spent by the first call.
    await fastClient.request(req, TIMEOUT_MS);
    const [res] = await both(GET_SESSION, bearer(limited.key), [envelope(0, getSession(sessionId))]);
    expect(grpcStatus(res)[0]).toBe(String(Code.ResourceExhausted));
    expect(res.trailers["ratelimit-remaining"]).toBe("0");
    expect(res.trailers["retry-after"]).toBeTruthy();
  });

  it("deadline exceeded through grpc-timeout, and a grpc-timeout that does not parse", async () => {
    // A deadline of zero has passed when the call starts.
    const [late] = await both(GET_SESSION, { ...bearer(owner.key), "grpc-timeout": "0m" }, [
      envelope(0, getSession(sessionId)),
    ]);
    expect(grpcStatus(late)[0]).toBe(String(Code.DeadlineExceeded));
    const [bad] = await both(GET_SESSION, { ...bearer(owner.key), "grpc-timeout": "soon" }, [
      envelope(0, getSession(sessionId)),
    ]);
    expect(grpcStatus(bad)).toEqual([String(Code.InvalidArgument), "protocol error: invalid grpc timeout value: soon"]);
    const [long] = await both(GET_SESSION, { ...bearer(owner.key), "grpc-timeout": "99999999H" }, [
      envelope(0, getSession(sessionId)),
    ]);
    expect(grpcStatus(long)[0]).toBe(String(Code.InvalidArgument));
  });

  it("a message over the size limit, answered from its envelope's header", async () => {
    const [res] = await both(
      GET_SESSION,
      bearer(owner.key),
      [envelope(0, Buffer.alloc(16), MAX_REQUEST_BODY_BYTES + 1)],
      true,
    );
    expect(grpcStatus(res)).toEqual([
      String(Code.ResourceExhausted),
      `message size ${MAX_REQUEST_BODY_BYTES + 1} is larger than configured readMaxBytes ${MAX_REQUEST_BODY_BYTES}`,
    ]);
  });

  it("malformed requests: a cut envelope, no message, two messages, a message that does not decode, a compressed flag", async () => {
    const frame = envelope(0, getSession(sessionId));
    const cases: [Buffer[], Code][] = [
      [[frame.subarray(0, frame.length - 2)], Code.InvalidArgument],
      [[Buffer.alloc(3)], Code.InvalidArgument],
      [[], Code.Unimplemented],
      [[frame, frame], Code.Unimplemented],
      [[envelope(0, Buffer.from([0x0a, 0xff]))], Code.InvalidArgument],
      [[envelope(1, getSession(sessionId))], Code.InvalidArgument],
    ];
    for (const [body, code] of cases) {
      const [res] = await both(GET_SESSION, bearer(owner.key), body);
      expect(grpcStatus(res)[0]).toBe(String(code));
    }
  });

  it("an unknown method, and a JSON request or an unknown encoding (both answered as Connect does)", async () => {
    await both(`/${SessionService.typeName}/NoSuchMethod`, bearer(owner.key), [envelope(0, getSession(sessionId))]);
    await both(`/agentplane.nothing.v1.Nothing/Get`, bearer(owner.key), [envelope(0, getSession(sessionId))]);
    const [json] = await both(GET_SESSION, { ...bearer(owner.key), "content-type": "application/grpc+json" }, [
      envelope(0, Buffer.from(JSON.stringify({ sessionId }))),
    ]);
    expect(grpcStatus(json)[0]).toBe("0");
    const [unknownEncoding] = await both(GET_SESSION, { ...bearer(owner.key), "grpc-encoding": "snappy" }, [
      envelope(0, getSession(sessionId)),
    ]);
    expect(grpcStatus(unknownEncoding)[0]).toBe(String(Code.Unimplemented));
  });

  it("a compressed request (gzip, br), and one whose compressed bytes are broken or over the limit decompressed", async () => {
    const message = getSession(sessionId);
    for (const [name, compress] of [
      ["gzip", gzipSync],
      ["br", brotliCompressSync],
    ] as const) {
      const [ok] = await both(GET_SESSION, { ...bearer(owner.key), "grpc-encoding": name }, [
        envelope(1, compress(message)),
      ]);
      expect(grpcStatus(ok)[0]).toBe("0");
      expect(fromBinary(SessionSchema, ok.body.subarray(5)).sessionId).toBe(sessionId);
      const [broken] = await both(GET_SESSION, { ...bearer(owner.key), "grpc-encoding": name }, [
        envelope(1, Buffer.from("not compressed at all")),
      ]);
      expect(grpcStatus(broken)[0]).toBe(String(Code.InvalidArgument));
    }
    // Two messages, the first compressed: its errors come before the second's (Connect's order).
    for (const first of [Buffer.from("not gzip"), gzipSync(Buffer.from([0x0a, 0xff])), gzipSync(message)]) {
      const [two] = await both(GET_SESSION, { ...bearer(owner.key), "grpc-encoding": "gzip" }, [
        envelope(1, first),
        envelope(0, Buffer.alloc(0)),
      ]);
      expect(grpcStatus(two)[0]).not.toBe("0");
    }
    // 33 MiB of zeros, a few KiB gzipped: over the limit once decompressed.
    const [bomb] = await both(GET_SESSION, { ...bearer(owner.key), "grpc-encoding": "gzip" }, [
      envelope(1, gzipSync(Buffer.alloc(MAX_REQUEST_BODY_BYTES + 1024))),
    ]);
    expect(grpcStatus(bomb)[0]).toBe(String(Code.ResourceExhausted));
  });

  it("refuses a message that would decode far larger than its bytes, compressed or not, before decoding it", async () => {
    // PostMessage with 2 MiB of empty files[] elements: about 250 MiB decoded (decoded-size.ts).
    const files = Buffer.alloc(2 << 20);
    for (let i = 0; i < files.length; i += 2) files[i] = (4 << 3) | 2;
    const head = Buffer.from(
      toBinary(PostMessageRequestSchema, create(PostMessageRequestSchema, { sessionId, text: "hello" })),
    );
    const message = Buffer.concat([head, files]);
    for (const [headers, body] of [
      [{}, envelope(0, message)],
      [{ "grpc-encoding": "gzip" }, envelope(1, gzipSync(message))],
    ] as const) {
      const res = await fastClient.request(
        {
          path: POST_MESSAGE,
          headers: { "content-type": "application/grpc", te: "trailers", ...bearer(owner.key), ...headers },
          body: [body],
        },
        TIMEOUT_MS,
      );
      const [status, text] = grpcStatus(res);
      expect(status).toBe(String(Code.InvalidArgument));
      expect(text).toContain(`once decoded (8 times its ${message.length} bytes`);
      expect(text).toContain("passing it in files[]");
    }
  });

  it("a response compressed as the client accepts it (grpc-accept-encoding), over Connect's threshold", async () => {
    const list = Buffer.from(toBinary(ListSessionsRequestSchema, create(ListSessionsRequestSchema, {})));
    const [res] = await both(LIST_SESSIONS, { ...bearer(owner.key), "grpc-accept-encoding": "identity,deflate,gzip" }, [
      envelope(0, list),
    ]);
    expect(res.headers["grpc-encoding"]).toBe("gzip");
    expect(res.body[0]).toBe(1);
  });

  it("@grpc/grpc-js and connect-node clients get the same messages and errors from both", async () => {
    for (const server of [fast, connect]) {
      const grpcJs = grpcClient(SessionService, server.grpcUrl, bearer(owner.key));
      try {
        const session = await grpcJs.call(SessionService.method.getSession, { sessionId });
        expect(session.sessionId).toBe(sessionId);
        const err = await grpcJs.call(SessionService.method.listSessions, { limit: "many" }).then(
          () => undefined,
          (e: { code: number; details: string }) => e,
        );
        expect(err?.code).toBe(Code.InvalidArgument);
      } finally {
        grpcJs.close();
      }
      const client = createClient(SessionService, createGrpcTransport({ baseUrl: server.grpcUrl }));
      const headers: [string, string][] = [];
      const session = await client.getSession(
        { sessionId },
        {
          headers: bearer(owner.key),
          onHeader: (h) =>
            h.forEach((v, k) => {
              headers.push([k, v]);
            }),
        },
      );
      expect(session.sessionId).toBe(sessionId);
      expect(headers.map(([k]) => k)).toEqual(
        expect.arrayContaining(["content-type", "ratelimit-limit", "ratelimit-remaining", "x-request-id"]),
      );
      const err = await client.getSession({ sessionId }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(err?.code).toBe(Code.Unauthenticated);
      const late = await client.getSession({ sessionId }, { headers: bearer(owner.key), timeoutMs: 1 }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      // A 1 ms deadline: the client or the server ends it first, either way as DEADLINE_EXCEEDED.
      expect(late === undefined ? "completed in time" : late.code).toBeOneOf([
        Code.DeadlineExceeded,
        "completed in time",
      ]);
    }
  });
});
