// TelemetryService (internal: ingest of events, on-demand rollup), built from its dependencies.
// It feeds the ingest and rollup pipelines (ingest/, rollup/); AnalyticsService reads (read/).
import type { ServiceImpl } from "@connectrpc/connect";
import type { Kysely } from "kysely";
import type { TelemetryService } from "../../gen/agentplane/analytics/v1/analytics_pb.js";
import type { Database } from "../database.js";
import { invalidArgument } from "../platform/errors.js";
import type { Logger } from "../platform/logger.js";
import { actingOrgOrAny } from "../platform/tenancy.js";
import { addDays, dayOf } from "./dates.js";
import { requireIngestAccess } from "./ingest/access.js";
import { ingestEvents } from "./ingest/ingest.js";
import { parseRollupRange, rollupRange } from "./rollup/rollup.js";

export interface TelemetryDeps {
  db: Kysely<Database>;
  /** The clock (tests pin it): the rollup covers days before today's UTC date. */
  now?: () => number;
  logger?: Logger;
}

/** At most this many events per Ingest call (the CLI batches far below it). */
export const MAX_INGEST_BATCH = 50_000;

export function createTelemetryService(deps: TelemetryDeps): Partial<ServiceImpl<typeof TelemetryService>> {
  const now = deps.now ?? Date.now;
  return {
    async ingest(req, ctx) {
      if (req.events.length > MAX_INGEST_BATCH)
        throw invalidArgument("events", `at most ${MAX_INGEST_BATCH} events per call, got ${req.events.length}`);
      requireIngestAccess(ctx, req.events);
      return ingestEvents(deps.db, req.events, now());
    },

    async rollup(req, ctx) {
      const orgId = actingOrgOrAny(ctx, req.orgId, "orgId");
      const yesterday = addDays(dayOf(now()), -1);
      const range = parseRollupRange(req.fromDate, req.toDate, yesterday);
      const stats = await rollupRange(
        deps.db,
        { ...range, orgId },
        { through: yesterday, ...(deps.logger ? { logger: deps.logger } : {}) },
      );
      return { days: stats.days, events: stats.events };
    },
  };
}
