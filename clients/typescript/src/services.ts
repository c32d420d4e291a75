// The public services a client reaches: the five areas Envoy's transcoder serves (envoy.yaml)
// and the server's public gRPC port answers. The internal services (telemetry ingest, report
// submission, session runners, hosts, credit balances) take service-account tokens on another
// port, and the OTLP receivers (OtlpHttpService and the OpenTelemetry collector services) take
// OTLP exporters' raw bodies: neither belongs in this client. test/services.test.ts checks this
// list against the server's modules.
import { AnalyticsService } from "../gen/agentplane/analytics/v1/analytics_pb.js";
import { ComputerService } from "../gen/agentplane/computers/v1alpha1/computers_pb.js";
import { OrganizationService } from "../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { ReadinessService } from "../gen/agentplane/readiness/v1/readiness_pb.js";
import { SessionService } from "../gen/agentplane/sessions/v1alpha1/sessions_pb.js";

/** Each public service under the name the client gives it. */
export const PUBLIC_SERVICES = {
  analytics: AnalyticsService,
  readiness: ReadinessService,
  sessions: SessionService,
  computers: ComputerService,
  organization: OrganizationService,
} as const;

export type PublicServices = typeof PUBLIC_SERVICES;
