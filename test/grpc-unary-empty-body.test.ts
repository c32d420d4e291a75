// A unary gRPC request with no body at all (END_STREAM on its headers) on the fast path
// (services/platform/grpc-unary.ts): its credential is checked first, asynchronously when it is
// not cached, and Node emits the stream's 'end' meanwhile, unasked. The call must still be
// answered (UNIMPLEMENTED, "missing input message", as Connect answers it), not left without an
// answer (found by the RPC fuzz: "no answer within 15000 ms" on a connection's first call).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionRunnerService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { H2Client } from "./reliability/support/raw-h2.js";
import { createTestOrg, createTestServiceAccount } from "./support/fixtures.js";
import { startTestServer, type TestServer } from "./support/server.js";

describe("a unary gRPC request without a body", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it("is answered UNIMPLEMENTED, also when its credential is checked for the first time", async () => {
    const orgId = await createTestOrg(server.database.db);
    const client = new H2Client(server.internalGrpcUrl);
    try {
      // Each token is new to the server: its check goes to the database.
      for (let i = 0; i < 3; i++) {
        const token = await createTestServiceAccount(server.database.db, { orgId });
        const res = await client.request(
          {
            path: `/${SessionRunnerService.typeName}/FinishRun`,
            headers: { "content-type": "application/grpc", te: "trailers", authorization: `Bearer ${token}` },
            body: [],
          },
          5_000,
        );
        expect(res.status).toBe(200);
        expect(res.trailers["grpc-status"] ?? res.headers["grpc-status"]).toBe("12");
        expect(decodeURIComponent(String(res.trailers["grpc-message"] ?? res.headers["grpc-message"]))).toBe(
          "protocol error: missing input message for unary method",
        );
      }
    } finally {
      client.close();
    }
  });
});
