// The process's count of request messages' memory (services/platform/request-memory.ts), on a
// real server with REQUEST_MEMORY_BYTES set low: a large message held by one call (a stream whose
// message has arrived whole and is decoded, but whose request has not ended) leaves no room for a
// second, which is answered UNAVAILABLE with Retry-After over gRPC and 503 through the REST edge;
// one that passes the whole bound is RESOURCE_EXHAUSTED (429); small calls go on being served; once
// the holding call ends, the same message is taken. The gRPC fast path, Connect's handler
// (gRPC-Web) and the REST edge hold in one count.
import { connect, type ClientHttp2Session, type ClientHttp2Stream } from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { status as grpcStatus, type ServiceError } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostMessageRequestSchema, SessionService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { decodedSize } from "../services/platform/decoded-size.js";
import { MAX_TEXT_CHARS } from "../services/sessions/inputs.js";
import { api, bearer, createTestOrg, createTestUser, type TestUser } from "./support/fixtures.js";
import { grpcClient, type GrpcCaller } from "./support/grpc.js";
import { envelope } from "./reliability/support/raw-h2.js";
import { startTestServer, type TestServer } from "./support/server.js";
import { createTestSession } from "./support/sessions.js";

/** The bound the server runs with: one large message below fits, two do not. */
const LIMIT = 2 << 20;
/** Text past what PostMessage takes (MAX_TEXT_CHARS): decoded and held, then refused by validation. */
const LARGE_TEXT = "x".repeat(600_000);

describe("request memory: one bound for the process", () => {
  let server: TestServer;
  let member: TestUser;
  let sessionId: string;
  let sessions: GrpcCaller;
  let h2: ClientHttp2Session;

  beforeAll(async () => {
    server = await startTestServer({ REQUEST_MEMORY_BYTES: String(LIMIT) });
    const orgId = await createTestOrg(server.platform.db, "Request memory");
    member = await createTestUser(server.platform.db, orgId, "member");
    sessionId = await createTestSession(server, member);
    sessions = grpcClient(SessionService, server.grpcUrl, bearer(member.key));
    h2 = connect(server.grpcUrl);
    h2.on("error", () => {});
  });
  afterAll(async () => {
    sessions?.close();
    h2?.destroy();
    await server?.close();
  });

  const large = (text = LARGE_TEXT) => create(PostMessageRequestSchema, { sessionId, text });
  const estimateOf = (text: string) => {
    const size = decodedSize(PostMessageRequestSchema, toBinary(PostMessageRequestSchema, large(text)), Infinity);
    if (!size.within) throw new Error("unbounded estimate");
    return size.bytes;
  };

  /**
   * A PostMessage stream whose message has arrived whole but whose request has not ended: the
   * listener decodes (and holds) it, and calls the method once the request ends (`end`).
   */
  const holding = async (contentType: "application/grpc" | "application/grpc-web+proto") => {
    const stream: ClientHttp2Stream = h2.request({
      ":method": "POST",
      ":path": "/agentplane.sessions.v1alpha1.SessionService/PostMessage",
      "content-type": contentType,
      te: "trailers",
      ...bearer(member.key),
    });
    stream.on("error", () => {});
    // The call's grpc-status: in the trailers (gRPC, or a trailers-only answer's headers), or in
    // the body's trailer frame (gRPC-Web).
    const answered = new Promise<string | undefined>((resolve) => {
      let headers: Record<string, unknown> = {};
      let trailers: Record<string, unknown> = {};
      const body: Buffer[] = [];
      stream.on("response", (h) => (headers = h));
      stream.on("trailers", (t) => (trailers = t));
      stream.on("data", (chunk: Buffer) => body.push(chunk));
      stream.on("close", () =>
        resolve(
          (trailers["grpc-status"] ??
            headers["grpc-status"] ??
            /grpc-status:\s*(\d+)/.exec(Buffer.concat(body).toString("latin1"))?.[1]) as string | undefined,
        ),
      );
    });
    stream.write(envelope(0, toBinary(PostMessageRequestSchema, large())));
    // Until the server holds it: the next large message is then turned away.
    await until(async () => (await postOverGrpc()).code === grpcStatus.UNAVAILABLE);
    return {
      end: async () => {
        stream.end();
        return answered;
      },
    };
  };

  const postOverGrpc = (text = LARGE_TEXT) =>
    sessions.call(SessionService.method.postMessage, large(text)).then(
      () => ({ code: grpcStatus.OK, details: "", retryAfter: undefined }),
      // grpc-js leaves %3A and %2C of grpc-message encoded (it undoes it with decodeURI).
      (e: ServiceError) => ({
        code: e.code,
        details: decodeURIComponent(e.details),
        retryAfter: e.metadata?.get("retry-after")[0],
      }),
    );
  const postOverRest = () =>
    api(server.restUrl, member.key, `/api/v0/sessions/${sessionId}/messages`, {
      method: "POST",
      body: { text: LARGE_TEXT },
    });
  const tooLong = `text: must be at most ${MAX_TEXT_CHARS} characters, got ${LARGE_TEXT.length}`;

  it("takes a large message when nothing else is held: it reaches the method's validation", async () => {
    expect(estimateOf(LARGE_TEXT)).toBeGreaterThan(1 << 20);
    expect(2 * estimateOf(LARGE_TEXT)).toBeGreaterThan(LIMIT);
    const answer = await postOverGrpc();
    expect(answer.code).toBe(grpcStatus.INVALID_ARGUMENT);
    expect(answer.details).toContain(tooLong);
    const rest = await postOverRest();
    expect(rest.status).toBe(400);
    expect(rest.json.detail).toContain(tooLong);
  });

  for (const path of ["application/grpc", "application/grpc-web+proto"] as const) {
    it(`a message held on the ${path === "application/grpc" ? "fast path" : "Connect path (gRPC-Web)"} leaves no room for another until its call ends`, async () => {
      const held = await holding(path);
      const refused = await postOverGrpc();
      expect(refused.code).toBe(grpcStatus.UNAVAILABLE);
      expect(refused.retryAfter).toBe("1");
      expect(refused.details).toBe(
        `request: the process holds as much of requests' messages as it takes at once (${LIMIT} bytes decoded, ` +
          "REQUEST_MEMORY_BYTES); retry after 1 s",
      );
      const rest = await postOverRest();
      expect(rest.status).toBe(503);
      expect(rest.headers.get("retry-after")).toBe("1");
      expect(rest.json.detail).toBe(refused.details);
      // Small calls are neither held nor refused.
      const small = await postOverGrpc("hello");
      expect(small.code).toBe(grpcStatus.OK);

      expect(await held.end()).toBe(String(grpcStatus.INVALID_ARGUMENT));
      const again = await postOverGrpc();
      expect(again.code).toBe(grpcStatus.INVALID_ARGUMENT);
      expect(again.details).toContain(tooLong);
    });
  }

  it("a message larger than the whole bound is RESOURCE_EXHAUSTED (429), busy or not", async () => {
    const text = "x".repeat(1_100_000);
    const estimate = estimateOf(text);
    expect(estimate).toBeGreaterThan(LIMIT);
    const answer = await postOverGrpc(text);
    expect(answer.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
    expect(answer.details).toBe(
      `request: the message would take about ${estimate} bytes once decoded, more than this process holds for the ` +
        `requests it serves at once (${LIMIT}, REQUEST_MEMORY_BYTES): send a smaller message`,
    );
    const rest = await api(server.restUrl, member.key, `/api/v0/sessions/${sessionId}/messages`, {
      method: "POST",
      body: { text },
    });
    expect(rest.status).toBe(429);
    expect(rest.json.detail).toContain("more than this process holds for the requests it serves at once");
  });
});

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the server never held the message");
}
