// The SessionRunnerService client every runner uses, in process (the demo runner) or out of it
// (`agentplane runner`): gRPC to the internal port, its workload credential on every call.
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SessionRunnerService } from "../../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";

export function runnerClient(baseUrl: string, token: string): Client<typeof SessionRunnerService> {
  return createClient(
    SessionRunnerService,
    createGrpcTransport({
      baseUrl,
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${token}`);
          return next(req);
        },
      ],
    }),
  );
}
