import { AnalyticsService, TelemetryService } from "../../gen/agentplane/analytics/v1/analytics_pb.js";
import { OtlpHttpService } from "../../gen/agentplane/analytics/v1/otlp_pb.js";
import { LogsService } from "../../gen/opentelemetry/proto/collector/logs/v1/logs_service_pb.js";
import { MetricsService } from "../../gen/opentelemetry/proto/collector/metrics/v1/metrics_service_pb.js";
import { TraceService } from "../../gen/opentelemetry/proto/collector/trace/v1/trace_service_pb.js";
import { API_KEY_ONLY, API_KEY_OR_WORKLOAD, internal } from "../platform/auth.js";
import type { ServiceModule } from "../platform/module.js";
import { writeAnalyticsDemo } from "./demo.js";
import { createAnalyticsService } from "./read/handlers.js";
import { createTelemetryService } from "./telemetry-handlers.js";
import { createTelemetrySink } from "./ingest/sink.js";
import { OTLP_INGEST_SCOPE } from "./otlp/attribution.js";
import { createOtlpServices } from "./otlp/handlers.js";
import { MAX_DECODED_GRPC_BYTES, MAX_OTLP_BODY_BYTES } from "./otlp/wire.js";
import { startRollupScheduler } from "./rollup/scheduler.js";

/** OTLP/gRPC's Export methods in binary gRPC: undecoded, up to the OTLP/HTTP body limit. */
const otlpGrpcUndecoded = { methods: ["Export"], maxBytes: MAX_OTLP_BODY_BYTES };

export const analyticsModule: ServiceModule = {
  name: "analytics",
  // Its rows belong to an organization, and its demo telemetry is the organization's users'.
  dependsOn: ["organization"],
  // Every process records the platform's own activity (sessions', say) into analytics' tables.
  provides: { telemetrySink: createTelemetrySink },
  services: [
    { service: AnalyticsService, policy: API_KEY_ONLY },
    // A user's own API key may ingest its own events (the hooks path; ingest/access.ts).
    {
      service: TelemetryService,
      policy: internal({ Ingest: "analytics.ingest", Rollup: "analytics.rollup" }, ["Ingest"]),
    },
    // The OTLP receiver (docs/otlp.md): public, so on the public gRPC port (OTLP/gRPC) and routed
    // by the edges (OTLP/HTTP), for a user's API key and for an organization's service account
    // with the ingest scope alike (otlp/attribution.ts says whose data it is).
    // OTLP/gRPC's messages in binary gRPC reach the receiver undecoded (platform/undecoded.ts):
    // it decodes them on its mapping threads within its decode budget, as OTLP/HTTP bodies.
    { service: OtlpHttpService, policy: API_KEY_OR_WORKLOAD(OTLP_INGEST_SCOPE) },
    { service: LogsService, policy: API_KEY_OR_WORKLOAD(OTLP_INGEST_SCOPE), undecoded: otlpGrpcUndecoded },
    { service: MetricsService, policy: API_KEY_OR_WORKLOAD(OTLP_INGEST_SCOPE), undecoded: otlpGrpcUndecoded },
    { service: TraceService, policy: API_KEY_OR_WORKLOAD(OTLP_INGEST_SCOPE), undecoded: otlpGrpcUndecoded },
  ],
  routes: (platform) => {
    // Built once, so the gRPC server and the in-process edge share one cache of /tokens rows.
    // Reads go to DATABASE_READ_URL's replica when set (platform.readDb; else the database).
    const analytics = createAnalyticsService({ db: platform.db, readDb: platform.readDb });
    const telemetry = createTelemetryService({ db: platform.db, logger: platform.logger });
    const otlp = createOtlpServices({ db: platform.db, logger: platform.logger });
    return (router) => {
      router.service(AnalyticsService, analytics);
      router.service(TelemetryService, telemetry);
      router.service(OtlpHttpService, otlp.http);
      // What Connect's handler decodes itself (the OTLP services in Connect, gRPC-Web or gRPC+JSON,
      // which no exporter speaks) has no decode budget: a small message limit bounds it instead.
      const bounded = { readMaxBytes: MAX_DECODED_GRPC_BYTES };
      router.service(LogsService, otlp.logs, bounded);
      router.service(MetricsService, otlp.metrics, bounded);
      router.service(TraceService, otlp.trace, bounded);
    };
  },
  // The daily rollup (and catch-up of missed days at start).
  start: async (platform) => startRollupScheduler(platform.db, platform.logger),
  demo: async (db, orgId, options) => {
    await writeAnalyticsDemo(db, orgId, options);
  },
};
