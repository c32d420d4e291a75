// A session for tests that need one to post to: created as a runner creates it, over the internal
// gRPC listener with a service account's token.
import { SessionRunnerService } from "../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { bearer, createTestServiceAccount, type TestUser } from "./fixtures.js";
import { grpcClient } from "./grpc.js";
import type { TestServer } from "./server.js";

/** A session of `user`'s on `server`: its ID. */
export async function createTestSession(server: TestServer, user: TestUser): Promise<string> {
  const runner = grpcClient(
    SessionRunnerService,
    server.internalGrpcUrl,
    bearer(await createTestServiceAccount(server.platform.db)),
  );
  try {
    return (await runner.call(SessionRunnerService.method.createSession, { orgId: user.orgId, userId: user.userId }))
      .sessionId;
  } finally {
    runner.close();
  }
}
