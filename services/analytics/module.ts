import { AnalyticsService, TelemetryService } from "../../gen/agentplane/analytics/v1/analytics_pb.js";
import { API_KEY_ONLY, internal } from "../platform/auth.js";
import type { ServiceModule } from "../platform/module.js";
import { writeAnalyticsDemo } from "./demo.js";
import { createAnalyticsService } from "./read/handlers.js";
import { createTelemetryService } from "./telemetry-handlers.js";
import { createTelemetrySink } from "./ingest/sink.js";
import { startRollupScheduler } from "./rollup/scheduler.js";

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
  ],
  routes: (platform) => {
    // Built once, so the gRPC server and the in-process edge share one cache of /tokens rows.
    // Reads go to DATABASE_READ_URL's replica when set (platform.readDb; else the database).
    const analytics = createAnalyticsService({ db: platform.db, readDb: platform.readDb });
    const telemetry = createTelemetryService({ db: platform.db, logger: platform.logger });
    return (router) => {
      router.service(AnalyticsService, analytics);
      router.service(TelemetryService, telemetry);
    };
  },
  // The daily rollup (and catch-up of missed days at start).
  start: async (platform) => startRollupScheduler(platform.db, platform.logger),
  demo: async (db, orgId, options) => {
    await writeAnalyticsDemo(db, orgId, options);
  },
};
