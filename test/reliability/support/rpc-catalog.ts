// The gRPC surface the RPC fuzzer covers (issue 17): every method of every service the gRPC
// port serves, public and internal, plus grpc.health.v1.Health. The list is written out so that
// a service added to a module without being added here fails the catalog checks
// (catalog.test.ts against the modules, fuzz-rpc against the running server), as the REST
// endpoint list does. Which URL serves a service is answered here, in one place, because the
// answer is about to change (rpc-setup.ts has the other such question: the workload credential).
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { AnalyticsService, TelemetryService } from "../../../gen/agentplane/analytics/v1/analytics_pb.js";
import { ComputerService, HostService } from "../../../gen/agentplane/computers/v1alpha1/computers_pb.js";
import {
  CreditLimitService,
  OrganizationService,
} from "../../../gen/agentplane/organization/v1alpha1/organization_pb.js";
import { ReadinessService, ReportSubmissionService } from "../../../gen/agentplane/readiness/v1/readiness_pb.js";
import { SessionRunnerService, SessionService } from "../../../gen/agentplane/sessions/v1alpha1/sessions_pb.js";
import { OtlpHttpService } from "../../../gen/agentplane/analytics/v1/otlp_pb.js";
import { Health } from "../../../gen/grpc/health/v1/health_pb.js";
import { LogsService } from "../../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { MetricsService } from "../../../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import { TraceService } from "../../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";

export type Access = "public" | "internal" | "open";

export interface RpcService {
  service: DescService;
  access: Access;
}

/**
 * Every service the gRPC port(s) serve, with the credential each needs; but the web module's
 * WebService (files for browsers, whose valid requests name files of a build the fuzz world has
 * no say in: test/web.test.ts and test/openapi-docs.test.ts cover it) and server reflection
 * (test/grpc-reflection.test.ts), which fuzz-rpc checks are served, not fuzzed.
 */
export const RPC_SERVICES: readonly RpcService[] = [
  { service: AnalyticsService, access: "public" },
  { service: ReadinessService, access: "public" },
  { service: SessionService, access: "public" },
  { service: ComputerService, access: "public" },
  { service: OrganizationService, access: "public" },
  { service: OtlpHttpService, access: "public" },
  { service: LogsService, access: "public" },
  { service: MetricsService, access: "public" },
  { service: TraceService, access: "public" },
  { service: TelemetryService, access: "internal" },
  { service: ReportSubmissionService, access: "internal" },
  { service: SessionRunnerService, access: "internal" },
  { service: HostService, access: "internal" },
  { service: CreditLimitService, access: "internal" },
  { service: Health, access: "open" },
];

export interface RpcMethod {
  service: DescService;
  method: DescMethod;
  access: Access;
}

export const rpcId = (m: { method: DescMethod }) => `${m.method.parent.typeName}/${m.method.name}`;

/** Every fuzzed method, service by service in declaration order. */
export const RPC_METHODS: readonly RpcMethod[] = RPC_SERVICES.flatMap(({ service, access }) =>
  service.methods.map((method) => ({ service, method, access })),
);

/** Where the server under test listens. */
export interface RpcEndpoints {
  /** GRPC_PORT: today every service. */
  grpcUrl: string;
  /** INTERNAL_GRPC_PORT, once the server has it; undefined until then. */
  internalGrpcUrl?: string | undefined;
}

/**
 * The URL that serves a service. Today one port (GRPC_PORT) serves public and internal services;
 * when the internal services move to INTERNAL_GRPC_PORT, the setup passes its URL as
 * `internalGrpcUrl` and internal services are fuzzed there (the health service answers on both;
 * it is fuzzed on the public one).
 */
export function rpcUrlFor(endpoints: RpcEndpoints, service: DescService): string {
  const entry = RPC_SERVICES.find((s) => s.service.typeName === service.typeName);
  if (entry?.access === "internal" && endpoints.internalGrpcUrl) return endpoints.internalGrpcUrl;
  return endpoints.grpcUrl;
}
