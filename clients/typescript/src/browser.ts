// The browser entry point (the package's `browser` export condition, which bundlers pick):
// connect-web's fetch transports. Browsers speak Connect and gRPC-Web; gRPC needs HTTP/2
// trailers that fetch does not expose, so it is refused here with a clear error.
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import type { Transport } from "@connectrpc/connect";
import {
  type AgentplaneClient,
  type AgentplaneClientOptions,
  createAgentplaneClientWith,
  type TransportSettings,
} from "./client.js";

export * from "./exports.js";

/** connect-web's transport for the protocol. */
export function webTransport(s: TransportSettings): Transport {
  const common = { baseUrl: s.baseUrl, interceptors: s.interceptors, defaultTimeoutMs: s.defaultTimeoutMs };
  switch (s.protocol) {
    case "grpc":
      throw new Error('protocol "grpc" is not available in browsers: use "connect" or "grpc-web"');
    case "grpc-web":
      return createGrpcWebTransport({ ...common, useBinaryFormat: true });
    case "connect":
      return createConnectTransport({ ...common, useBinaryFormat: s.useBinaryFormat });
  }
}

/** Typed clients of the public services, over fetch (Connect or gRPC-Web). */
export function createAgentplaneClient(options: AgentplaneClientOptions): AgentplaneClient {
  return createAgentplaneClientWith(webTransport, options);
}
