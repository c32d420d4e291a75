// What both entry points export besides createAgentplaneClient: the options and client types,
// the retry rule, the service descriptors, and the generated messages of each area (for their
// types: `sessions.Session`, `sessions.ListSessionsRequest`, ...).
export {
  type AgentplaneClient,
  type AgentplaneClientOptions,
  bearerInterceptor,
  DEFAULT_TIMEOUT_MS,
  PROTOCOLS,
  type Protocol,
  type TransportSettings,
} from "./client.js";
export {
  backoffMs,
  connectionLossInterceptor,
  DEFAULT_RETRY,
  isRetryable,
  isSafeToRepeat,
  neverReachedServer,
  type RetryOptions,
  retryInterceptor,
} from "./retry.js";
export { PUBLIC_SERVICES, type PublicServices } from "./services.js";
export { Code, ConnectError } from "@connectrpc/connect";
export * as analytics from "../gen/agentplane/analytics/v1/analytics_pb.js";
export * as computers from "../gen/agentplane/computers/v1alpha1/computers_pb.js";
export * as organization from "../gen/agentplane/organization/v1alpha1/organization_pb.js";
export * as readiness from "../gen/agentplane/readiness/v1/readiness_pb.js";
export * as sessions from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
