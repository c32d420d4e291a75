// The Node entry point (the package's default export condition): connect-node's transports over
// HTTP/2, which every protocol needs to reach the server's public port (cleartext HTTP/2 only)
// and which gRPC needs anywhere.
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import type { Transport } from "@connectrpc/connect";
import {
  type AgentplaneClient,
  type AgentplaneClientOptions,
  createAgentplaneClientWith,
  type TransportSettings,
} from "./client.js";

export * from "./exports.js";

/** connect-node's transport for the protocol. */
export function nodeTransport(s: TransportSettings): Transport {
  const common = {
    baseUrl: s.baseUrl,
    httpVersion: "2",
    interceptors: s.interceptors,
    defaultTimeoutMs: s.defaultTimeoutMs,
  } as const;
  switch (s.protocol) {
    case "grpc":
      return createGrpcTransport(common);
    case "grpc-web":
      return createGrpcWebTransport({ ...common, useBinaryFormat: true });
    case "connect":
      return createConnectTransport({ ...common, useBinaryFormat: s.useBinaryFormat });
  }
}

/** Typed clients of the public services, over connect-node's HTTP/2 transports. */
export function createAgentplaneClient(options: AgentplaneClientOptions): AgentplaneClient {
  return createAgentplaneClientWith(nodeTransport, options);
}
