// A gRPC listener (services/platform/grpc-listener.ts) serving the edge test service alone, open
// to any caller, on a free local port: what the listener's own tests start, with `routes` and
// the options they vary.
import type { ConnectRouter } from "@connectrpc/connect";
import { pino } from "pino";
import { EdgeTestService } from "../../gen/agentplane/edgetest/v1/edgetest_pb.js";
import { OPEN } from "../../services/platform/auth.js";
import {
  type GrpcListener,
  type GrpcListenerOptions,
  startGrpcListener,
} from "../../services/platform/grpc-listener.js";

export function startEdgeTestListener(
  routes: (router: ConnectRouter) => void,
  options: Partial<Pick<GrpcListenerOptions, "fastUnary" | "undecoded">> = {},
): Promise<GrpcListener> {
  return startGrpcListener({
    name: "test",
    routes,
    interceptors: [],
    authenticator: { authenticate: async () => undefined },
    policies: new Map([[EdgeTestService.typeName, OPEN]]),
    services: [EdgeTestService],
    maxMessageBytes: 1 << 20,
    requestTimeoutMs: 30_000,
    trustForwardedFor: false,
    fastUnary: options.fastUnary ?? true,
    undecoded: options.undecoded,
    logger: pino({ level: "silent" }),
    port: 0,
    host: "127.0.0.1",
  });
}
