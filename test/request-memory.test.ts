// The process's count of request messages' memory (services/platform/request-memory.ts), on a
// real server with REQUEST_MEMORY_BYTES set low. A large PostMessage kept in flight (its session's
// row locked by the test, so the call waits in the database with its message decoded) leaves no
// room for a second: that one is answered UNAVAILABLE with Retry-After over gRPC and Connect, 503
// through the REST edge, and is not decoded. Small calls go on being served; once the call in
// flight ends, the same message is taken. The gRPC fast path, Connect's handler (gRPC-Web,
// Connect) and the REST edge hold in one count. A message larger than the whole bound is
// RESOURCE_EXHAUSTED (429); a client that resets its stream gives back what its call held; the
// open services take small requests only.
import { type ClientHttp2Session, connect, constants } from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { status as grpcStatus, type ServiceError } from "@grpc/grpc-js";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostMessageRequestSchema, SessionService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { decodedSize } from "../services/platform/decoded-size.js";
import { MAX_TEXT_CHARS } from "../services/sessions/inputs.js";
import { api, bearer, createTestOrg, createTestUser, type TestUser } from "./support/fixtures.js";
import { type GrpcCaller, grpcClient } from "./support/grpc.js";
import { envelope, H2Client } from "./reliability/support/raw-h2.js";
import { startTestServer, type TestServer } from "./support/server.js";
import { createTestSession } from "./support/sessions.js";

/** The bound the server runs with: one large message below fits, two do not. */
const LIMIT = 2 << 20;
/** A file of 600,000 characters: a valid PostMessage of about 1.2 MB decoded. */
const FILES = [{ name: "notes.txt", data: "x".repeat(600_000) }];
/** Text past what PostMessage takes (MAX_TEXT_CHARS): decoded and held, then refused by validation. */
const LARGE_TEXT = "x".repeat(600_000);
const busyMessage =
  `request: the process holds as much of requests' messages as it takes at once (${LIMIT} bytes decoded, ` +
  "REQUEST_MEMORY_BYTES); retry after 1 s";

describe("request memory: one bound for the process", () => {
  let server: TestServer;
  let member: TestUser;
  let sessionId: string;
  let sessions: GrpcCaller;
  let connectClient: Client<typeof SessionService>;
  let grpcWebClient: Client<typeof SessionService>;

  beforeAll(async () => {
    server = await startTestServer({ REQUEST_MEMORY_BYTES: String(LIMIT) });
    const orgId = await createTestOrg(server.platform.db, "Request memory");
    member = await createTestUser(server.platform.db, orgId, "member");
    sessionId = await createTestSession(server, member);
    sessions = grpcClient(SessionService, server.grpcUrl, bearer(member.key));
    connectClient = createClient(
      SessionService,
      createConnectTransport({ baseUrl: server.grpcUrl, httpVersion: "2", useBinaryFormat: false }),
    );
    grpcWebClient = createClient(SessionService, createGrpcWebTransport({ baseUrl: server.grpcUrl, httpVersion: "2" }));
  });
  afterAll(async () => {
    sessions?.close();
    await server?.close();
  });

  const estimateOf = (fields: { text: string; files?: typeof FILES }) => {
    const bytes = toBinary(PostMessageRequestSchema, create(PostMessageRequestSchema, { sessionId, ...fields }));
    const size = decodedSize(PostMessageRequestSchema, bytes, Number.MAX_SAFE_INTEGER);
    if (!size.within) throw new Error("unbounded estimate");
    return size.bytes;
  };

  /** PostMessage over gRPC (grpc-js, the fast path): its code, message and retry-after. */
  const postOverGrpc = (text = LARGE_TEXT) =>
    sessions.call(SessionService.method.postMessage, { sessionId, text }).then(
      () => ({ code: grpcStatus.OK, details: "", retryAfter: undefined }),
      // grpc-js leaves %3A and %2C of grpc-message encoded (it undoes it with decodeURI).
      (e: ServiceError) => ({
        code: e.code,
        details: decodeURIComponent(e.details),
        retryAfter: e.metadata?.get("retry-after")[0],
      }),
    );
  const postOverRest = (body: unknown) =>
    api(server.restUrl, member.key, `/api/v0/sessions/${sessionId}/messages`, { method: "POST", body });
  /** Until the server holds a message (the one the test keeps in flight: nothing else is sent meanwhile). */
  const untilHeld = () => until(async () => server.requestMemory.inUse > 0);
  const tooLong = `text: must be at most ${MAX_TEXT_CHARS} characters, got ${LARGE_TEXT.length}`;

  /**
   * A valid large PostMessage sent by `send` and kept in flight: the session's row is locked until
   * `finish`, so the call waits in the database with its message decoded and held. Resolves once
   * the server holds it (a second large message is then turned away).
   */
  const inFlight = async (send: () => Promise<unknown>) => {
    let unlock!: () => void;
    const locked = new Promise<void>((resolve) => {
      unlock = resolve;
    });
    let isLocked!: () => void;
    const lockTaken = new Promise<void>((resolve) => {
      isLocked = resolve;
    });
    const lock = server.platform.db.transaction().execute(async (trx) => {
      await sql`select 1 from sessions where id = ${sessionId} for update`.execute(trx);
      isLocked();
      await locked;
    });
    await lockTaken;
    const sent = send();
    await untilHeld();
    // And past the point where a call whose client left would stop: waiting for the row.
    await until(async () => {
      const waiting = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity
        where datname = current_database() and wait_event_type = 'Lock'`.execute(server.platform.db);
      return waiting.rows[0]!.n > 0;
    });
    return {
      finish: async () => {
        unlock();
        await lock;
        return sent;
      },
    };
  };

  it("takes a large message when nothing else is held: it reaches the method's validation", async () => {
    expect(estimateOf({ text: LARGE_TEXT })).toBeGreaterThan(1 << 20);
    expect(estimateOf({ text: "hi", files: FILES })).toBeGreaterThan(1 << 20);
    expect(estimateOf({ text: LARGE_TEXT }) + estimateOf({ text: "hi", files: FILES })).toBeGreaterThan(LIMIT);
    const answer = await postOverGrpc();
    expect(answer.code).toBe(grpcStatus.INVALID_ARGUMENT);
    expect(answer.details).toContain(tooLong);
    const rest = await postOverRest({ text: LARGE_TEXT });
    expect(rest.status).toBe(400);
    expect(rest.json.detail).toContain(tooLong);
  });

  const senders = {
    "gRPC, the fast path": () =>
      sessions
        .call(SessionService.method.postMessage, { sessionId, text: "hi", files: FILES })
        .then((r) => r.messageId),
    "gRPC-Web, Connect's handler": () =>
      grpcWebClient
        .postMessage({ sessionId, text: "hi", files: FILES }, { headers: bearer(member.key) })
        .then((r) => r.messageId),
    "the REST edge": () =>
      postOverRest({ text: "hi", files: FILES }).then((r) => {
        expect(r.status).toBe(200);
        return r.json.messageId as string;
      }),
  };
  for (const [via, send] of Object.entries(senders)) {
    it(`a message in flight by ${via} leaves no room for another until its call ends`, async () => {
      const call = await inFlight(send);
      // Each way holds the estimate of the same binary message (the REST edge: the one it built).
      expect(server.requestMemory.inUse).toBe(estimateOf({ text: "hi", files: FILES }));
      const refused = await postOverGrpc();
      expect(refused).toEqual({ code: grpcStatus.UNAVAILABLE, details: busyMessage, retryAfter: "1" });
      const rest = await postOverRest({ text: LARGE_TEXT });
      expect(rest.status).toBe(503);
      expect(rest.headers.get("retry-after")).toBe("1");
      expect(rest.json.detail).toBe(busyMessage);
      const overConnect = await connectClient
        .postMessage({ sessionId, text: LARGE_TEXT }, { headers: bearer(member.key) })
        .catch((e: unknown) => ConnectError.from(e));
      expect(overConnect).toBeInstanceOf(ConnectError);
      expect((overConnect as ConnectError).rawMessage).toBe(busyMessage);
      expect((overConnect as ConnectError).metadata.get("retry-after")).toBe("1");
      // Small calls are neither held nor refused.
      const small = sessions.call(SessionService.method.getSession, { sessionId });
      expect((await small).sessionId).toBe(sessionId);

      expect(await call.finish()).toMatch(/\S/);
      await until(async () => server.requestMemory.inUse === 0);
      const again = await postOverGrpc();
      expect(again.code).toBe(grpcStatus.INVALID_ARGUMENT);
      expect(again.details).toContain(tooLong);
    });
  }

  it("what a call held is given back when its client resets the stream", async () => {
    const session: ClientHttp2Session = connect(server.grpcUrl);
    session.on("error", () => {});
    try {
      // The message arrives whole, so the fast path decodes and holds it; the request never ends.
      const stream = session.request({
        ":method": "POST",
        ":path": "/agentplane.sessions.v1alpha1.SessionService/PostMessage",
        "content-type": "application/grpc",
        te: "trailers",
        ...bearer(member.key),
      });
      stream.on("error", () => {});
      const closed = new Promise((resolve) => stream.on("close", resolve));
      stream.write(
        envelope(
          0,
          toBinary(PostMessageRequestSchema, create(PostMessageRequestSchema, { sessionId, text: LARGE_TEXT })),
        ),
      );
      await untilHeld();
      stream.close(constants.NGHTTP2_CANCEL);
      await closed;
      await until(async () => server.requestMemory.inUse === 0);
      const again = await postOverGrpc();
      expect(again.code).toBe(grpcStatus.INVALID_ARGUMENT);
    } finally {
      session.destroy();
    }
  });

  it("the open services (health, reflection) take small requests only: nobody without a credential holds memory", async () => {
    // HealthCheckRequest.service (field 1) of 100,000 characters.
    const message = Buffer.concat([Buffer.from([0x0a, 0xa0, 0x8d, 0x06]), Buffer.alloc(100_000, 0x61)]);
    const client = new H2Client(server.grpcUrl);
    try {
      const health = await client.request(
        {
          path: "/grpc.health.v1.Health/Check",
          headers: { "content-type": "application/grpc", te: "trailers" },
          body: [envelope(0, message)],
        },
        10_000,
      );
      const fields = { ...health.headers, ...health.trailers };
      expect(fields["grpc-status"]).toBe(String(grpcStatus.RESOURCE_EXHAUSTED));
      expect(decodeURIComponent(String(fields["grpc-message"]))).toBe(
        "message size 100004 is larger than configured readMaxBytes 65536",
      );
    } finally {
      client.close();
    }
  });

  it("a message larger than the whole bound is RESOURCE_EXHAUSTED (429), busy or not", async () => {
    const text = "x".repeat(1_100_000);
    const estimate = estimateOf({ text });
    expect(estimate).toBeGreaterThan(LIMIT);
    const answer = await postOverGrpc(text);
    expect(answer.code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
    expect(answer.details).toBe(
      `request: the message would take about ${estimate} bytes once decoded, more than this process holds for the ` +
        `requests it serves at once (${LIMIT}, REQUEST_MEMORY_BYTES): send a smaller message`,
    );
    const rest = await postOverRest({ text });
    expect(rest.status).toBe(429);
    expect(rest.json.detail).toBe(answer.details);
    // The same while the count is full: it would never fit, so no Retry-After to wait for.
    const call = await inFlight(senders["gRPC, the fast path"]);
    expect((await postOverGrpc(text)).code).toBe(grpcStatus.RESOURCE_EXHAUSTED);
    const busyRest = await postOverRest({ text });
    expect(busyRest.status).toBe(429);
    expect(busyRest.json.detail).toBe(answer.details);
    await call.finish();
  });

  const leaving = {
    "gRPC, the fast path": createGrpcTransport,
    "gRPC-Web, Connect's handler": createGrpcWebTransport,
  };
  for (const [via, transport] of Object.entries(leaving)) {
    it(`a call by ${via} keeps its message held while it runs, though its client has gone`, async () => {
      const client = createClient(SessionService, transport({ baseUrl: server.grpcUrl, httpVersion: "2" }));
      const leave = new AbortController();
      let sent!: Promise<unknown>;
      const call = await inFlight(() => {
        sent = client
          .postMessage({ sessionId, text: "hi", files: FILES }, { headers: bearer(member.key), signal: leave.signal })
          .catch((e: unknown) => ConnectError.from(e));
        return sent;
      });
      const held = estimateOf({ text: "hi", files: FILES });
      expect(server.requestMemory.inUse).toBe(held);
      leave.abort();
      expect(((await sent) as ConnectError).code).toBe(Code.Canceled);
      // The implementation still waits for the lock with the message: it is still held.
      await new Promise((r) => setTimeout(r, 200));
      expect(server.requestMemory.inUse).toBe(held);
      expect((await postOverGrpc()).code).toBe(grpcStatus.UNAVAILABLE);
      await call.finish();
      await until(async () => server.requestMemory.inUse === 0);
    });
  }
});

async function until(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error("the server never came to the state the test waits for");
}
