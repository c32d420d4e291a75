// A request that stops arriving on a gRPC listener (services/platform/request-deadline.ts): a
// client that sends half a message and never ends the stream is answered DEADLINE_EXCEEDED at
// REQUEST_TIMEOUT_MS, on both listeners and in each protocol; and a stop waits neither for such a
// stream (it is reset REFUSED_STREAM at once) nor for one closed but kept for unread data.
import { type ClientHttp2Session, connect, constants, type IncomingHttpHeaders } from "node:http2";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { OrganizationService } from "../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { SessionRunnerService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { Health } from "../gen/grpc/health/v1/health_pb.js";
import { DRAIN_TIMEOUT_MS } from "../services/server.js";
import { envelope, H2Client, type H2Request } from "./reliability/support/raw-h2.js";
import { createTestOrg, createTestServiceAccount, createTestUser } from "./support/fixtures.js";
import { startTestServer, type TestServer } from "./support/server.js";

const TIMEOUT_MS = 600;

/** A gRPC frame announcing a 10-byte message, of which 3 bytes come; the stream never ends. */
const HALF_A_FRAME = envelope(0, Buffer.from([0x0a, 0x08, 0x61]), 10);

function halfSent(path: string, token: string, contentType = "application/grpc"): H2Request {
  return {
    path,
    headers: { "content-type": contentType, te: "trailers", authorization: `Bearer ${token}` },
    body: [contentType === "application/json" ? Buffer.from('{"limit":') : HALF_A_FRAME],
    keepOpen: true,
  };
}

const LIST_USERS = `/${OrganizationService.typeName}/ListUsers`;
const CREATE_SESSION = `/${SessionRunnerService.typeName}/CreateSession`;

async function keys(server: TestServer) {
  const orgId = await createTestOrg(server.database.db);
  const owner = await createTestUser(server.database.db, orgId, "owner");
  const workload = await createTestServiceAccount(server.database.db, { orgId });
  return { owner: owner.key, workload };
}

describe(`a request not received within REQUEST_TIMEOUT_MS (${TIMEOUT_MS} ms)`, () => {
  let server: TestServer;
  let client: H2Client;
  let internal: H2Client;
  let tokens: { owner: string; workload: string };
  beforeAll(async () => {
    server = await startTestServer({ REQUEST_TIMEOUT_MS: String(TIMEOUT_MS) });
    client = new H2Client(server.grpcUrl);
    internal = new H2Client(server.internalGrpcUrl);
    tokens = await keys(server);
  });
  afterAll(async () => {
    client?.close();
    internal?.close();
    await server?.close();
  });

  const message = `the request message was not received within ${TIMEOUT_MS} ms`;

  it("gRPC, public listener: DEADLINE_EXCEEDED (4) at the timeout, naming it", async () => {
    const res = await client.request(halfSent(LIST_USERS, tokens.owner), 10_000);
    expect(res.status).toBe(200);
    expect([res.headers["grpc-status"], decodeURIComponent(String(res.headers["grpc-message"]))]).toEqual([
      "4",
      message,
    ]);
    // Not before the timeout, and within the sweep's two ticks (a tenth of it each) after it,
    // with room for a loaded machine.
    expect(res.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
    expect(res.ms).toBeLessThan(TIMEOUT_MS * 3);
  });

  it("the server closes the stream after answering, though the client never ended it", async () => {
    const session = connect(server.grpcUrl);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": LIST_USERS,
        "content-type": "application/grpc",
        te: "trailers",
        authorization: `Bearer ${tokens.owner}`,
      });
      stream.on("error", () => {});
      stream.resume();
      stream.write(HALF_A_FRAME);
      const closed = new Promise<number | undefined>((resolve) => stream.once("close", () => resolve(stream.rstCode)));
      expect(await closed).toBe(constants.NGHTTP2_NO_ERROR);
    } finally {
      session.close();
    }
  });

  it("gRPC, internal listener: the same", async () => {
    const res = await internal.request(halfSent(CREATE_SESSION, tokens.workload), 10_000);
    expect([res.headers["grpc-status"], decodeURIComponent(String(res.headers["grpc-message"]))]).toEqual([
      "4",
      message,
    ]);
  });

  it("Connect unary: 504 deadline_exceeded with the same message", async () => {
    const res = await client.request(halfSent(LIST_USERS, tokens.owner, "application/json"), 10_000);
    expect(res.status).toBe(504);
    expect(JSON.parse(res.body.toString("utf8"))).toEqual({ code: "deadline_exceeded", message });
  });

  it("a request that arrives in time is answered as usual", async () => {
    const res = await client.request(
      {
        path: LIST_USERS,
        headers: { "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${tokens.owner}` },
        body: [envelope(0, Buffer.alloc(0))],
      },
      10_000,
    );
    expect(res.trailers["grpc-status"]).toBe("0");
  });
});

/**
 * A stream Node keeps after it closed: the first message does not decode, so Connect answers
 * and stops reading, Node's compatibility layer pauses the stream, and what the client sends
 * after that (two chunks, then the end) stays unread; Node destroys a stream only once its data
 * is read.
 */
async function leaveUnreadData(session: ClientHttp2Session): Promise<void> {
  const stream = session.request({
    ":method": "POST",
    ":path": `/${Health.typeName}/Check`,
    "content-type": "application/grpc",
    te: "trailers",
  });
  stream.on("error", () => {});
  stream.resume();
  const trailers = new Promise<IncomingHttpHeaders>((resolve) => stream.once("trailers", resolve));
  stream.write(envelope(0, Buffer.from([0x0a, 0xff])));
  expect((await trailers)["grpc-status"]).toBe("3");
  for (let i = 0; i < 2; i++) {
    stream.write(Buffer.alloc(100, 1));
    await new Promise((r) => setTimeout(r, 50));
  }
  const closed = new Promise((resolve) => stream.once("close", resolve));
  stream.end();
  await closed;
  // The server has seen the end too.
  await new Promise((r) => setTimeout(r, 200));
}

describe("stopping", () => {
  // The default REQUEST_TIMEOUT_MS (30 s): only the stop ends these streams.
  let server: TestServer;
  beforeEach(async () => {
    server = await startTestServer();
  });
  afterEach(() => server?.close());

  it(`resets requests half sent with REFUSED_STREAM and stops at once, not after the drain timeout (${DRAIN_TIMEOUT_MS} ms)`, async () => {
    const client = new H2Client(server.grpcUrl);
    const internal = new H2Client(server.internalGrpcUrl);
    try {
      const tokens = await keys(server);
      const answers = [
        client.request(halfSent(LIST_USERS, tokens.owner), 30_000),
        internal.request(halfSent(CREATE_SESSION, tokens.workload), 30_000),
      ];
      // The streams are open and their halves are in (the credential check has passed).
      await new Promise((r) => setTimeout(r, 300));
      const started = performance.now();
      await server.stop();
      const stopMs = performance.now() - started;
      const [pub, int] = await Promise.all(answers);
      expect([pub?.resetCode, int?.resetCode]).toEqual([
        constants.NGHTTP2_REFUSED_STREAM,
        constants.NGHTTP2_REFUSED_STREAM,
      ]);
      expect(stopMs).toBeLessThan(2_000);
    } finally {
      client.close();
      internal.close();
    }
  }, 60_000);

  it("does not wait for a closed stream that Node keeps for request data nobody reads", async () => {
    const session = connect(server.grpcUrl);
    session.on("error", () => {});
    try {
      await leaveUnreadData(session);
      const started = performance.now();
      await server.stop();
      expect(performance.now() - started).toBeLessThan(2_000);
    } finally {
      session.destroy();
    }
  }, 60_000);
});
